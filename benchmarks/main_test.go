package main

// The CI smoke test: the -short run, end to end, on every backend present,
// into a temporary folder; then the report, the plots and results.json are
// checked for the expected cases and sane figures.

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govram/govram/collections"
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// smokeSize is the containers' size in the smoke test: -short's, or less
// where the containers check their invariants after every operation.
var smokeSize = map[bool]int{false: 10_000, true: 1_000}[buildconst.Invariants]

func TestShortRun(t *testing.T) {
	for _, b := range vmemtest.Backends() {
		t.Run(string(b), func(t *testing.T) {
			if b == vmem.BackendVulkan {
				d, err := vmem.Open(vmem.Options{Backend: b})
				if err != nil {
					if vmemtest.RequireVulkan() {
						t.Fatalf("no Vulkan device: %v", err)
					}
					t.Skipf("no Vulkan device: %v", err)
				}
				d.Close()
			}
			// run sets VMEM_BACKEND to its -backend; restore it after.
			t.Setenv("VMEM_BACKEND", os.Getenv("VMEM_BACKEND"))
			dir := t.TempDir()
			args := []string{"-short", "-backend", string(b), "-out", dir, "-sizes", sizeName(smokeSize)}
			if buildconst.Race || buildconst.Invariants {
				args = append(args, "-time", "1ms")
			}
			var out, errs bytes.Buffer
			start := time.Now()
			code := run(args, &out, &errs)
			t.Logf("%s run: %v, exit %d", b, time.Since(start).Round(time.Millisecond), code)
			if code != 0 {
				t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
			}
			res := checkResults(t, dir, b)
			checkReport(t, dir, "svg", res)

			// The report can be drawn again from results.json alone, as PNG
			// too (rasterizing is slow under the race detector: once).
			format := "svg"
			if b == vmem.BackendHost && !buildconst.Race {
				format = "png"
			}
			again := t.TempDir()
			out.Reset()
			errs.Reset()
			if code := run([]string{"-from", filepath.Join(dir, "results.json"), "-out", again, "-format", format}, &out, &errs); code != 0 {
				t.Fatalf("-from: exit status %d\n%s", code, errs.String())
			}
			checkReport(t, again, format, res)
		})
	}
}

