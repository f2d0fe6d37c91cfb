package main

// The measuring engine: a case is one operation of one implementation at
// one size; it runs like a testing.B benchmark (b.N grows until one run
// lasts -time), then repeats -count times with the same b.N, and reports
// the median, the smallest and largest run. Nothing here knows about
// containers: suites register groups of implementations (see plan.go).

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"time"
)

// B is what an operation's function gets, like testing.B: run the
// operation b.N times, stop the timer around work that is not the
// operation.
type B struct {
	N int

	timing  bool
	start   time.Time
	elapsed time.Duration
	bytes   int64 // bytes moved per operation, for MB/s
	metrics map[string]float64
	note    string
}

// StartTimer resumes timing.
func (b *B) StartTimer() {
	if !b.timing {
		b.start = time.Now()
		b.timing = true
	}
}

// StopTimer pauses timing, for untimed work such as refilling a container.
func (b *B) StopTimer() {
	if b.timing {
		b.elapsed += time.Since(b.start)
		b.timing = false
	}
}

// ResetTimer forgets the time measured so far.
func (b *B) ResetTimer() {
	b.elapsed = 0
	if b.timing {
		b.start = time.Now()
	}
}

// Elapsed returns the time measured so far.
func (b *B) Elapsed() time.Duration {
	if b.timing {
		return b.elapsed + time.Since(b.start)
	}
	return b.elapsed
}

// SetBytes records how many bytes one operation moves; the result then
// has an MB/s metric.
func (b *B) SetBytes(n int64) { b.bytes = n }

// ReportMetric records a custom metric of this run (the case reports the
// median over its runs). Units name what they count ("ns/elem").
func (b *B) ReportMetric(v float64, unit string) {
	if b.metrics == nil {
		b.metrics = map[string]float64{}
	}
	b.metrics[unit] = v
}

// Note attaches a remark to the case (what stopped a capacity probe).
func (b *B) Note(s string) { b.note = s }

// benchFunc runs an operation b.N times. An error fails the case.
type benchFunc func(b *B) error

// sample is one run of a case.
type sample struct {
	n       int
	elapsed time.Duration
	metrics map[string]float64
	note    string
}

func (s sample) nsPerOp() float64 { return float64(s.elapsed.Nanoseconds()) / float64(s.n) }

// measureSpec says how long each run lasts and how often a case repeats.
type measureSpec struct {
	target time.Duration // a run lasts at least this long (when iters == 0)
	iters  int           // fixed b.N (the -time Nx form)
	count  int           // runs per case
}

// maxN bounds b.N, as testing does.
const maxN = 1_000_000_000

// measure runs fn as a case: one warm-up run with b.N = 1 (it pays for
// first touches, kernel compilation and lazy setup, and is never kept),
// then b.N grows until one run lasts spec.target (or is spec.iters), and
// runs repeat until spec.count are kept. The last ramp run is kept when it
// lasted long enough, so a slow operation is not run more than needed.
func measure(spec measureSpec, fn benchFunc) ([]sample, error) {
	var kept []sample
	if spec.iters == 1 && spec.count <= 1 {
		// A case measured once (capacity probes) holds what it took until
		// its fixture closes: a warm-up run would leave the kept run
		// nothing to take.
		s, err := runOnce(fn, 1)
		if err != nil {
			return nil, err
		}
		return []sample{s}, nil
	}
	warm, err := runOnce(fn, 1)
	if err != nil {
		return nil, err
	}
	n := spec.iters
	if n <= 0 {
		n = 1
		if warm.elapsed < spec.target {
			n = predictN(spec.target, warm, 1)
			for {
				s, err := runOnce(fn, n)
				if err != nil {
					return nil, err
				}
				if s.elapsed >= spec.target || n >= maxN {
					kept = append(kept, s)
					break
				}
				n = predictN(spec.target, s, n)
			}
		}
	}
	for len(kept) < max(spec.count, 1) {
		s, err := runOnce(fn, n)
		if err != nil {
			return nil, err
		}
		kept = append(kept, s)
	}
	return kept, nil
}

