package main

// report.md: the machine, how to read the figures, a summary of govram's
// ratios, then per suite its plots, a table per group, the memory each
// implementation took, and every case that did not run.

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// index finds results by group, operation, size and implementation.
type index struct {
	res   *Results
	cases map[string]*CaseResult
}

func newIndex(res *Results) *index {
	ix := &index{res: res, cases: map[string]*CaseResult{}}
	for i := range res.Cases {
		c := &res.Cases[i]
		ix.cases[ixKey(c.Group, c.Op, c.Size, c.Impl)] = c
	}
	return ix
}

func ixKey(group, op string, size int, impl string) string {
	return fmt.Sprintf("%s\x00%s\x00%d\x00%s", group, op, size, impl)
}

func (ix *index) get(group, op string, size int, impl string) *CaseResult {
	return ix.cases[ixKey(group, op, size, impl)]
}

// ratio returns c's time over the baseline's for the same case, or NaN.
func (ix *index) ratio(c *CaseResult, baseline string) float64 {
	b := ix.get(c.Group, c.Op, c.Size, baseline)
	if c.Status != StatusOK || b == nil || b.Status != StatusOK || b.Median <= 0 {
		return math.NaN()
	}
	return c.Median / b.Median
}

// groupView is one group name of a suite across its sizes.
type groupView struct {
	name      string
	baselines []string
	impls     []ImplDesc
	sizes     []int
	ops       []string
	hitRate   bool // a column of govram's hot tier hit rate (-dist)
}

// groupViews collects the groups of a suite, in the order they ran.
func groupViews(res *Results, suite string) []*groupView {
	var vs []*groupView
	byName := map[string]*groupView{}
	for _, g := range res.Groups {
		if g.Suite != suite {
			continue
		}
		v := byName[g.Name]
		if v == nil {
			v = &groupView{name: g.Name, baselines: g.Baselines}
			byName[g.Name] = v
			vs = append(vs, v)
		}
		v.hitRate = v.hitRate || g.HitRate
		if !slices.Contains(v.sizes, g.Size) {
			v.sizes = append(v.sizes, g.Size)
		}
		for _, im := range g.Impls {
			if !slices.ContainsFunc(v.impls, func(d ImplDesc) bool { return d.Name == im.Name }) {
				v.impls = append(v.impls, im)
			}
		}
	}
	for _, c := range res.Cases {
		v := byName[c.Group]
		if v == nil || c.Suite != suite {
			continue
		}
		if !slices.Contains(v.ops, c.Op) {
			v.ops = append(v.ops, c.Op)
		}
		if !slices.ContainsFunc(v.impls, func(d ImplDesc) bool { return d.Name == c.Impl }) {
			v.impls = append(v.impls, ImplDesc{Name: c.Impl, Role: c.Role})
		}
	}
	for _, v := range vs {
		slices.Sort(v.sizes)
		// Operations in the order the suite documents them.
		for _, s := range res.Suites {
			if s.Name != suite {
				continue
			}
			// An operation under a -dist distribution (get@zipf1.1)
			// follows its uniform one.
			pos := func(op string) int {
				i := slices.IndexFunc(s.Ops, func(d OpDoc) bool { return d.Op == distBase(op) })
				if i < 0 {
					return len(s.Ops)
				}
				return i
			}
			slices.SortStableFunc(v.ops, func(a, b string) int { return cmp.Compare(pos(a), pos(b)) })
		}
	}
	return vs
}

// writeReport writes report.md and the plots into dir.
func writeReport(dir, format string, res *Results) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	plots, plotErr := writePlots(dir, format, res)
	var b strings.Builder
	reportMarkdown(&b, res, plots)
	if plotErr != nil {
		fmt.Fprintf(&b, "\n## Plot errors\n\n%s\n", mdEscape(plotErr.Error()))
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return plotErr
}