// checkResults reads results.json and checks every case: no failures, the
// skips that are expected only, and finite positive figures.
func checkResults(t *testing.T, dir string, b vmem.Backend) *Results {
	t.Helper()
	res, err := readJSON(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Device.Backend != string(b) {
		t.Errorf("device backend %q, want %q", res.Device.Backend, b)
	}
	if res.Machine.CPU == "" || res.Machine.Cores < 1 {
		t.Errorf("machine not described: %+v", res.Machine)
	}
	want := map[string]bool{}
	for _, s := range suiteNames() {
		want[s] = false
	}
	for _, c := range res.Cases {
		want[c.Suite] = true
		switch c.Status {
		case StatusFailed:
			t.Errorf("%s %s failed: %s", c.Name(), c.Impl, c.Note)
		case StatusSkipped:
			expected := b == vmem.BackendHost && (c.Suite == "capacity" || c.Impl == "govram/cpu")
			if !expected {
				t.Errorf("%s %s skipped: %s", c.Name(), c.Impl, c.Note)
			}
		case StatusOK:
			for _, v := range append([]float64{c.Median, c.Min, c.Max}, c.Samples...) {
				if !(v > 0) || math.IsInf(v, 0) {
					t.Errorf("%s %s: time %v ns/op", c.Name(), c.Impl, v)
				}
			}
			if c.Min > c.Median || c.Median > c.Max {
				t.Errorf("%s %s: min %v, median %v, max %v out of order", c.Name(), c.Impl, c.Min, c.Median, c.Max)
			}
			if c.Op != "build" && c.Suite != "capacity" && len(c.Samples) != shortCount {
				t.Errorf("%s %s: %d runs, want %d", c.Name(), c.Impl, len(c.Samples), shortCount)
			}
			for k, v := range c.Metrics {
				if math.IsNaN(v) || math.IsInf(v, 0) || (v < 0 && k != "gc-cpu-%") {
					t.Errorf("%s %s: metric %s = %v", c.Name(), c.Impl, k, v)
				}
			}
			if c.Suite == "capacity" && !(c.Metrics["GiB"] > 0) {
				t.Errorf("capacity %s: %v GiB", c.Op, c.Metrics["GiB"])
			}
		default:
			t.Errorf("%s %s: status %q", c.Name(), c.Impl, c.Status)
		}
	}
	for s, seen := range want {
		if !seen {
			t.Errorf("suite %s has no cases", s)
		}
	}
	// Every container's memory was measured.
	for _, g := range []string{"map", "map-string", "btree", "ring", "slice", "gc-map", "gc-map-string", "gc-btree", "gc-slice"} {
		found := false
		for _, m := range res.Memory {
			found = found || (m.Group == g && m.Entries > 0)
		}
		if !found {
			t.Errorf("no memory figures for %s", g)
		}
	}
	// The cases of each suite, by the names the report uses.
	sz := sizeName(smokeSize)
	for _, name := range []string{
		"slice/get/" + sz, "slice/set/" + sz, "slice/append/" + sz, "slice/copy-in/" + sz, "slice/copy-out/" + sz, "slice/scan/" + sz,
		"map/get-hit/" + sz, "map/get-miss/" + sz, "map/put/" + sz, "map/delete/" + sz, "map/build/" + sz,
		"map-string/get-hit/" + sz, "map-string/put/" + sz, "map-string/delete/" + sz,
		"btree/get/" + sz, "btree/insert/" + sz, "btree/range/" + sz, "btree/scan/" + sz,
		"ring/push-pop/" + sz, "ring/batch/" + sz, "ring/spsc/" + sz,
		"gpu/sort/" + sz, "gpu/gather/" + sz, "gpu/sum/" + sz,
		"gc-map/full-gc/" + sz, "gc-map-string/churn/" + sz,
		"capacity/mapped",
	} {
		impls := map[string]bool{}
		for _, c := range res.Cases {
			if c.Name() == name {
				impls[c.Impl] = true
			}
		}
		if len(impls) == 0 {
			t.Errorf("no case %s", name)
		}
	}
	for _, c := range []struct{ name, impl string }{
		{"slice/get/" + sz, "naive"}, {"slice/get/" + sz, "[]uint64"}, {"map/get-hit/" + sz, "go map"},
		{"map/get-hit/" + sz, "naive"}, {"map-string/get-hit/" + sz, "fastcache"}, {"btree/get/" + sz, "google/btree"},
		{"ring/push-pop/" + sz, "chan"}, {"gpu/sort/" + sz, "[]uint64"},
	} {
		found := false
		for _, r := range res.Cases {
			found = found || (r.Name() == c.name && r.Impl == c.impl)
		}
		if !found {
			t.Errorf("no case %s for %s", c.name, c.impl)
		}
	}
	return res
}

// checkReport checks report.md names every case and its plots exist.
func checkReport(t *testing.T, dir, format string, res *Results) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := string(data)
	for _, want := range []string{"## Machine", "## How to read", "## Summary", res.Machine.CPU} {
		if !strings.Contains(report, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(report, "Plot errors") {
		t.Errorf("report.md has plot errors")
	}
	for _, s := range res.Suites {
		if !strings.Contains(report, "## Suite "+s.Name) {
			t.Errorf("report.md lacks suite %s", s.Name)
		}
	}
	for _, c := range res.Cases {
		if c.Status == StatusOK && c.Suite != "capacity" && !strings.Contains(report, "| "+c.Name()+" | "+mdEscape(c.Impl)+" |") {
			t.Errorf("report.md lacks %s %s", c.Name(), c.Impl)
		}
	}
	plots := []string{"slice", "slice-ratio", "map", "map-ratio", "btree", "btree-ratio", "ring", "ring-ratio",
		"gpu", "gpu-ratio", "gc", "gc-ratio"}
	if res.Device.Backend != "host" {
		plots = append(plots, "capacity")
	}
	for _, p := range plots {
		name := p + "." + format
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("plot %s: %v", name, err)
			continue
		}
		switch format {
		case "svg":
			if !bytes.Contains(data[:min(len(data), 512)], []byte("<svg")) || !bytes.HasSuffix(bytes.TrimSpace(data), []byte("</svg>")) {
				t.Errorf("%s is not an SVG document", name)
			}
		case "png":
			if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
				t.Errorf("%s is not a PNG image", name)
			}
		}
		if !strings.Contains(report, "]("+name+")") {
			t.Errorf("report.md does not show %s", name)
		}
	}
}

