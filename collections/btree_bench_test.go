package collections

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/govram/govram/internal/vmemtest"

	"github.com/google/btree"
	"github.com/govram/govram/vmem"
)

// Benchmarks: BenchmarkBTree<Op>/<impl>/<size>, every implementation in
// the same run:
//
//	vulkan        the BTree on the GPU (mapped VRAM, streaming loads, DMA scans)
//	vulkan-naive  the same leaves in mapped VRAM read and written with plain
//	              loads and stores (the naive path)
//	host          the BTree on the host backend (off-heap host memory)
//	google        github.com/google/btree BTreeG, degree 32, on the Go heap
//
// Sizes default to 1e6 entries; VMEM_BENCH_SIZES=1e6,1e7,1.6e7 picks
// others. Trees are uint64 -> uint64, bulk loaded with the even keys
// 0, 2, ..., 2(n-1) (google's by ascending inserts), built once per size
// and implementation and shared by the benchmarks of one run; benchmarks
// that change a tree restore it with the timer stopped.

// btBenchTree is what the benchmarks need of an implementation.
type btBenchTree interface {
	get(k uint64) (uint64, bool)
	has(k uint64) bool
	insert(k, v uint64)
	del(k uint64)
	ascendRange(a, b uint64, f func(k, v uint64) bool)
	ascend(f func(k, v uint64) bool)
	hostPerEntry() float64
}

type btBenchOurs struct{ t *BTree[uint64, uint64] }

func (o btBenchOurs) get(k uint64) (uint64, bool) { return o.t.Get(k) }
func (o btBenchOurs) has(k uint64) bool           { return o.t.Has(k) }
func (o btBenchOurs) insert(k, v uint64)          { o.t.ReplaceOrInsert(k, v) }
func (o btBenchOurs) del(k uint64)                { o.t.Delete(k) }
func (o btBenchOurs) ascendRange(a, b uint64, f func(k, v uint64) bool) {
	for k, v := range o.t.Range(a, b) {
		if !f(k, v) {
			return
		}
	}
}
func (o btBenchOurs) ascend(f func(k, v uint64) bool) {
	for k, v := range o.t.All() {
		if !f(k, v) {
			return
		}
	}
}
func (o btBenchOurs) hostPerEntry() float64 { return o.t.Stats().HostPerEntry }

type btBenchGoogle struct {
	t    *btree.BTreeG[btItem]
	heap float64 // Go heap bytes per entry after building
}

func (g *btBenchGoogle) get(k uint64) (uint64, bool) {
	it, ok := g.t.Get(btItem{k: k})
	return it.v, ok
}
func (g *btBenchGoogle) has(k uint64) bool  { return g.t.Has(btItem{k: k}) }
func (g *btBenchGoogle) insert(k, v uint64) { g.t.ReplaceOrInsert(btItem{k, v}) }
func (g *btBenchGoogle) del(k uint64)       { g.t.Delete(btItem{k: k}) }
func (g *btBenchGoogle) ascendRange(a, b uint64, f func(k, v uint64) bool) {
	g.t.AscendRange(btItem{k: a}, btItem{k: b}, func(it btItem) bool { return f(it.k, it.v) })
}
func (g *btBenchGoogle) ascend(f func(k, v uint64) bool) {
	g.t.Ascend(func(it btItem) bool { return f(it.k, it.v) })
}
func (g *btBenchGoogle) hostPerEntry() float64 { return g.heap }

var btBench struct {
	mu    sync.Mutex
	devs  map[string]*vmem.Device
	trees map[string]btBenchTree
}

// btBenchDevice opens (once) the device an implementation runs on, or
// returns nil when it is missing.
func btBenchDevice(impl string) *vmem.Device {
	be := vmem.BackendHost
	if strings.HasPrefix(impl, "vulkan") {
		be = vmem.BackendVulkan
	}
	name := string(be)
	if d, ok := btBench.devs[name]; ok {
		return d
	}
	d, err := vmem.Open(vmem.Options{Backend: be})
	if err != nil || d.Info().Backend != be {
		d = nil
	}
	if btBench.devs == nil {
		btBench.devs = map[string]*vmem.Device{}
	}
	btBench.devs[name] = d
	return d
}

var btBenchImpls = []string{"vulkan", "vulkan-naive", "host", "google"}

// btBenchKeys returns the sorted keys and values a tree of n holds.
func btBenchKeys(n int) ([]uint64, []uint64) {
	keys := make([]uint64, n)
	vals := make([]uint64, n)
	for i := range keys {
		keys[i], vals[i] = uint64(2*i), uint64(i)
	}
	return keys, vals
}