func reportMarkdown(b *strings.Builder, res *Results, plots map[string]string) {
	ix := newIndex(res)
	ok, skipped, failed := tally(res)
	fmt.Fprintf(b, "# govram benchmarks\n\n")
	fmt.Fprintf(b, "Run on %s, %s; %d cases: %d ok, %d skipped, %d failed.  \n",
		res.Started.UTC().Format("2006-01-02 15:04 MST"), res.Finished.Sub(res.Started).Round(time.Second),
		len(res.Cases), ok, skipped, failed)
	fmt.Fprintf(b, "Command: `cd benchmarks && go run .%s`  \n", commandArgs(res.Command))
	hc := ""
	if res.Config.HostCache != "" {
		hc = ", hot tier of govram's Map and BTree: " + res.Config.HostCache
	}
	fmt.Fprintf(b, "Sizes %s, -time %s, -count %d%s%s%s.\n\n", sizesText(res.Config.Sizes), res.Config.Time,
		res.Config.Count, map[bool]string{true: ", -short", false: ""}[res.Config.Short], strings.Replace(distText(res.Config.Dists), " ", ", ", 1), hc)
	if res.Partial {
		b.WriteString("> **Partial results**: the run stopped before it finished (the process ended early); " +
			"these are the cases measured until then.\n\n")
	}
	if res.Device.Backend == "host" || strings.Contains(strings.ToLower(res.Device.Name+res.Device.Driver), "llvmpipe") ||
		res.Device.Type == "cpu" {
		fmt.Fprintf(b, "> These figures were not measured on a GPU (%s backend, %s): they show that the code "+
			"paths work, not what VRAM costs.\n\n", res.Device.Backend, res.Device.Name)
	}

	writeMachine(b, res)
	b.WriteString("## How to read the tables\n\n")
	b.WriteString("- Each cell is the **median time of one operation** over the runs of the case (`-count`), " +
		"with **±spread**: the largest distance of a run from the median, in percent of it.\n")
	b.WriteString("- **×r** is the ratio to the baseline named in the table (the first baseline): the " +
		"implementation's time divided by the baseline's, for the same operation and size. Below 1 it is " +
		"faster than the baseline (×0.5: half the time); above 1 slower (×3: three times the time).\n")
	b.WriteString("- **naive** is the same data in mapped device memory read and written with plain Go loads " +
		"and stores: what mapping VRAM without govram gives. On the host backend it is ordinary memory.\n")
	b.WriteString("- Plots: time per operation against size (log scales; bars from the fastest to the " +
		"slowest run), and each implementation's ratio to the baseline.\n\n")

	writeSummary(b, res, ix)
	for _, s := range res.Suites {
		writeSuite(b, res, ix, s, plots)
	}
	writeProblems(b, res)
	if len(res.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range res.Notes {
			fmt.Fprintf(b, "- %s\n", mdEscape(n))
		}
		b.WriteString("\n")
	}
}

