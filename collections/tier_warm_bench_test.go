package collections

import (
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// Steady-state rows. A tier learns what is hot from the misses it sees: a
// row timed on a tier that has just been emptied measures learning as
// well as the steady state a long-running program reaches. With
// VMEM_BENCH_WARM=w (a count, e.g. 6.7e7), each Get or Range row of
// BenchmarkMapTier and BenchmarkBTreeTier first empties its tiers and then
// runs w lookups drawn from the row's distribution, spread over GOMAXPROCS
// goroutines, each goroutine with a stream of its own (seeds independent of
// the timed stream's), and only then times its one-at-a-time loop. Every
// implementation of a row (the Go map and google/btree included) is warmed
// the same way. 0 (the default) times an emptied tier.

// tierBenchWarmCount reads VMEM_BENCH_WARM.
func tierBenchWarmCount(b *testing.B) int {
	env := os.Getenv("VMEM_BENCH_WARM")
	if env == "" {
		return 0
	}
	v, err := strconv.ParseFloat(env, 64)
	if err != nil || v < 0 {
		b.Fatalf("VMEM_BENCH_WARM: %q is not a count", env)
	}
	return int(v)
}

// tierBenchSampler returns a maker of key-index draws in [0, n) from dist
// for one goroutine's generator.
func tierBenchSampler(n int, dist string) func(r *rand.Rand) func() uint64 {
	switch dist {
	case "uniform":
		return func(r *rand.Rand) func() uint64 {
			return func() uint64 { return r.Uint64N(uint64(n)) }
		}
	case "zipf1.1":
		return func(r *rand.Rand) func() uint64 {
			return rand.NewZipf(r, 1.1, 1, uint64(n-1)).Uint64
		}
	case "zipf0.99":
		z := newTierZipf(n, 0.99) // read-only once made: shared
		return func(r *rand.Rand) func() uint64 {
			return func() uint64 { return z.next(r) }
		}
	}
	panic(dist)
}

// tierBenchWarm runs count calls of look with key indexes drawn from dist,
// over GOMAXPROCS goroutines, outside the timing.
func tierBenchWarm(b *testing.B, n int, dist string, count int, look func(idx uint64)) {
	if count <= 0 {
		return
	}
	b.StopTimer()
	defer b.StartTimer()
	sampler := tierBenchSampler(n, dist)
	g := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range g {
		wg.Go(func() {
			next := sampler(rand.New(rand.NewPCG(3, uint64(w)+1)))
			for range (count + g - 1) / g {
				look(next())
			}
		})
	}
	wg.Wait()
}

// benchFaults starts counting the process's page faults and garbage
// collections; the function it returns reports them per operation
// (faults/op, gc/op). A first read of a page of mapped VRAM faults (the
// driver maps it then), and so does a first touch of host memory: rows
// that differ by much between runs can be told apart by these.
func benchFaults(b *testing.B) func() {
	var r0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	return func() {
		var r1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		n := float64(max(b.N, 1))
		b.ReportMetric(float64(r1.Minflt-r0.Minflt+r1.Majflt-r0.Majflt)/n, "faults/op")
		b.ReportMetric(float64(m1.NumGC-m0.NumGC)/n, "gc/op")
	}
}