// TestReportSeveralSizes draws a report from made-up results with two
// sizes, failures and skips, without running anything.
func TestReportSeveralSizes(t *testing.T) {
	res := &Results{Version: resultsVersion, Started: time.Now(), Finished: time.Now(),
		Command: []string{"benchmarks"}, Machine: Machine{CPU: "test cpu", Cores: 1},
		Device: Device{Backend: "host", Name: "host memory", Kernels: true},
		Suites: []SuiteDoc{{Name: "map", About: "about", Ops: []OpDoc{{"get-hit", "a lookup"}, {"put", "a store"}}}}}
	for _, n := range []int{1000, 1000000} {
		res.Groups = append(res.Groups, GroupDesc{Suite: "map", Name: "map", Size: n, Baselines: []string{"go map"},
			Impls: []ImplDesc{{"govram", RoleGovram}, {"naive", RoleNaive}, {"go map", RoleBaseline}}})
		for i, im := range []string{"govram", "naive", "go map"} {
			for _, op := range []string{"put", "get-hit"} {
				ns := float64((i+1)*10) * math.Log10(float64(n))
				c := CaseResult{Suite: "map", Group: "map", Op: op, Size: n, Impl: im, Status: StatusOK,
					N: 100, Samples: []float64{ns * 0.9, ns, ns * 1.2}, Median: ns, Min: ns * 0.9, Max: ns * 1.2, Spread: 20}
				if im == "naive" && op == "put" && n == 1000 {
					c = CaseResult{Suite: "map", Group: "map", Op: op, Size: n, Impl: im, Status: StatusFailed, Note: "boom\nstack"}
				}
				if im == "govram" && op == "put" && n == 1000000 {
					c = CaseResult{Suite: "map", Group: "map", Op: op, Size: n, Impl: im, Status: StatusSkipped, Note: "too big"}
				}
				res.Cases = append(res.Cases, c)
			}
		}
		res.Memory = append(res.Memory, MemoryResult{Suite: "map", Group: "map", Size: n, Impl: "go map", Entries: n, Heap: int64(40 * n)})
	}
	dir := t.TempDir()
	if err := writeJSON(filepath.Join(dir, "results.json"), res); err != nil {
		t.Fatal(err)
	}
	back, err := readJSON(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeReport(dir, "svg", back); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := string(data)
	for _, want := range []string{
		"| get-hit | 1e3 | 30.0 ns ±20% (×0.33) | 60.0 ns ±20% (×0.67) | 90.0 ns ±20% |",
		"| get-hit | 1e6 |", "**failed**", "skipped", "## Failed cases", "`map/put/1e3` naive: boom",
		"## Skipped cases", "too big", "40.0 B", "![map](map.svg)", "![map-ratio](map-ratio.svg)",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q\n%s", want, report)
		}
	}
	// Operations follow the suite's order, not the order they ran.
	if strings.Index(report, "| get-hit | 1e3") > strings.Index(report, "| put | 1e3") {
		t.Errorf("operations out of the suite's order")
	}
	var raw map[string]any
	if err := json.Unmarshal(mustRead(t, filepath.Join(dir, "results.json")), &raw); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParse(t *testing.T) {
	sizes, err := parseSizes("1e6, 2.5e3,64k,1M,100")
	if err != nil || len(sizes) != 5 || sizes[0] != 1e6 || sizes[1] != 2500 || sizes[2] != 64000 || sizes[3] != 1e6 || sizes[4] != 100 {
		t.Errorf("parseSizes: %v, %v", sizes, err)
	}
	for _, bad := range []string{"", "0", "1.5", "x", "-3"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q) accepted", bad)
		}
	}
	for s, want := range map[string]uint64{"8GiB": 8 << 30, "64MiB": 64 << 20, "1e9": 1e9, "4096": 4096, "2G": 2e9} {
		if got, err := parseBytes(s); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	if d, n, err := parseTime("250ms"); err != nil || d != 250*time.Millisecond || n != 0 {
		t.Errorf("parseTime(250ms) = %v, %d, %v", d, n, err)
	}
	if d, n, err := parseTime("1000x"); err != nil || d != 0 || n != 1000 {
		t.Errorf("parseTime(1000x) = %v, %d, %v", d, n, err)
	}
	for n, want := range map[int]string{1000: "1e3", 1000000: "1e6", 2500: "2500", 5000000: "5e6", 12: "12", 65536: "65536"} {
		if got := sizeName(n); got != want {
			t.Errorf("sizeName(%d) = %q, want %q", n, got, want)
		}
	}
	if _, err := parseFlags([]string{"-suites", "map,nope"}, &bytes.Buffer{}); err == nil {
		t.Error("an unknown suite was accepted")
	}
	c, err := parseFlags([]string{"-short", "-count", "5"}, &bytes.Buffer{})
	if err != nil || c.count != 5 || c.target != 5*time.Millisecond || len(c.sizes) != 1 || c.sizes[0] != 1e4 {
		t.Errorf("-short -count 5: %+v, %v", c, err)
	}
}

