// Command benchmarks measures govram's containers against what Go programs
// use today (built-in maps, slices and channels, google/btree, fastcache)
// and against the naive path (the same data in mapped device memory read
// with plain Go loads), and writes a report with plots.
//
//	cd benchmarks                     # its own module; a replace points at the library
//	go run .                          # every suite, sizes 1e5,1e6
//	go run . -short                   # a quick smoke run (CI)
//	go run . -suites map,btree -sizes 1e6,1e7 -time 1s -count 5
//	go run . -from out/results.json   # redraw the report
//
// It opens the device like vmem.Open (a GPU through Vulkan if there is one,
// else host memory; -backend or VMEM_BACKEND choose), prints progress, and
// writes report.md, results.json and the plots into -out. A case that fails
// is reported and the run goes on; the exit status is 1 when any failed,
// 130 when Ctrl-C cut the run short (the report is written either way).
// See docs/benchmarks.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/govram/govram/vmem"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// config holds the parsed flags.
type config struct {
	backend     vmem.Backend
	backendSet  bool
	suites      []string
	sizes       []int
	timeFlag    string
	target      time.Duration
	iters       int
	count       int
	short       bool
	out         string
	format      string
	capacityMax uint64
	capHost     bool
	deadline    time.Duration
	groupBudget time.Duration
	buildBudget time.Duration
	from        string
	list        bool
	goroutines  []int // the map suite's concurrency axis (suite_map_conc.go)
	// dists are the key distributions of the map and btree suites
	// (dist.go); distSet: -dist was given, so govram's cases report the
	// hot tier's hit rate and the report shows it.
	dists   []keyDist
	distSet bool
	// hostCache is -host-cache: the hot tier's bytes for govram's Map and
	// BTree (WithHostCache) when hostCacheSet; else the library's default.
	hostCache    int64
	hostCacheSet bool
}

// Defaults, and the -short ones (a smoke run: every case once, tiny).
const (
	defaultSizes       = "1e5,1e6"
	defaultTime        = "250ms"
	defaultCount       = 3
	defaultCapacityMax = "8GiB"
	defaultBuildBudget = 20 * time.Second
	shortSizes         = "1e4"
	shortTime          = "5ms"
	shortCount         = 2
	shortCapacityMax   = "16MiB"
	shortBuildBudget   = 2 * time.Second
)

