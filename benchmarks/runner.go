package main

// The runner walks the plan: for each group, each implementation is
// checked to fit, built, measured operation by operation, and freed. A
// failure (an error, a panic, memory that runs out) is recorded with its
// case and the run goes on.

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/vmem"
)

// env is what suites build on.
type env struct {
	dev   *vmem.Device
	cfg   *config
	short bool
	// hostAvail is MemAvailable when the run started; devAvail what the
	// device tiers can hold (VRAM on a GPU, host memory otherwise).
	hostAvail, devAvail uint64
	// buildBudget bounds how long a govram container is built one entry
	// at a time (see build); 0: no bound.
	buildBudget time.Duration
	// noKern is a second device whose operations stay on the CPU, for the
	// GPU suite's comparison (nil on the host backend or if it failed).
	noKern    *vmem.Device
	noKernErr error
}

type runner struct {
	e *env
	// checkpoint, when set, saves the results so far (after each
	// implementation), so a crash of the process keeps them.
	checkpoint func()
	spec       measureSpec
	prog       *progress
	res        *Results
	deadline   time.Time
	// groupBudget bounds one group (a suite at one size), so that one slow
	// case cannot spend the whole run; 0 with a deadline set: twice the
	// group's fair share of the time left.
	groupBudget time.Duration
	groupEnd    time.Time
	// interrupted is set on Ctrl-C: the case running ends, the rest is
	// skipped, and the report is written.
	interrupted atomic.Bool
}

// run measures every group.
func (r *runner) run(gs []*group) {
	for i, g := range gs {
		r.groupEnd = r.groupDeadline(len(gs) - i)
		gd := GroupDesc{Suite: g.Suite, Name: g.Name, Size: g.Size, Baselines: g.Baselines, HitRate: g.HitRate}
		for _, im := range g.Impls {
			gd.Impls = append(gd.Impls, ImplDesc{Name: im.Name, Role: im.Role})
			for _, o := range im.Ops {
				if _, v := splitOp(o); v != "" && !slices.ContainsFunc(gd.Impls, func(d ImplDesc) bool { return d.Name == implName(im.Name, v) }) {
					gd.Impls = append(gd.Impls, ImplDesc{Name: implName(im.Name, v), Role: im.Role})
				}
			}
		}
		r.res.Groups = append(r.res.Groups, gd)
		for _, im := range g.Impls {
			r.runImpl(g, im)
			if r.checkpoint != nil {
				r.checkpoint()
			}
		}
	}
}

// groupDeadline is when the group starting now must stop, left groups
// (this one included) still to run.
func (r *runner) groupDeadline(left int) time.Time {
	now := time.Now()
	switch {
	case r.groupBudget > 0:
		return now.Add(r.groupBudget)
	case !r.deadline.IsZero() && left > 0:
		return now.Add(2 * r.deadline.Sub(now) / time.Duration(left))
	}
	return time.Time{}
}

// stopReason says why cases are being skipped.
func (r *runner) stopReason() string {
	switch {
	case r.interrupted.Load():
		return "interrupted before this case"
	case !r.deadline.IsZero() && time.Now().After(r.deadline):
		return "deadline reached before this case"
	}
	return "this group's time budget was spent before this case"
}

// pastDeadline reports whether -deadline or the group's budget has passed.
func (r *runner) pastDeadline() bool {
	now := time.Now()
	return r.interrupted.Load() || (!r.deadline.IsZero() && now.After(r.deadline)) ||
		(!r.groupEnd.IsZero() && now.After(r.groupEnd))
}

// newCase starts the result of operation op of im. An operation named
// "get#batch" is the batch variant of get: it is reported as operation
// get of implementation "govram/batch", a column of its own.
func (r *runner) newCase(g *group, im *impl, op string) *CaseResult {
	name, variant := splitOp(op)
	return &CaseResult{Suite: g.Suite, Group: g.Name, Op: name, Size: g.Size, Impl: implName(im.Name, variant), Role: im.Role}
}

func splitOp(op string) (name, variant string) {
	name, variant, _ = strings.Cut(op, "#")
	return name, variant
}

func implName(name, variant string) string {
	if variant == "" {
		return name
	}
	return name + "/" + variant
}