func writeMachine(b *strings.Builder, res *Results) {
	m, d := res.Machine, res.Device
	b.WriteString("## Machine\n\n| | |\n| --- | --- |\n")
	fmt.Fprintf(b, "| CPU | %s (%d logical cores, GOMAXPROCS %d) |\n", mdEscape(m.CPU), m.Cores, m.GOMAXPROCS)
	var flags []string
	for _, f := range interestingFlags {
		if slices.Contains(m.Flags, f) {
			flags = append(flags, f)
		}
	}
	fmt.Fprintf(b, "| CPU features | x/sys/cpu: %s; /proc/cpuinfo: %s |\n", strings.Join(m.Features, " "),
		cmpOr(strings.Join(flags, " "), "–"))
	if m.MemTotal > 0 {
		fmt.Fprintf(b, "| memory | %s |\n", fmtBytes(float64(m.MemTotal)))
	}
	fmt.Fprintf(b, "| system | %s, kernel %s, %s |\n", m.OSArch, cmpOr(m.Kernel, "?"), m.Go)
	for _, g := range m.GPUs {
		fmt.Fprintf(b, "| GPU (nvidia-smi) | %s |\n", mdEscape(g))
	}
	fmt.Fprintf(b, "| device | %s backend: %s (%s)", d.Backend, mdEscape(d.Name), d.Type)
	if d.Driver != "" {
		fmt.Fprintf(b, ", driver %s", mdEscape(d.Driver))
	}
	if d.APIVersion != "" {
		fmt.Fprintf(b, ", Vulkan %s", d.APIVersion)
	}
	b.WriteString(" |\n")
	if d.TransferQueue != "" {
		fmt.Fprintf(b, "| transfers | %s |\n", mdEscape(d.TransferQueue))
	}
	if d.Fallback != "" {
		fmt.Fprintf(b, "| fallback | %s |\n", mdEscape(d.Fallback))
	}
	if !d.Kernels {
		b.WriteString("| kernels | off (VMEM_KERNELS=0) |\n")
	}
	b.WriteString("\n| tier | capacity | budget | largest block |\n| --- | --- | --- | --- |\n")
	for _, t := range d.Tiers {
		if !t.Available {
			fmt.Fprintf(b, "| %s | not available | | |\n", t.Tier)
			continue
		}
		budget := "–"
		if t.Budget > 0 {
			budget = fmtBytes(float64(t.Budget))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", t.Tier, fmtBytes(float64(t.Capacity)), budget, fmtBytes(float64(t.MaxBlock)))
	}
	b.WriteString("\n")
}

// writeSummary gives govram's ratio to the primary baseline for every
// case, one row per group, operation and govram variant.
func writeSummary(b *strings.Builder, res *Results, ix *index) {
	var sizes []int
	for _, c := range res.Cases {
		if c.Size > 0 && !slices.Contains(sizes, c.Size) {
			sizes = append(sizes, c.Size)
		}
	}
	slices.Sort(sizes)
	var rows []string
	for _, s := range res.Suites {
		for _, v := range groupViews(res, s.Name) {
			if len(v.baselines) == 0 {
				continue
			}
			for _, op := range v.ops {
				for _, im := range v.impls {
					if im.Role != RoleGovram {
						continue
					}
					var cells []string
					any := false
					for _, n := range sizes {
						cell := ""
						if c := ix.get(v.name, op, n, im.Name); c != nil {
							if r := ix.ratio(c, v.baselines[0]); !math.IsNaN(r) {
								cell, any = fmtRatio(r), true
							}
						}
						cells = append(cells, cell)
					}
					if any {
						rows = append(rows, fmt.Sprintf("| %s %s | %s | %s | %s |", v.name, op, im.Name,
							v.baselines[0], strings.Join(cells, " | ")))
					}
				}
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("## Summary: govram's time over the baseline's\n\n")
	b.WriteString("| case | govram | baseline |")
	for _, n := range sizes {
		fmt.Fprintf(b, " %s |", sizeName(n))
	}
	b.WriteString("\n| --- | --- | --- |" + strings.Repeat(" --- |", len(sizes)) + "\n")
	b.WriteString(strings.Join(rows, "\n") + "\n\n")
}

func writeSuite(b *strings.Builder, res *Results, ix *index, s SuiteDoc, plots map[string]string) {
	fmt.Fprintf(b, "## Suite %s\n\n%s\n\n", s.Name, s.About)
	if len(s.Ops) > 0 {
		b.WriteString("| operation | what it measures |\n| --- | --- |\n")
		for _, o := range s.Ops {
			fmt.Fprintf(b, "| %s | %s |\n", o.Op, mdEscape(o.What))
		}
		b.WriteString("\n")
	}
	for _, key := range []string{s.Name, s.Name + "-ratio"} {
		if f, ok := plots[key]; ok {
			fmt.Fprintf(b, "![%s](%s)\n\n", key, f)
		}
	}
	if s.Name == "capacity" {
		writeCapacity(b, res)
		return
	}
	for _, v := range groupViews(res, s.Name) {
		writeGroup(b, ix, v)
	}
	writeMemory(b, res, s.Name)
}

func writeGroup(b *strings.Builder, ix *index, v *groupView) {
	if len(v.ops) == 0 {
		return
	}
	base := ""
	if len(v.baselines) > 0 {
		base = v.baselines[0]
	}
	fmt.Fprintf(b, "### %s", v.name)
	if base != "" {
		fmt.Fprintf(b, " (ratios against %s)", base)
	}
	b.WriteString("\n\n| operation | size |")
	for _, im := range v.impls {
		fmt.Fprintf(b, " %s |", mdEscape(im.Name))
	}
	// A second baseline gets a column of govram's ratio to it.
	extra := []string{}
	if len(v.baselines) > 1 {
		extra = v.baselines[1:]
	}
	for _, e := range extra {
		fmt.Fprintf(b, " govram vs %s |", mdEscape(e))
	}
	ncol := len(v.impls) + len(extra)
	if v.hitRate {
		b.WriteString(" govram hit% |")
		ncol++
	}
	b.WriteString("\n| --- | --- |" + strings.Repeat(" --- |", ncol) + "\n")
	var details []*CaseResult
	for _, op := range v.ops {
		for _, n := range v.sizes {
			row := false
			var cells []string
			for _, im := range v.impls {
				c := ix.get(v.name, op, n, im.Name)
				if c == nil {
					cells = append(cells, "")
					continue
				}
				row = true
				details = append(details, c)
				cells = append(cells, cellText(ix, c, base))
			}
			if !row {
				continue
			}
			for _, e := range extra {
				cell := ""
				if c := ix.get(v.name, op, n, "govram"); c != nil {
					cell = fmtRatio(ix.ratio(c, e))
				}
				cells = append(cells, cell)
			}
			if v.hitRate {
				cells = append(cells, hitCell(ix.get(v.name, op, n, "govram")))
			}
			fmt.Fprintf(b, "| %s | %s | %s |\n", op, sizeName(n), strings.Join(cells, " | "))
		}
	}
	b.WriteString("\n")
	writeDetails(b, details)
}

// hitCell is the hot tier's hit rate over c's timed loops (metric hit%),
// empty where c measured none.
func hitCell(c *CaseResult) string {
	if c == nil || c.Status != StatusOK {
		return ""
	}
	h, ok := c.Metrics["hit%"]
	if !ok {
		return ""
	}
	return fmt.Sprintf("%.1f%%", h)
}

// cellText is a table cell: median ±spread (×ratio).
func cellText(ix *index, c *CaseResult, base string) string {
	switch c.Status {
	case StatusSkipped:
		return "skipped"
	case StatusFailed:
		return "**failed**"
	}
	s := fmtNs(c.Median)
	if c.Spread >= 0.5 {
		s += fmt.Sprintf(" ±%.0f%%", c.Spread)
	}
	if base != "" && c.Impl != base {
		if r := ix.ratio(c, base); !math.IsNaN(r) {
			s += " (" + fmtRatio(r) + ")"
		}
	}
	return s
}

// writeDetails lists every run of a group's cases and their metrics,
// folded away.
func writeDetails(b *strings.Builder, cs []*CaseResult) {
	var rows []string
	for _, c := range cs {
		if c.Status != StatusOK {
			continue
		}
		var ms []string
		keys := make([]string, 0, len(c.Metrics))
		for k := range c.Metrics {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := c.Metrics[k]
			if (k == "B/op" || k == "allocs/op") && v == 0 {
				continue
			}
			ms = append(ms, fmt.Sprintf("%.4g %s", v, k))
		}
		runs := make([]string, len(c.Samples))
		for i, s := range c.Samples {
			runs[i] = fmtNs(s)
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %d × %s | %s | %s |", c.Name(), mdEscape(c.Impl),
			len(c.Samples), sizeName(c.N), strings.Join(runs, ", "), strings.Join(ms, ", ")))
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("<details><summary>runs and metrics</summary>\n\n")
	b.WriteString("| case | implementation | runs × b.N | ns/op of each run | metrics (medians) |\n| --- | --- | --- | --- | --- |\n")
	b.WriteString(strings.Join(rows, "\n") + "\n\n</details>\n\n")
}

func writeMemory(b *strings.Builder, res *Results, suite string) {
	var rows []string
	per := func(v int64, n int) string {
		if n == 0 {
			return ""
		}
		f := float64(v) / float64(n)
		if math.Abs(f) < 0.05 {
			return "0"
		}
		return fmt.Sprintf("%.1f B", f)
	}
	for _, m := range res.Memory {
		if m.Suite != suite {
			continue
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |", m.Group, sizeName(m.Size),
			mdEscape(m.Impl), per(m.Heap, m.Entries), per(m.RSS, m.Entries), per(m.Device, m.Entries),
			per(m.HostTier, m.Entries), fmtNs(m.SetupNs)))
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("Memory after building, per entry (differences measured after a GC before and after; " +
		"RSS includes device memory where the device is host memory):\n\n")
	b.WriteString("| group | size | implementation | Go heap | RSS | device | host tier | setup time |\n" +
		"| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	b.WriteString(strings.Join(rows, "\n") + "\n\n")
}

func writeCapacity(b *strings.Builder, res *Results) {
	var rows []string
	for _, c := range res.Cases {
		if c.Suite != "capacity" {
			continue
		}
		if c.Status != StatusOK {
			rows = append(rows, fmt.Sprintf("| %s | %s | | | | %s |", c.Op, c.Status, mdEscape(firstLine(c.Note))))
			continue
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %.0f | %s | %.3g GiB/s | %s |", c.Op, fmtBytes(c.Metrics["GiB"]*(1<<30)),
			c.Metrics["blocks"], fmtNs(c.Median), c.Metrics["GiB/s"], mdEscape(c.Note)))
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("| tier | stored | blocks | time | rate | stopped because |\n| --- | --- | --- | --- | --- | --- |\n")
	b.WriteString(strings.Join(rows, "\n") + "\n\n")
}

// writeProblems lists the cases that did not run.
func writeProblems(b *strings.Builder, res *Results) {
	var failed, skipped, noted []string
	for _, c := range res.Cases {
		line := fmt.Sprintf("- `%s` %s: %s", c.Name(), mdEscape(c.Impl), mdEscape(firstLine(c.Note)))
		switch {
		case c.Status == StatusFailed:
			failed = append(failed, line)
		case c.Status == StatusSkipped:
			skipped = append(skipped, line)
		case c.Note != "" && c.Suite != "capacity":
			noted = append(noted, line)
		}
	}
	if len(noted) > 0 {
		b.WriteString("## Notes on cases\n\n" + strings.Join(noted, "\n") + "\n\n")
	}
	if len(failed) > 0 {
		b.WriteString("## Failed cases\n\n" + strings.Join(failed, "\n") + "\n\n")
	}
	if len(skipped) > 0 {
		b.WriteString("## Skipped cases\n\n" + strings.Join(skipped, "\n") + "\n\n")
	}
}

// mdEscape keeps a text on one table row.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	return s
}

// commandArgs is the command line's flags as the report quotes them after
// `go run .`: res.Command without the program's name, each flag preceded
// by a space.
func commandArgs(command []string) string {
	if len(command) <= 1 {
		return ""
	}
	return " " + strings.Join(command[1:], " ")
}