// parseFlags reads args; -short changes the defaults of the flags not given.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("benchmarks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backend := fs.String("backend", "auto", "device: auto (a GPU if present, like vmem.Open), vulkan or host; overrides VMEM_BACKEND")
	suites := fs.String("suites", strings.Join(suiteNames(), ","), "suites to run, comma-separated")
	sizes := fs.String("sizes", defaultSizes, "entries per container, comma-separated (1e6, 2.5e6, 64k, 1M)")
	tm := fs.String("time", defaultTime, "how long one run of a case lasts (1s), or a fixed b.N (1000x)")
	count := fs.Int("count", defaultCount, "runs per case; the report gives their median and spread")
	short := fs.Bool("short", false, "quick run: sizes "+shortSizes+", -time "+shortTime+", -count 2, small capacity cap")
	out := fs.String("out", "out", "folder for report.md, results.json and the plots")
	format := fs.String("format", "svg", "plot format: svg or png")
	capMax := fs.String("capacity-max", defaultCapacityMax, "capacity suite: stop allocating a tier at this many bytes")
	capHost := fs.Bool("capacity-host", false, "capacity suite: run it on the host backend too (it allocates host memory up to -capacity-max per tier)")
	deadline := fs.Duration("deadline", 0, "start no case after this much time (0: no limit); the rest is reported as skipped")
	groupBudget := fs.Duration("group-budget", 0, "start no case of a group (a suite at one size) after it has run this long (0: twice its share of what -deadline leaves)")
	buildBudget := fs.Duration("build-budget", defaultBuildBudget, "build a govram container one entry at a time for at most this long, then bulk-load the rest (0: no limit)")
	from := fs.String("from", "", "redraw report.md and the plots from this results.json; run nothing")
	list := fs.Bool("list", false, "print the cases that would run, and exit")
	goroutines := fs.String("goroutines", defaultGoroutines, "map suite: lookups from this many goroutines at once, comma-separated (Get one at a time, GetBatch of 64, 4096 and 1e6 keys; aggregate keys/s)")
	dist := fs.String("dist", defaultDists, "map and btree suites: key distributions of lookups and overwrites of present keys, comma-separated: uniform, zipf<s> (zipf0.99, zipf1.1; rank 0 the hottest, ranks spread over the keys by a fixed permutation); cases of a distribution other than uniform are named op@dist, and govram's report the hot tier's hit rate")
	hostCache := fs.String("host-cache", "default", "map and btree suites: the hot tier of govram's Map and BTree (WithHostCache): default (the library's: a fiftieth of the container's device bytes on a GPU, none on the host backend), 0 (off), or a byte count (256MiB)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *short {
		if !set["sizes"] {
			*sizes = shortSizes
		}
		if !set["time"] {
			*tm = shortTime
		}
		if !set["count"] {
			*count = shortCount
		}
		if !set["capacity-max"] {
			*capMax = shortCapacityMax
		}
		if !set["build-budget"] {
			*buildBudget = shortBuildBudget
		}
		if !set["goroutines"] {
			*goroutines = shortGoroutines
		}
	}
	c := &config{short: *short, out: *out, format: *format, capHost: *capHost, deadline: *deadline, groupBudget: *groupBudget, buildBudget: *buildBudget,
		from: *from, list: *list, count: *count, timeFlag: *tm, backendSet: set["backend"]}
	var err error
	c.backend = vmem.Backend(*backend) // Open refuses an unknown name
	if c.sizes, err = parseSizes(*sizes); err != nil {
		return nil, err
	}
	if c.goroutines, err = parseGoroutines(*goroutines); err != nil {
		return nil, err
	}
	if c.dists, err = parseDists(*dist); err != nil {
		return nil, err
	}
	c.distSet = set["dist"]
	if c.target, c.iters, err = parseTime(*tm); err != nil {
		return nil, err
	}
	if c.count < 1 {
		return nil, fmt.Errorf("-count %d: want at least 1", c.count)
	}
	if c.capacityMax, err = parseBytes(*capMax); err != nil {
		return nil, err
	}
	if hc := strings.TrimSpace(*hostCache); hc != "default" {
		n, err := parseBytes(hc)
		if err != nil {
			return nil, fmt.Errorf("-host-cache %q: want default, 0 or a byte count like 256MiB", *hostCache)
		}
		c.hostCache, c.hostCacheSet = int64(n), true
	}
	if c.format != "svg" && c.format != "png" {
		return nil, fmt.Errorf("-format %q: want svg or png", c.format)
	}
	for s := range strings.SplitSeq(*suites, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if s == "all" {
			c.suites = append(c.suites, suiteNames()...)
			continue
		}
		if suiteByName(s) == nil {
			return nil, fmt.Errorf("unknown suite %q (have %s)", s, strings.Join(suiteNames(), ", "))
		}
		if !slices.Contains(c.suites, s) {
			c.suites = append(c.suites, s)
		}
	}
	if len(c.suites) == 0 {
		return nil, errors.New("no suites")
	}
	return c, nil
}