// record adds c to the results and prints its line.
func (r *runner) record(c *CaseResult) {
	r.res.Cases = append(r.res.Cases, *c)
	r.prog.end(c)
}

// skipAll records every planned operation of im as skipped (or failed).
func (r *runner) skipAll(g *group, im *impl, status, note string) {
	for _, o := range im.Ops {
		c := r.newCase(g, im, o)
		c.Status, c.Note = status, note
		r.record(c)
	}
}

func (r *runner) runImpl(g *group, im *impl) {
	if r.pastDeadline() {
		r.skipAll(g, im, StatusSkipped, r.stopReason())
		return
	}
	if im.Need != nil {
		if note := r.fits(im.Need()); note != "" {
			r.skipAll(g, im, StatusSkipped, note)
			return
		}
	}
	r.prog.begin(caseName(g.Name, "setup", g.Size), im.Name)
	kern.Of(r.e.dev).Trim() // empty chunks kept from earlier cases would hide this one's memory
	quiesce()
	m0 := memNow(r.e.dev)
	start := time.Now()
	fx, err := safeSetup(im.Setup)
	setup := time.Since(start)
	if err != nil {
		status := StatusFailed
		if errors.Is(err, vmem.ErrOutOfMemory) || errors.Is(err, vmem.ErrTooLarge) || errors.Is(err, errSkip) {
			status = StatusSkipped
		}
		note := err.Error()
		if status == StatusFailed {
			note = "setup: " + note
		}
		r.skipAll(g, im, status, note)
		return
	}
	defer func() {
		if err := safeClose(fx); err != nil {
			r.res.Notes = append(r.res.Notes, fmt.Sprintf("%s %s: close: %v", caseName(g.Name, "", g.Size), im.Name, err))
		}
	}()
	var m1 memSnap
	if fx.mem != nil {
		m1 = *fx.mem
	} else {
		quiesce()
		m1 = memNow(r.e.dev)
	}
	if fx.entries > 0 {
		r.res.Memory = append(r.res.Memory, MemoryResult{Suite: g.Suite, Group: g.Name, Size: g.Size,
			Impl: im.Name, Role: im.Role, Entries: fx.entries, Heap: m1.heap - m0.heap, RSS: m1.rss - m0.rss,
			Device: m1.device - m0.device, HostTier: m1.hostTier - m0.hostTier, SetupNs: float64(setup.Nanoseconds())})
	}

	done := map[string]bool{}
	if fx.built > 0 && slices.Contains(im.Ops, "build") {
		c := r.newCase(g, im, "build")
		ns := float64(fx.buildTime.Nanoseconds()) / float64(fx.built)
		c.Status, c.N, c.Samples, c.Note = StatusOK, fx.built, []float64{ns}, fx.buildNote
		c.Median, c.Min, c.Max = ns, ns, ns
		r.record(c)
		done["build"] = true
	}
	for _, o := range fx.ops {
		c := r.newCase(g, im, o.name)
		done[o.name] = true
		if r.pastDeadline() {
			c.Status, c.Note = StatusSkipped, r.stopReason()
			r.record(c)
			continue
		}
		r.prog.begin(c.Name(), c.Impl)
		start := time.Now()
		r.measureCase(c, o)
		c.Wall = float64(time.Since(start).Nanoseconds())
		r.record(c)
	}
	for _, o := range im.Ops {
		if !done[o] {
			c := r.newCase(g, im, o)
			c.Status, c.Note = StatusSkipped, "not provided by this implementation here"
			r.record(c)
		}
	}
}

// measureCase runs one operation and fills c.
func (r *runner) measureCase(c *CaseResult, o op) {
	spec := r.spec
	if o.once {
		spec = measureSpec{iters: 1, count: 1}
	}
	settle()
	ss, err := measure(spec, o.fn)
	switch {
	case errors.Is(err, errSkip), errors.Is(err, vmem.ErrOutOfMemory), errors.Is(err, vmem.ErrTooLarge):
		c.Status, c.Note = StatusSkipped, err.Error()
		return
	case err != nil:
		c.Status, c.Note = StatusFailed, err.Error()
		return
	}
	sum := summarize(ss)
	c.Status, c.N = StatusOK, ss[0].n
	for _, s := range ss {
		c.Samples = append(c.Samples, s.nsPerOp())
	}
	c.Median, c.Min, c.Max, c.Spread, c.Metrics = sum.Median, sum.Min, sum.Max, sum.Spread, sum.Metrics
	c.Note = ss[len(ss)-1].note
	if !(c.Median > 0) {
		c.Status, c.Note = StatusFailed, fmt.Sprintf("measured %v ns/op", c.Median)
	}
}

