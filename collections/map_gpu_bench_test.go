package collections

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govram/govram/internal/vmemtest"

	"github.com/govram/govram/vmem"
)

// Batch benchmarks: BenchmarkMapGetBatch, BenchmarkMapPutBatch,
// BenchmarkBTreeGetBatch (btree_gpu_bench_test.go).
//
// Each runs a batch of 1e6 keys (VMEM_BENCH_BATCH sets another) against
// a container of each size of VMEM_BENCH_SIZES (default 1e6; the issue's
// figure is 1e8: VMEM_BENCH_SIZES=1e6,1e8), comparing in one run:
//
//	gpu-batch  GetBatch / PutBatch (kernels on a GPU; the CPU path elsewhere)
//	getmany    GetMany / PutMany (the CPU batch path: all cores)
//	gomap-1    a Go map, one goroutine
//	gomap-16   a Go map, 16 goroutines (reads share one map; writes go to
//	           16 maps, one per goroutine, the keys split by shard first)
//
// Metric Mkeys/s: keys answered (or stored) per second, end to end: keys
// in Go memory to answers in Go memory.

// mapGPUBenchParts: VMEM_BENCH_PARTS=1,2,4 runs gpu-batch once per
// count of parts a GetBatch is cut into (the default: once, as GetBatch
// chooses).
func mapGPUBenchParts() []int {
	env := os.Getenv("VMEM_BENCH_PARTS")
	if env == "" {
		return []int{0}
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && v >= 1 {
			out = append(out, v)
		}
	}
	return out
}

func mapGPUBenchBatch() int {
	if v, err := strconv.ParseFloat(os.Getenv("VMEM_BENCH_BATCH"), 64); err == nil && v >= 1 {
		return int(v)
	}
	return 1e6
}

// mapGPUBenchSet is a Map and a Go map of the same n entries (keys
// mapBenchKey(i), values i), built once per size with PutBatch.
type mapGPUBenchSet struct {
	m     *Map[uint64, uint64]
	gomap map[uint64]uint64
	n     int
}

var mapGPUBenchSets = map[int]*mapGPUBenchSet{}

func mapGPUBenchBuild(b *testing.B, n int) *mapGPUBenchSet {
	if s := mapGPUBenchSets[n]; s != nil {
		return s
	}
	d := mapBenchDevice(b)
	opts := []MapOption{WithCapacity(n)}
	if os.Getenv("VMEM_BENCH_NOTIER") == "1" {
		opts = append(opts, WithHostCache(0)) // lookups as the device path alone serves them
	}
	m, err := NewMap[uint64, uint64](d, opts...)
	if err != nil {
		b.Fatal(err)
	}
	g := make(map[uint64]uint64, n)
	mapGPUBenchFill(b, m, n, func(k, v uint64) { g[k] = v })
	s := &mapGPUBenchSet{m: m, gomap: g, n: n}
	mapGPUBenchSets[n] = s
	// Building the Go map leaves gigabytes of garbage (its outgrown
	// tables): the collector would mark the heap on a quarter of the
	// cores, and then the scavenger would return the freed pages to the OS
	// for minutes, while timed batches run. Both are the baseline's costs.
	debug.FreeOSMemory()
	return s
}

// mapGPUBenchFill stores keys mapBenchKey(i) with values i, i < n, in m
// by PutBatch, calling each (if not nil) for every entry.
func mapGPUBenchFill(b *testing.B, m *Map[uint64, uint64], n int, each func(k, v uint64)) {
	const batch = 1 << 21
	ks, vs := make([]uint64, batch), make([]uint64, batch)
	for lo := 0; lo < n; lo += batch {
		k := min(batch, n-lo)
		for i := range k {
			ks[i], vs[i] = mapBenchKey(uint64(lo+i)), uint64(lo+i)
			if each != nil {
				each(ks[i], vs[i])
			}
		}
		if err := m.PutBatch(ks[:k], vs[:k]); err != nil {
			b.Fatal(err)
		}
	}
}

