package collections

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
)

// BenchmarkMapGetBatchParallel: g goroutines at once, each calling
// GetBatch (or Get, batch 1) with its own keys, one call after another, as
// the goroutines of a server do. Metric Mkeys/s: keys answered per second
// by all goroutines together. Sizes: VMEM_BENCH_SIZES (default 1e6);
// goroutines: VMEM_BENCH_GOROUTINES (default 1,16,256); batches:
// VMEM_BENCH_BATCHES (default 1,64,4096; 1e6 is worth adding on a GPU).
// b.N counts calls of all goroutines together.
func BenchmarkMapGetBatchParallel(b *testing.B) {
	gs := mapBenchInts(b, "VMEM_BENCH_GOROUTINES", 1, 16, 256)
	bs := mapBenchInts(b, "VMEM_BENCH_BATCHES", 1, 64, 4096)
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		b.Run(vmemtest.SizeName(n), func(b *testing.B) {
			s := mapGPUBenchBuild(b, n)
			for _, g := range gs {
				for _, batch := range bs {
					name := fmt.Sprintf("g%d/b%d", g, batch)
					if batch == 1 {
						name = fmt.Sprintf("g%d/get", g)
					}
					b.Run(name, func(b *testing.B) {
						mapBenchParallelGets(b, s, g, batch)
					})
				}
			}
		})
	}
}

// mapBenchParallelGets runs b.N calls over g goroutines, each with keys of
// its own; a wrong answer fails the benchmark.
func mapBenchParallelGets(b *testing.B, s *mapGPUBenchSet, g, batch int) {
	type worker struct {
		calls int
		ks    []uint64
		vs    []uint64
		found []bool
	}
	ws := make([]worker, g)
	for w := range ws {
		nk := batch
		if batch == 1 {
			nk = 1 << 16 // single Gets walk random keys of their own
		}
		ws[w] = worker{ks: mapGPUBenchKeys(s.n, nk, uint64(w)*7919+1), vs: make([]uint64, nk), found: make([]bool, nk)}
	}
	run := func(w *worker) error {
		if batch == 1 {
			i := w.calls & (1<<16 - 1)
			w.calls++
			v, ok := s.m.Get(w.ks[i])
			w.vs[i], w.found[i] = v, ok
			return nil
		}
		w.calls++
		return s.m.GetBatch(w.ks, w.vs, w.found)
	}
	// The first batch brings the control bytes over.
	gpuBenchWarm(b, func() error { return run(&ws[0]) })
	var errOnce sync.Once
	var firstErr error
	var wg sync.WaitGroup
	per := (b.N + g - 1) / g
	for w := range ws {
		calls := max(min(per, b.N-w*per), 0)
		ws[w].calls = 0
		wg.Go(func() {
			for range calls {
				if err := run(&ws[w]); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	b.ReportMetric(float64(batch)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mkeys/s")
	for w := range ws {
		checked := batch
		if batch == 1 {
			checked = min(ws[w].calls, 1<<16)
		}
		for i := 0; i < checked && ws[w].calls > 0; i += 61 {
			if want, ok := s.gomap[ws[w].ks[i]]; !ws[w].found[i] || ws[w].vs[i] != want || !ok {
				b.Fatalf("goroutine %d key %d: %d, %v; want %d", w, i, ws[w].vs[i], ws[w].found[i], want)
			}
		}
	}
}

// mapBenchInts reads a comma-separated list of counts from env (1e6
// notation allowed), or returns def.
func mapBenchInts(b *testing.B, env string, def ...int) []int {
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || x < 1 {
			b.Fatalf("%s: %q is not a count", env, f)
		}
		out = append(out, int(x))
	}
	return out
}