// btBenchGet returns the tree of n entries for impl, building it once; nil
// when the implementation's device is missing.
func btBenchGet(b *testing.B, impl string, n int) btBenchTree {
	btBench.mu.Lock()
	defer btBench.mu.Unlock()
	key := impl + "/" + vmemtest.SizeName(n)
	if tr, ok := btBench.trees[key]; ok {
		return tr
	}
	if btBench.trees == nil {
		btBench.trees = map[string]btBenchTree{}
	}
	keys, vals := btBenchKeys(n)
	var tr btBenchTree
	if impl == "google" {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		g := btree.NewG(32, btItemLess)
		for i := range keys {
			g.ReplaceOrInsert(btItem{keys[i], vals[i]})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		tr = &btBenchGoogle{t: g, heap: float64(after.HeapAlloc-before.HeapAlloc) / float64(n)}
	} else {
		d := btBenchDevice(impl)
		if d == nil {
			btBench.trees[key] = nil
			return nil
		}
		var opts []BTreeOption
		if strings.HasSuffix(impl, "-naive") {
			opts = append(opts, btWithNaive())
		}
		t, err := NewBTreeOrdered[uint64, uint64](d, opts...)
		if err != nil {
			b.Fatal(err)
		}
		if err := t.BulkLoad(keys, vals); err != nil {
			b.Fatal(err)
		}
		tr = btBenchOurs{t}
	}
	btBench.trees[key] = tr
	return tr
}

// btBenchEach runs f for every implementation and size.
func btBenchEach(b *testing.B, f func(b *testing.B, impl string, tr btBenchTree, n int)) {
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		for _, impl := range btBenchImpls {
			b.Run(impl+"/"+vmemtest.SizeName(n), func(b *testing.B) {
				tr := btBenchGet(b, impl, n)
				if tr == nil {
					b.Skip("no device for " + impl)
				}
				f(b, impl, tr, n)
			})
		}
	}
}

// btBenchRandom is a fixed table of random indexes, so the loops pay no
// generator.
func btBenchRandom(n int) []uint64 {
	rng := rand.New(rand.NewPCG(42, uint64(n)))
	r := make([]uint64, 1<<20)
	for i := range r {
		r[i] = rng.Uint64N(uint64(n))
	}
	return r
}

func BenchmarkBTreeGet(b *testing.B) {
	btBenchEach(b, func(b *testing.B, impl string, tr btBenchTree, n int) {
		r := btBenchRandom(n)
		b.ResetTimer()
		for i := range b.N {
			k := 2 * r[i&(len(r)-1)]
			if v, ok := tr.get(k); !ok || v != k/2 {
				b.Fatalf("Get(%d) = %d, %v", k, v, ok)
			}
		}
		b.StopTimer()
		b.ReportMetric(tr.hostPerEntry(), "hostB/entry")
	})
}

// BenchmarkBTreeHas is Get without the value: on VRAM one key line is
// read instead of a key line and a value line, which shows what a lookup
// pays per line read.
func BenchmarkBTreeHas(b *testing.B) {
	btBenchEach(b, func(b *testing.B, impl string, tr btBenchTree, n int) {
		r := btBenchRandom(n)
		b.ResetTimer()
		for i := range b.N {
			k := 2 * r[i&(len(r)-1)]
			if !tr.has(k) {
				b.Fatalf("Has(%d) = false", k)
			}
		}
	})
}

func BenchmarkBTreeReplaceOrInsert(b *testing.B) {
	btBenchEach(b, func(b *testing.B, impl string, tr btBenchTree, n int) {
		r := btBenchRandom(n)
		// New odd keys, distinct while i < len(r); removed afterwards.
		b.ResetTimer()
		for i := range b.N {
			tr.insert(2*r[i&(len(r)-1)]+1, uint64(i))
		}
		b.StopTimer()
		for i := range min(b.N, len(r)) {
			tr.del(2*r[i] + 1)
		}
	})
}

func BenchmarkBTreeDelete(b *testing.B) {
	btBenchEach(b, func(b *testing.B, impl string, tr btBenchTree, n int) {
		r := btBenchRandom(n)
		deleted := make([]uint64, 0, min(b.N, len(r)))
		b.ResetTimer()
		for i := range b.N {
			if i > 0 && i%len(r) == 0 {
				b.StopTimer()
				for _, k := range deleted {
					tr.insert(k, k/2)
				}
				deleted = deleted[:0]
				b.StartTimer()
			}
			k := 2 * r[i&(len(r)-1)]
			tr.del(k)
			deleted = append(deleted, k)
		}
		b.StopTimer()
		for _, k := range deleted {
			tr.insert(k, k/2)
		}
	})
}

// BenchmarkBTreeAscendRange scans 1000 consecutive entries from a random
// key (Range; google/btree's AscendRange).
func BenchmarkBTreeAscendRange(b *testing.B) {
	btBenchEach(b, func(b *testing.B, impl string, tr btBenchTree, n int) {
		const items = 1000
		r := btBenchRandom(max(n-items, 1))
		b.SetBytes(items * 16)
		b.ResetTimer()
		for i := range b.N {
			a := 2 * r[i&(len(r)-1)]
			c := 0
			tr.ascendRange(a, a+2*items, func(k, v uint64) bool { c++; return true })
			if c != min(items, n) {
				b.Fatalf("Range from %d: %d items", a, c)
			}
		}
	})
}