// mapGPUBenchKeys returns k random keys of a set of n: hits, or misses
// (keys past n) for one in four when miss is set.
func mapGPUBenchKeys(n, k int, seed uint64) []uint64 {
	r := mapRand(seed | 1)
	ks := make([]uint64, k)
	for i := range ks {
		x := r.next()
		ks[i] = mapBenchKey(x % uint64(n))
	}
	return ks
}

// gpuBenchWarm runs f for a quarter of a second before the timed loop,
// then resets the timer. After a GPU idled for tens of seconds (while a
// Go map of 10^8 entries is built) its first work runs slowly, most likely
// at idle clocks: an H200's map_get kernel over a 10^8-entry map took
// 1.05 ms then and 0.19-0.30 ms after other GPU work. Figures are the
// steady state of a service that keeps the GPU busy.
func gpuBenchWarm(b *testing.B, f func() error) {
	b.Helper()
	for start := time.Now(); time.Since(start) < 250*time.Millisecond; {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
}

func mapGPUReport(b *testing.B, keys int) {
	b.ReportMetric(float64(keys)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mkeys/s")
}

// mapGPUPar16 runs f over 16 goroutines' shares of [0, n).
func mapGPUPar16(n int, f func(w, lo, hi int)) {
	const w = 16
	var wg sync.WaitGroup
	per := (n + w - 1) / w
	for x := 0; x < w; x++ {
		wg.Go(func() { f(x, x*per, min((x+1)*per, n)) })
	}
	wg.Wait()
}

func BenchmarkMapGetBatch(b *testing.B) {
	batch := mapGPUBenchBatch()
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		b.Run(vmemtest.SizeName(n), func(b *testing.B) {
			s := mapGPUBenchBuild(b, n)
			ks := mapGPUBenchKeys(n, batch, 42)
			vs := make([]uint64, batch)
			found := make([]bool, batch)
			check := func(b *testing.B) {
				for i := 0; i < len(ks); i += 9973 {
					if !found[i] || vs[i] != s.gomap[ks[i]] {
						b.Fatalf("key %d: %d, %v", i, vs[i], found[i])
					}
				}
			}
			for _, parts := range mapGPUBenchParts() {
				name := "gpu-batch"
				if parts > 0 {
					name = fmt.Sprintf("gpu-batch-parts%d", parts)
				}
				b.Run(name, func(b *testing.B) {
					if parts > 0 {
						old := mapGetParts
						mapGetParts = parts
						defer func() { mapGetParts = old }()
					}
					// The first batch brings the control bytes over.
					gpuBenchWarm(b, func() error { return s.m.GetBatch(ks, vs, found) })
					for range b.N {
						if err := s.m.GetBatch(ks, vs, found); err != nil {
							b.Fatal(err)
						}
					}
					mapGPUReport(b, batch)
					check(b)
				})
			}
			b.Run("getmany", func(b *testing.B) {
				for range b.N {
					s.m.getMany(ks, vs, found)
				}
				mapGPUReport(b, batch)
				check(b)
			})
			mapGoMapBatch(b, s.gomap, ks, vs, found, check)
		})
	}
}

// mapGoMapBatch runs the Go map baselines of a batch lookup: gomap-1 (one
// goroutine) and gomap-16 (16 goroutines sharing the map).
func mapGoMapBatch[K comparable](b *testing.B, gomap map[K]uint64, ks []K, vs []uint64, found []bool, check func(*testing.B)) {
	b.Run("gomap-1", func(b *testing.B) {
		for range b.N {
			for i, k := range ks {
				vs[i], found[i] = gomap[k]
			}
		}
		mapGPUReport(b, len(ks))
		check(b)
	})
	b.Run("gomap-16", func(b *testing.B) {
		for range b.N {
			mapGPUPar16(len(ks), func(_, lo, hi int) {
				for i := lo; i < hi; i++ {
					vs[i], found[i] = gomap[ks[i]]
				}
			})
		}
		mapGPUReport(b, len(ks))
		check(b)
	})
}

func BenchmarkMapPutBatch(b *testing.B) {
	batch := mapGPUBenchBatch()
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		// update: overwrite batch random existing keys of a map of n.
		b.Run("update/"+vmemtest.SizeName(n), func(b *testing.B) {
			s := mapGPUBenchBuild(b, n)
			ks := mapGPUBenchKeys(n, batch, 7)
			vs := make([]uint64, batch)
			for i, k := range ks {
				vs[i] = s.gomap[k] // the values they have: the sets stay as built
			}
			b.Run("gpu-batch", func(b *testing.B) {
				gpuBenchWarm(b, func() error { return s.m.PutBatch(ks, vs) })
				for range b.N {
					if err := s.m.PutBatch(ks, vs); err != nil {
						b.Fatal(err)
					}
				}
				mapGPUReport(b, batch)
			})
			b.Run("putmany", func(b *testing.B) {
				for range b.N {
					if err := s.m.putMany(ks, vs); err != nil {
						b.Fatal(err)
					}
				}
				mapGPUReport(b, batch)
			})
			b.Run("gomap-1", func(b *testing.B) {
				for range b.N {
					for i, k := range ks {
						s.gomap[k] = vs[i]
					}
				}
				mapGPUReport(b, batch)
			})
			mapGPUBenchShards(b, ks, vs, n)
		})
	}
	// insert: batch new keys into an empty map sized for them.
	b.Run("insert/"+vmemtest.SizeName(batch), func(b *testing.B) {
		d := mapBenchDevice(b)
		ks := make([]uint64, batch)
		vs := make([]uint64, batch)
		for i := range ks {
			ks[i], vs[i] = mapBenchKey(uint64(i)), uint64(i)
		}
		run := func(b *testing.B, put func(m *Map[uint64, uint64]) error) {
			var busy time.Duration
			for range b.N {
				m, err := NewMap[uint64, uint64](d, WithCapacity(batch))
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if err := put(m); err != nil {
					b.Fatal(err)
				}
				busy += time.Since(t0)
				if m.Len() != batch {
					b.Fatalf("Len %d", m.Len())
				}
				m.Close()
			}
			b.ReportMetric(float64(batch)*float64(b.N)/busy.Seconds()/1e6, "Mkeys/s")
		}
		b.Run("gpu-batch", func(b *testing.B) {
			run(b, func(m *Map[uint64, uint64]) error { return m.PutBatch(ks, vs) })
		})
		b.Run("putmany", func(b *testing.B) {
			run(b, func(m *Map[uint64, uint64]) error { return m.putMany(ks, vs) })
		})
		b.Run("gomap-1", func(b *testing.B) {
			var busy time.Duration
			for range b.N {
				g := make(map[uint64]uint64, batch)
				t0 := time.Now()
				for i, k := range ks {
					g[k] = vs[i]
				}
				busy += time.Since(t0)
			}
			b.ReportMetric(float64(batch)*float64(b.N)/busy.Seconds()/1e6, "Mkeys/s")
		})
	})
	_ = vmem.ErrRange
}

// mapGPUBenchShards is the gomap-16 store baseline: 16 Go maps of n/16
// entries each, each written by its own goroutine with its share of the
// keys (split beforehand, untimed).
func mapGPUBenchShards(b *testing.B, ks, vs []uint64, n int) {
	b.Run("gomap-16", func(b *testing.B) {
		const w = 16
		var shards [w]map[uint64]uint64
		var sk, sv [w][]uint64
		for x := range shards {
			shards[x] = make(map[uint64]uint64, n/w+1)
		}
		for i := uint64(0); i < uint64(n); i++ {
			k := mapBenchKey(i)
			shards[k%w][k] = i
		}
		for i, k := range ks {
			sk[k%w] = append(sk[k%w], k)
			sv[k%w] = append(sv[k%w], vs[i])
		}
		runtime.GC()
		b.ResetTimer()
		for range b.N {
			mapGPUPar16(w, func(x, _, _ int) {
				m, kk, vv := shards[x], sk[x], sv[x]
				for i, k := range kk {
					m[k] = vv[i]
				}
			})
		}
		mapGPUReport(b, len(ks))
	})
}