// run is the program; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "benchmarks:", err)
		return 2
	}
	if cfg.from != "" {
		res, err := readJSON(cfg.from)
		if err == nil {
			err = writeReport(cfg.out, cfg.format, res)
		}
		if err != nil {
			fmt.Fprintln(stderr, "benchmarks:", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(cfg.out, "report.md"))
		return 0
	}

	if cfg.backendSet {
		// The flag is the more specific request: it wins over VMEM_BACKEND,
		// which vmem.Open would otherwise obey.
		if v := os.Getenv("VMEM_BACKEND"); v != "" && v != string(cfg.backend) {
			os.Setenv("VMEM_BACKEND", string(cfg.backend))
		}
	}
	dev, err := vmem.Open(vmem.Options{Backend: cfg.backend})
	if err != nil {
		fmt.Fprintln(stderr, "benchmarks:", err)
		return 1
	}
	e := newEnv(dev, cfg)
	defer e.close()

	groups := plan(e)
	if cfg.list {
		printList(stdout, groups)
		return 0
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		fmt.Fprintln(stderr, "benchmarks:", err)
		return 1
	}

	res := newResults(dev, cfg, args)
	fmt.Fprintf(stdout, "govram benchmarks: %s", dev.Info())
	fmt.Fprintf(stdout, "cpu: %s, %d cores; suites %s; sizes %s; -time %s -count %d%s\n", res.Machine.CPU,
		res.Machine.Cores, strings.Join(cfg.suites, ","), sizesText(cfg.sizes), cfg.timeFlag, cfg.count, distText(res.Config.Dists))

	spec := measureSpec{target: cfg.target, iters: cfg.iters, count: cfg.count}
	guess := time.Duration(cfg.count)*cfg.target + cfg.target/2
	if cfg.iters > 0 {
		guess = 10 * time.Millisecond
	}
	var deadline time.Time
	if cfg.deadline > 0 {
		deadline = time.Now().Add(cfg.deadline)
	}
	r := &runner{e: e, spec: spec, res: res, deadline: deadline, groupBudget: cfg.groupBudget,
		prog: newProgress(stderr, planned(groups), guess, deadline)}
	if e.noKernErr != nil {
		res.Notes = append(res.Notes, "gpu suite: no CPU-path device for comparison: "+e.noKernErr.Error())
	}
	jsonPath := filepath.Join(cfg.out, "results.json")
	r.checkpoint = func() {
		res.Partial, res.Finished = true, time.Now()
		writeJSON(jsonPath, res)
		res.Partial = false
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	go func() {
		for range sigs {
			r.interrupted.Store(true)
			fmt.Fprintln(stderr, "\ninterrupted: finishing the case running, then writing the report (interrupt again to quit at once)")
			signal.Stop(sigs)
		}
	}()
	r.run(groups)
	signal.Stop(sigs)
	close(sigs)
	res.Finished = time.Now()
	if r.interrupted.Load() {
		res.Notes = append(res.Notes, "the run was interrupted; the cases after that are reported as skipped")
	}
	leaked := noteLeaks(dev, res)

	status := 0
	if err := writeJSON(jsonPath, res); err != nil {
		fmt.Fprintln(stderr, "benchmarks:", err)
		status = 1
	}
	if err := writeReport(cfg.out, cfg.format, res); err != nil {
		fmt.Fprintln(stderr, "benchmarks: report:", err)
		status = 1
	}
	if leaked {
		fmt.Fprintln(stderr, "benchmarks: device memory leaked (see the report's notes)")
		status = 1
	}
	ok, skipped, failed := tally(res)
	fmt.Fprintf(stdout, "%d cases in %s: %d ok, %d skipped, %d failed\nwrote %s and %s\n", len(res.Cases),
		res.Finished.Sub(res.Started).Round(time.Second), ok, skipped, failed,
		filepath.Join(cfg.out, "report.md"), jsonPath)
	if failed > 0 {
		for _, c := range res.Cases {
			if c.Status == StatusFailed {
				fmt.Fprintf(stderr, "FAILED %s %s: %s\n", c.Name(), c.Impl, firstLine(c.Note))
			}
		}
		status = 1
	}
	if r.interrupted.Load() && status == 0 {
		status = 130 // as a shell reports a run stopped by Ctrl-C
	}
	return status
}

// printList writes the cases a command line would run, one a line (-list).
func printList(stdout io.Writer, groups []*group) {
	for _, g := range groups {
		for _, im := range g.Impls {
			for _, o := range im.Ops {
				fmt.Fprintf(stdout, "%-40s %s\n", caseName(g.Name, o, g.Size), im.Name)
			}
		}
	}
}

// newResults starts the record of a run: its configuration, the machine,
// the device and the suites' descriptions.
func newResults(dev *vmem.Device, cfg *config, args []string) *Results {
	res := &Results{Version: resultsVersion, Started: time.Now(), Command: append([]string{"benchmarks"}, args...),
		Config: RunConfig{Backend: string(dev.Info().Backend), Suites: cfg.suites, Sizes: cfg.sizes, Time: cfg.timeFlag,
			Count: cfg.count, Short: cfg.short, CapacityMax: cfg.capacityMax},
		Machine: describeMachine(), Device: describeDevice(dev)}
	if cfg.deadline > 0 {
		res.Config.Deadline = cfg.deadline.String()
	}
	if cfg.distSet {
		res.Config.Dists = distNames(cfg.dists)
	}
	if cfg.hostCacheSet {
		res.Config.HostCache = "off"
		if cfg.hostCache > 0 {
			res.Config.HostCache = fmtBytes(float64(cfg.hostCache))
		}
	}
	for _, name := range cfg.suites {
		s := suiteByName(name)
		sd := SuiteDoc{Name: s.Name, About: s.About}
		for _, o := range s.Ops {
			sd.Ops = append(sd.Ops, OpDoc(o))
		}
		if s.Dist && cfg.distSet {
			sd.Ops = append(sd.Ops, OpDoc{Op: "<op>@<dist>", What: "the operation with its keys drawn from -dist distribution <dist> " +
				"(zipf<s>: Zipf ranks of exponent s spread over the present keys by a fixed permutation); without @, uniform. " +
				"govram hit%: the share of govram's lookups its hot tier answered during the timed runs (empty where none was measured)"})
		}
		res.Suites = append(res.Suites, sd)
	}
	return res
}

// noteLeaks adds a note for every tier that still holds blocks after the
// run (a case or container leaked them) and reports whether any did.
func noteLeaks(dev *vmem.Device, res *Results) bool {
	leaked := false
	for t := vmem.Tier(0); t <= vmem.Host; t++ {
		if st := dev.Info().Tiers[t]; st.Blocks > 0 {
			leaked = true
			res.Notes = append(res.Notes, fmt.Sprintf("%d blocks (%s) of the %s tier were still allocated after the run: a case or container leaked them",
				st.Blocks, fmtBytes(float64(st.InUse)), t))
		}
	}

	return leaked
}

func tally(res *Results) (ok, skipped, failed int) {
	for _, c := range res.Cases {
		switch c.Status {
		case StatusOK:
			ok++
		case StatusSkipped:
			skipped++
		default:
			failed++
		}
	}
	return
}

func sizesText(sizes []int) string {
	var s []string
	for _, n := range sizes {
		s = append(s, sizeName(n))
	}
	return strings.Join(s, ",")
}

// newEnv measures what memory the machine offers.
func newEnv(dev *vmem.Device, cfg *config) *env {
	e := &env{dev: dev, cfg: cfg, short: cfg.short, hostAvail: meminfo("MemAvailable"), buildBudget: cfg.buildBudget}
	if dev.Info().Backend == vmem.BackendHost {
		e.devAvail = e.hostAvail
	} else {
		in := dev.Info()
		for _, t := range []vmem.Tier{vmem.Mapped, vmem.Private} {
			ti := in.Tiers[t]
			if !ti.Available {
				continue
			}
			c := ti.Capacity
			if ti.Budget > 0 {
				c = min(c, ti.Budget)
			}
			// Mapped and private share VRAM: the heap's size is the bound.
			e.devAvail = max(e.devAvail, c)
		}
	}
	return e
}

func (e *env) close() {
	if e.noKern != nil {
		e.noKern.Close()
	}
	e.dev.Close()
}

// plan registers the groups of every suite asked for. Suites that do not
// depend on sizes come first (capacity wants an empty device); then all
// suites at the smallest size, then at the next, so that a -deadline
// still leaves every suite measured at the small sizes.
func plan(e *env) []*group {
	var gs []*group
	for _, name := range e.cfg.suites {
		if s := suiteByName(name); s.Once {
			gs = append(gs, s.Groups(e, 0)...)
		}
	}
	sizes := slices.Clone(e.cfg.sizes)
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	for _, n := range sizes {
		for _, name := range e.cfg.suites {
			if s := suiteByName(name); !s.Once {
				gs = append(gs, s.Groups(e, n)...)
			}
		}
	}
	return gs
}

// cmpOr returns s, or d when s is empty.
func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// suites lists every suite in the order they run and report.
func suites() []*suite {
	return []*suite{capacitySuite(), sliceSuite(), mapSuite(), btreeSuite(), ringSuite(), gpuSuite(), gcSuite()}
}

// suiteNames lists the suites in the order -suites shows them.
func suiteNames() []string {
	return []string{"slice", "map", "btree", "ring", "gpu", "gc", "capacity"}
}

func suiteByName(name string) *suite {
	for _, s := range suites() {
		if s.Name == name {
			return s
		}
	}
	return nil
}