// BenchmarkBTreeScan is a full ascending scan; bytes are 16 per entry. The
// naive path reads VRAM with plain loads at a few MB/s, so it scans the
// first 2^20 entries only (the bytes reported are those it visited).
func BenchmarkBTreeScan(b *testing.B) {
	btBenchEach(b, func(b *testing.B, impl string, tr btBenchTree, n int) {
		want := n
		if strings.HasSuffix(impl, "-naive") {
			want = min(n, 1<<20)
		}
		b.SetBytes(int64(want) * 16)
		b.ResetTimer()
		for range b.N {
			var sum uint64
			c := 0
			tr.ascend(func(k, v uint64) bool { sum += v; c++; return c < want })
			if c != want {
				b.Fatalf("scan: %d entries", c)
			}
		}
		b.StopTimer()
		btReportGBs(b, int64(want)*16)
	})
}

// BenchmarkBTreeScanRuns is BenchmarkBTreeScan through the runs walk that
// All and Range hand their loop bodies (a leaf's run of entries at a time,
// no call per entry): what a loop over All can reach. google/btree has no
// such form, its figure is BenchmarkBTreeScan's.
func BenchmarkBTreeScanRuns(b *testing.B) {
	btBenchEach(b, func(b *testing.B, impl string, tr btBenchTree, n int) {
		o, ok := tr.(btBenchOurs)
		if !ok || strings.HasSuffix(impl, "-naive") {
			b.Skip("no runs form")
		}
		b.SetBytes(int64(n) * 16)
		b.ResetTimer()
		for range b.N {
			var sum uint64
			c := 0
			next, stop, _ := o.t.runsOf("All", nil, nil)
			for {
				keys, vals := next()
				if keys == nil {
					break
				}
				for _, v := range vals {
					sum += v
				}
				c += len(keys)
			}
			stop()
			if c != n {
				b.Fatalf("scan: %d entries", c)
			}
			btScanSink = sum
		}
		b.StopTimer()
		btReportGBs(b, int64(n)*16)
	})
}

// BenchmarkBTreeScanAll is BenchmarkBTreeScan through All (a range-over-
// func loop); google/btree's figure is BenchmarkBTreeScan's.
func BenchmarkBTreeScanAll(b *testing.B) {
	btBenchEach(b, func(b *testing.B, impl string, tr btBenchTree, n int) {
		o, ok := tr.(btBenchOurs)
		if !ok || strings.HasSuffix(impl, "-naive") {
			b.Skip("not ours")
		}
		b.SetBytes(int64(n) * 16)
		b.ResetTimer()
		for range b.N {
			sum, c := btSumAll(o.t)
			if c != n {
				b.Fatalf("scan: %d entries", c)
			}
			btScanSink = sum
		}
		b.StopTimer()
		btReportGBs(b, int64(n)*16)
	})
}

// btSumAll adds up t's values with All, as a caller's loop would.
func btSumAll(t *BTree[uint64, uint64]) (sum uint64, n int) {
	for _, v := range t.All() {
		sum += v
		n++
	}
	return sum, n
}

func btReportGBs(b *testing.B, bytes int64) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/s/1e9, "GB/s")
	}
}

// BenchmarkBTreeBulkLoad builds a tree of n sorted entries into an empty
// tree (google/btree: ascending ReplaceOrInsert); bytes are 16 per entry.
func BenchmarkBTreeBulkLoad(b *testing.B) {
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		keys, vals := btBenchKeys(n)
		for _, impl := range btBenchImpls {
			b.Run(impl+"/"+vmemtest.SizeName(n), func(b *testing.B) {
				b.SetBytes(int64(n) * 16)
				if impl == "google" {
					for range b.N {
						g := btree.NewG(32, btItemLess)
						for i := range keys {
							g.ReplaceOrInsert(btItem{keys[i], vals[i]})
						}
					}
					btReportGBs(b, int64(n)*16)
					return
				}
				btBench.mu.Lock()
				d := btBenchDevice(impl)
				btBench.mu.Unlock()
				if d == nil {
					b.Skip("no device for " + impl)
				}
				var opts []BTreeOption
				if strings.HasSuffix(impl, "-naive") {
					opts = append(opts, btWithNaive())
				}
				for range b.N {
					b.StopTimer()
					t, err := NewBTreeOrdered[uint64, uint64](d, opts...)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if err := t.BulkLoad(keys, vals); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if t.Len() != n {
						b.Fatal(fmt.Sprint("loaded ", t.Len()))
					}
					t.Close()
					b.StartTimer()
				}
				btReportGBs(b, int64(n)*16)
			})
		}
	}
}

// btScanSink keeps the scans' sums alive.
var btScanSink uint64