// TestNaiveMap checks the naive path's hash table against a Go map.
func TestNaiveMap(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		const n = 3000
		m, err := newNaiveMap(d, n, func(put func(k, v uint64)) {
			for i := range n / 2 {
				put(key(i), uint64(i))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer m.close(d)
		model := map[uint64]uint64{}
		for i := range n / 2 {
			model[key(i)] = uint64(i)
		}
		r := rng(1)
		for step := range 20000 {
			k := key(r.IntN(n))
			switch r.IntN(3) {
			case 0:
				m.put(k, uint64(step))
				model[k] = uint64(step)
			case 1:
				_, want := model[k]
				if got := m.del(k); got != want {
					t.Fatalf("step %d: del = %v, want %v", step, got, want)
				}
				delete(model, k)
			}
			if m.n != len(model) {
				t.Fatalf("step %d: %d entries, want %d", step, m.n, len(model))
			}
		}
		for i := range n {
			k := key(i)
			v, ok := m.get(k)
			wv, wok := model[k]
			if ok != wok || v != wv {
				t.Fatalf("get(%x) = %d, %v; want %d, %v", k, v, ok, wv, wok)
			}
		}
	})
}

// TestRunnerFailures shows a failing, panicking or out-of-memory case is
// recorded and the run goes on, and that the deadline skips what is left.
func TestRunnerFailures(t *testing.T) {
	d := vmemtest.Open(t, vmem.BackendHost, vmem.Options{})
	e := &env{dev: d, cfg: &config{}, hostAvail: meminfo("MemAvailable")}
	e.devAvail = e.hostAvail
	ok := func(b *B) error {
		for range b.N {
			sink++
		}
		return nil
	}
	g := &group{Suite: "t", Name: "t", Size: 10, Baselines: []string{"good"}, Impls: []*impl{
		{Name: "good", Role: RoleBaseline, Ops: []string{"a", "b", "c"}, Setup: func() (*fixture, error) {
			fx := &fixture{entries: 10}
			fx.add("a", ok)
			fx.add("b", func(b *B) error { panic("boom") })
			fx.add("c", func(b *B) error { return errorf("bad answer") })
			return fx, nil
		}},
		{Name: "oom", Role: RoleGovram, Ops: []string{"a"}, Setup: func() (*fixture, error) {
			_, err := kern.Of(d).Alloc(block.Mapped, 1<<60, 0)
			return nil, err
		}},
		{Name: "big", Role: RoleGovram, Ops: []string{"a"}, Need: func() (uint64, uint64) { return 1 << 62, 0 },
			Setup: func() (*fixture, error) { t.Error("setup of a size that does not fit"); return nil, nil }},
		{Name: "setup-panics", Role: RoleGovram, Ops: []string{"a"}, Setup: func() (*fixture, error) { panic("in setup") }},
		{Name: "missing", Role: RoleNaive, Ops: []string{"a", "z"}, Setup: func() (*fixture, error) {
			fx := &fixture{}
			fx.add("a", ok)
			return fx, nil
		}},
	}}
	res := &Results{}
	r := &runner{e: e, spec: measureSpec{target: time.Millisecond, count: 3}, res: res,
		prog: newProgress(&bytes.Buffer{}, planned([]*group{g}), time.Millisecond, time.Time{})}
	r.run([]*group{g})
	want := map[string]string{
		"good a": StatusOK, "good b": StatusFailed, "good c": StatusFailed, "oom a": StatusSkipped,
		"big a": StatusSkipped, "setup-panics a": StatusFailed, "missing a": StatusOK, "missing z": StatusSkipped,
	}
	if len(res.Cases) != len(want) {
		t.Errorf("%d cases, want %d: %+v", len(res.Cases), len(want), res.Cases)
	}
	for _, c := range res.Cases {
		if w := want[c.Impl+" "+c.Op]; c.Status != w {
			t.Errorf("%s %s: %s (%s), want %s", c.Impl, c.Op, c.Status, c.Note, w)
		}
		if c.Status == StatusOK && (len(c.Samples) != 3 || !(c.Median > 0)) {
			t.Errorf("%s %s: %d runs, median %v", c.Impl, c.Op, len(c.Samples), c.Median)
		}
		if c.Impl == "good" && c.Op == "b" && !strings.Contains(c.Note, "boom") {
			t.Errorf("panic note %q", c.Note)
		}
	}

	// Past the deadline nothing is set up.
	res2 := &Results{}
	r2 := &runner{e: e, spec: r.spec, res: res2, deadline: time.Now().Add(-time.Second),
		prog: newProgress(&bytes.Buffer{}, 1, time.Millisecond, time.Time{})}
	r2.run([]*group{{Suite: "t", Name: "t", Size: 1, Impls: []*impl{{Name: "x", Ops: []string{"a"},
		Setup: func() (*fixture, error) { t.Error("setup after the deadline"); return nil, nil }}}}})
	if len(res2.Cases) != 1 || res2.Cases[0].Status != StatusSkipped {
		t.Errorf("after the deadline: %+v", res2.Cases)
	}
}

// FuzzParse feeds the flag parsers arbitrary text: they return errors,
// never panic, and a size they accept prints back to the same size.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"1e6", "2.5e3", "64k", "1M", "8GiB", "250ms", "1000x", "", "-1", "1e400", "NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := parseCount(s); err == nil {
			if n < 1 {
				t.Fatalf("parseCount(%q) = %d", s, n)
			}
			if back, err := parseCount(sizeName(n)); err != nil || back != n {
				t.Fatalf("sizeName(%d) = %q reads back as %d, %v", n, sizeName(n), back, err)
			}
		}
		parseSizes(s)
		parseBytes(s)
		if d, n, err := parseTime(s); err == nil && d <= 0 && n <= 0 {
			t.Fatalf("parseTime(%q) = %v, %d", s, d, n)
		}
	})
}