// errSkip marks a case or setup that does not apply here; it is reported
// as skipped, not failed.
var errSkip = errors.New("skipped")

// skipError is an errSkip with the reason.
type skipError struct{ why string }

func (e *skipError) Error() string        { return e.why }
func (e *skipError) Is(target error) bool { return target == errSkip }

// skipf returns an error that skips the case with a note.
func skipf(format string, args ...any) error {
	return &skipError{why: fmt.Sprintf(format, args...)}
}

// fits checks an implementation's estimated memory against what the
// machine has; it returns a note when it does not fit.
func (r *runner) fits(host, dev uint64) string {
	e := r.e
	const use = 0.85 // leave room for the rest of the process and the OS
	if e.dev.Info().Backend == vmem.BackendHost {
		host, dev = host+dev, 0
	}
	if e.hostAvail > 0 && float64(host) > use*float64(e.hostAvail) {
		return fmt.Sprintf("needs about %s of host memory, %s available", fmtBytes(float64(host)), fmtBytes(float64(e.hostAvail)))
	}
	if e.devAvail > 0 && float64(dev) > use*float64(e.devAvail) {
		return fmt.Sprintf("needs about %s of device memory, %s available", fmtBytes(float64(dev)), fmtBytes(float64(e.devAvail)))
	}
	return ""
}

// safeSetup runs a Setup, turning a panic into an error.
func safeSetup(f func() (*fixture, error)) (fx *fixture, err error) {
	defer func() {
		if p := recover(); p != nil {
			fx, err = nil, fmt.Errorf("%w: %v\n%s", errPanic, p, trimStack(debug.Stack()))
		}
	}()
	fx, err = f()
	if err == nil && fx == nil {
		err = errors.New("setup returned nothing")
	}
	return fx, err
}

// safeClose frees a fixture, turning a panic into an error.
func safeClose(fx *fixture) (err error) {
	if fx.close == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errPanic, p)
		}
	}()
	return fx.close()
}

// closer gathers cleanups of a setup so a failing setup frees what it
// had built, and a fixture frees everything in reverse order.
type closer struct{ fs []func() error }

func (c *closer) add(f func() error) { c.fs = append(c.fs, f) }

func (c *closer) close() error {
	var errs []error
	for i := len(c.fs) - 1; i >= 0; i-- {
		errs = append(errs, c.fs[i]())
	}
	c.fs = nil
	return errors.Join(errs...)
}

// fail frees what a setup had built and returns err.
func (c *closer) fail(err error) (*fixture, error) {
	c.close()
	return nil, err
}

// errorf is fmt.Errorf, short for the suites' checks.
func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// bulkRun is the entries one bulk call takes when a build finishes in bulk.
const bulkRun = 1 << 16

// build inserts entries 0..n-1 one at a time with one, and reports how
// many it inserted that way and how long they took. When the build
// budget runs out first, the remaining entries go in with bulk (runs of
// at most bulkRun entries from a given index), so a container whose
// single inserts are slow on this device is still built and measured;
// the note says so. bulk may be nil for containers without a bulk path:
// they are then built one at a time whatever it takes.
func (e *env) build(n int, one func(i int) error, bulk func(from, to int) error) (built int, took time.Duration, note string, err error) {
	start := time.Now()
	for i := range n {
		if err := one(i); err != nil {
			return 0, 0, "", err
		}
		if bulk != nil && e.buildBudget > 0 && i%64 == 63 && time.Since(start) > e.buildBudget {
			built, took = i+1, time.Since(start)
			for from := built; from < n; from += bulkRun {
				if err := bulk(from, min(from+bulkRun, n)); err != nil {
					return 0, 0, "", err
				}
			}
			note = fmt.Sprintf("one-by-one inserts took %s for the first %s entries (over the %s -build-budget); the rest was bulk-loaded",
				took.Round(time.Millisecond), sizeName(built), e.buildBudget)
			return built, took, note, nil
		}
	}
	return n, time.Since(start), "", nil
}