// predictN returns the next b.N of the ramp, as testing.B does: aim 20%
// past the target, grow at most 100 times, at least by one.
func predictN(target time.Duration, s sample, last int) int {
	// In floating point: bulk cases cost well under a nanosecond per
	// element, and a per-op cost rounded up to 1 ns would ask for the same
	// b.N again and again without ever reaching the target.
	per := max(float64(s.elapsed.Nanoseconds())/float64(s.n), 1e-3)
	n := int64(float64(target.Nanoseconds()) * 1.2 / per)
	n = min(n, int64(last)*100)
	n = max(n, int64(last)+1)
	return int(min(n, maxN))
}

// errPanic wraps a panic of a case so that the run goes on.
var errPanic = errors.New("panic")

// runOnce runs fn with b.N = n and reports its time and its allocations.
func runOnce(fn benchFunc, n int) (s sample, err error) {
	b := &B{N: n}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v\n%s", errPanic, p, trimStack(debug.Stack()))
		}
	}()
	a0 := readAllocs()
	b.StartTimer()
	err = fn(b)
	b.StopTimer()
	a1 := readAllocs()
	if err != nil {
		return s, err
	}
	s = sample{n: n, elapsed: max(b.elapsed, 1), metrics: b.metrics, note: b.note}
	if s.metrics == nil {
		s.metrics = map[string]float64{}
	}
	s.metrics["B/op"] = float64(a1.bytes-a0.bytes) / float64(n)
	s.metrics["allocs/op"] = float64(a1.objects-a0.objects) / float64(n)
	if b.bytes > 0 {
		s.metrics["MB/s"] = float64(b.bytes) * float64(n) / 1e6 / s.elapsed.Seconds()
	}
	return s, nil
}

// trimStack keeps the first lines of a panic's stack: enough to find the
// place, short enough for a report.
func trimStack(st []byte) string {
	lines := 0
	for i, c := range st {
		if c == '\n' {
			lines++
			if lines == 16 {
				return string(st[:i])
			}
		}
	}
	return string(st)
}

type allocCount struct{ bytes, objects uint64 }

var allocSamples = []metrics.Sample{
	{Name: "/gc/heap/allocs:bytes"},
	{Name: "/gc/heap/allocs:objects"},
}

// readAllocs reads the heap allocation counters (cheap, unlike
// runtime.ReadMemStats, which stops the world).
func readAllocs() allocCount {
	s := slices.Clone(allocSamples)
	metrics.Read(s)
	return allocCount{bytes: metricUint(s[0]), objects: metricUint(s[1])}
}

func metricUint(s metrics.Sample) uint64 {
	if s.Value.Kind() == metrics.KindUint64 {
		return s.Value.Uint64()
	}
	return 0
}

// summary is what a case reports from its runs.
type summary struct {
	Median, Min, Max float64 // ns/op
	Spread           float64 // largest distance from the median, in % of it
	Metrics          map[string]float64
}

// summarize computes the median and spread of ns/op and the median of
// every metric.
func summarize(ss []sample) summary {
	ns := make([]float64, len(ss))
	for i, s := range ss {
		ns[i] = s.nsPerOp()
	}
	sum := summary{Median: median(ns), Min: slices.Min(ns), Max: slices.Max(ns), Metrics: map[string]float64{}}
	if sum.Median > 0 {
		sum.Spread = 100 * max(sum.Max-sum.Median, sum.Median-sum.Min) / sum.Median
	}
	units := map[string]bool{}
	for _, s := range ss {
		for u := range s.metrics {
			units[u] = true
		}
	}
	for u := range units {
		var vs []float64
		for _, s := range ss {
			if v, ok := s.metrics[u]; ok && !math.IsNaN(v) {
				vs = append(vs, v)
			}
		}
		if len(vs) > 0 {
			sum.Metrics[u] = median(vs)
		}
	}
	return sum
}

// median returns the middle value (the mean of the two middle ones for
// an even count).
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// settle collects garbage so that one case does not pay for the last
// one's.
func settle() { runtime.GC() }