// TestMeasureSubNanosecond: a case that costs well under a nanosecond per
// b.N still reaches the target duration (b.N keeps growing), and a case
// measured once runs exactly once.
func TestMeasureSubNanosecond(t *testing.T) {
	calls := 0
	fast := func(b *B) error {
		calls++
		// 0.25 ns per element, as a 32 GB/s copy of uint64s.
		b.elapsed += time.Duration(b.N / 4)
		return nil
	}
	ss, err := measure(measureSpec{target: 50 * time.Millisecond, count: 1}, fast)
	if err != nil {
		t.Fatal(err)
	}
	if got := ss[0].elapsed; got < 50*time.Millisecond {
		t.Errorf("kept run lasted %v, want at least the 50ms target (b.N %d, %d runs)", got, ss[0].n, calls)
	}
	if calls > 12 {
		t.Errorf("%d runs to reach the target", calls)
	}
	calls = 0
	if _, err := measure(measureSpec{iters: 1, count: 1}, fast); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("a case measured once ran %d times", calls)
	}
}

// TestDistRun runs the map and btree suites under two key distributions
// and checks the report has the cases of both and the hit rate column.
func TestDistRun(t *testing.T) {
	t.Setenv("VMEM_BACKEND", os.Getenv("VMEM_BACKEND"))
	dir := t.TempDir()
	args := []string{"-backend", "host", "-suites", "map,btree", "-sizes", "1e3", "-time", "200x", "-count", "1",
		"-goroutines", "1", "-dist", "uniform,zipf1.1", "-out", dir}
	var out, errs bytes.Buffer
	if code := run(args, &out, &errs); code != 0 {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
	res, err := readJSON(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Config.Dists, ","); got != "uniform,zipf1.1" {
		t.Errorf("results.json's dists = %q", got)
	}
	for _, c := range res.Cases {
		if c.Status == StatusFailed {
			t.Errorf("%s %s failed: %s", c.Name(), c.Impl, c.Note)
		}
	}
	report := string(mustRead(t, filepath.Join(dir, "report.md")))
	for _, want := range []string{
		"| get-hit | 1e3 |", "| get-hit@zipf1.1 | 1e3 |", "| put | 1e3 |", "| put@zipf1.1 | 1e3 |",
		"| get | 1e3 |", "| get@zipf1.1 | 1e3 |", "| range | 1e3 |", "| range@zipf1.1 | 1e3 |",
		" govram hit% |", "-dist uniform,zipf1.1", "<op>@<dist>",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q\n%s", want, report)
		}
	}
	// Variants follow their uniform operation.
	if i, j, k := strings.Index(report, "| get-hit | 1e3"), strings.Index(report, "| get-hit@zipf1.1 | 1e3"),
		strings.Index(report, "| get-miss | 1e3"); !(i < j && j < k) {
		t.Errorf("get-hit, get-hit@zipf1.1 and get-miss out of order: %d %d %d", i, j, k)
	}
}

// TestDist checks the parsing of -dist, the draws and the hit rate metric.
func TestDist(t *testing.T) {
	ds, err := parseDists("uniform, zipf0.99,zipf1.1,zipf1.1")
	if err != nil || strings.Join(distNames(ds), ",") != "uniform,zipf0.99,zipf1.1" {
		t.Fatalf("parseDists: %v, %v", distNames(ds), err)
	}
	for _, bad := range []string{"", "zipf", "zipf1", "zipf-2", "normal", "zipfx"} {
		if _, err := parseDists(bad); err == nil {
			t.Errorf("parseDists(%q) accepted", bad)
		}
	}
	if got := distOps([]string{"build", "get", "put"}, ds, "get"); strings.Join(got, " ") != "build get get@zipf0.99 get@zipf1.1 put" {
		t.Errorf("distOps = %v", got)
	}
	// Uniform draws are the suites' probes of old.
	if a, b := drawIdx(1000, 100, 2, ds[0]), randomIdx(1000, 100, 2); !slices.Equal(a, b) {
		t.Error("uniform draws differ from randomIdx")
	}
	const n = 100_000
	for _, d := range ds[1:] {
		idx := drawIdx(n, 1<<16, 7, d)
		counts := map[int]int{}
		for _, j := range idx {
			if j < 0 || j >= n {
				t.Fatalf("%s: index %d out of [0, %d)", d.name, j, n)
			}
			counts[j]++
		}
		// Skewed: far fewer distinct keys than draws, the hottest key drawn
		// often; spread: the hottest keys are not the first ones.
		hot := slices.SortedFunc(maps.Keys(counts), func(a, b int) int { return counts[b] - counts[a] })[:10]
		if len(counts) > len(idx)/2 || counts[hot[0]] < len(idx)/100 {
			t.Errorf("%s: %d distinct keys of %d draws, the hottest drawn %d times", d.name, len(counts), len(idx), counts[hot[0]])
		}
		if slices.Max(hot) < n/10 {
			t.Errorf("%s: the hottest keys %v are all at the start", d.name, hot)
		}
	}
	// The hot tier's hit rate of a loop of Gets.
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	m, err := collections.NewMap[uint64, uint64](dev, collections.WithHostCache(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i := range 1000 {
		if err := m.Put(key(i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	hits := mapHits(&env{cfg: &config{distSet: true}}, m.Stats)
	b := &B{N: 1000}
	mk := hits.mark()
	for i := range b.N {
		m.Get(key(i % 4))
	}
	hits.report(b, mk)
	if h, ok := b.metrics["hit%"]; !ok || h < 50 || h > 100 {
		t.Errorf("hit%% = %v, %v; want the hot keys answered by the tier", h, ok)
	}
	if mapHits(&env{cfg: &config{}}, m.Stats) != nil {
		t.Error("a hit counter without -dist")
	}
}

// TestHostCache checks -host-cache: parsed, recorded, and reaching the
// containers (on the host backend the tier is off unless it is set, so a
// hit rate above zero shows the option arrived).
func TestHostCache(t *testing.T) {
	c, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil || c.hostCacheSet {
		t.Fatalf("no -host-cache: set %v, %v", c.hostCacheSet, err)
	}
	for arg, want := range map[string]int64{"0": 0, "256MiB": 256 << 20, "1e6": 1e6} {
		c, err := parseFlags([]string{"-host-cache", arg}, &bytes.Buffer{})
		if err != nil || !c.hostCacheSet || c.hostCache != want {
			t.Errorf("-host-cache %s: %d (set %v), %v; want %d", arg, c.hostCache, c.hostCacheSet, err, want)
		}
	}
	for _, bad := range []string{"lots", "-1MiB", ""} {
		if _, err := parseFlags([]string{"-host-cache", bad}, &bytes.Buffer{}); err == nil {
			t.Errorf("-host-cache %q accepted", bad)
		}
	}
	t.Setenv("VMEM_BACKEND", os.Getenv("VMEM_BACKEND"))
	for _, hc := range []string{"default", "1MiB"} {
		dir := t.TempDir()
		args := []string{"-backend", "host", "-suites", "map,btree", "-sizes", "1e3", "-time", "2000x", "-count", "1",
			"-goroutines", "1", "-dist", "zipf1.1", "-host-cache", hc, "-out", dir}
		var out, errs bytes.Buffer
		if code := run(args, &out, &errs); code != 0 {
			t.Fatalf("-host-cache %s: exit status %d\nstderr:\n%s", hc, code, errs.String())
		}
		res, err := readJSON(filepath.Join(dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		wantCfg := map[string]string{"default": "", "1MiB": "1 MiB"}[hc]
		if res.Config.HostCache != wantCfg {
			t.Errorf("-host-cache %s: results.json says %q, want %q", hc, res.Config.HostCache, wantCfg)
		}
		report := string(mustRead(t, filepath.Join(dir, "report.md")))
		if got := strings.Contains(report, "hot tier of govram's Map and BTree: 1 MiB"); got != (hc == "1MiB") {
			t.Errorf("-host-cache %s: the report's header names it: %v", hc, got)
		}
		seen := map[string]bool{}
		for _, cr := range res.Cases {
			if cr.Impl != "govram" || (cr.Op != "get-hit@zipf1.1" && cr.Op != "get@zipf1.1") {
				continue
			}
			// Without a tier the case reports no hit rate at all.
			h, ok := cr.Metrics["hit%"]
			seen[cr.Group] = true
			if on := ok && h > 0; on != (hc == "1MiB") {
				t.Errorf("-host-cache %s: %s %s hit %.1f%%", hc, cr.Group, cr.Op, h)
			}
		}
		if !seen["map"] || !seen["btree"] {
			t.Errorf("-host-cache %s: Zipf Gets measured for %v, want map and btree", hc, seen)
		}
	}
}
