package collections

import (
	"testing"

	"github.com/govram/govram/internal/vmemtest"

	"github.com/google/btree"
)

// BenchmarkBTreeGetBatch: a batch of VMEM_BENCH_BATCH (1e6) random
// keys, all present, looked up in a tree of each size of
// VMEM_BENCH_SIZES (keys 2i, values i, bulk loaded), comparing:
//
//	gpu-batch            GetBatch (leaves found and searched by kernels)
//	gpu-batch-cpu-route  the same with each key's leaf found in the host
//	                     index by the CPU (small batches take this path)
//	cpu-batch            GetBatch's CPU path (Get on all cores)
//	google-1   google/btree BTreeG, one goroutine
//	google-16  google/btree BTreeG, 16 goroutines
//
// Metric Mkeys/s, end to end.
func BenchmarkBTreeGetBatch(b *testing.B) {
	batch := mapGPUBenchBatch()
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		b.Run(vmemtest.SizeName(n), func(b *testing.B) {
			d := mapBenchDevice(b)
			keys, vals := btBenchKeys(n)
			tr, err := NewBTreeOrdered[uint64, uint64](d)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			if err := tr.BulkLoad(keys, vals); err != nil {
				b.Fatal(err)
			}
			keys, vals = nil, nil
			r := mapRand(99)
			ks := make([]uint64, batch)
			for i := range ks {
				ks[i] = 2 * (r.next() % uint64(n))
			}
			vs := make([]uint64, batch)
			found := make([]bool, batch)
			check := func(b *testing.B) {
				for i := 0; i < batch; i += 9973 {
					if !found[i] || vs[i] != ks[i]/2 {
						b.Fatalf("key %d: %d, %v", ks[i], vs[i], found[i])
					}
				}
			}
			for _, mode := range []string{"gpu-batch", "gpu-batch-cpu-route", "cpu-batch"} {
				b.Run(mode, func(b *testing.B) {
					btGPUOff = mode == "cpu-batch"
					btRouteOff = mode == "gpu-batch-cpu-route"
					defer func() { btGPUOff, btRouteOff = false, false }()
					if mode != "cpu-batch" {
						gpuBenchWarm(b, func() error { return tr.GetBatch(ks, vs, found) })
					}
					for range b.N {
						if err := tr.GetBatch(ks, vs, found); err != nil {
							b.Fatal(err)
						}
					}
					mapGPUReport(b, batch)
					check(b)
				})
			}
			g := btree.NewG(32, btItemLess)
			for i := 0; i < n; i++ {
				g.ReplaceOrInsert(btItem{uint64(2 * i), uint64(i)})
			}
			b.Run("google-1", func(b *testing.B) {
				for range b.N {
					for i, k := range ks {
						it, ok := g.Get(btItem{k: k})
						vs[i], found[i] = it.v, ok
					}
				}
				mapGPUReport(b, batch)
				check(b)
			})
			b.Run("google-16", func(b *testing.B) {
				for range b.N {
					mapGPUPar16(len(ks), func(_, lo, hi int) {
						for i := lo; i < hi; i++ {
							it, ok := g.Get(btItem{k: ks[i]})
							vs[i], found[i] = it.v, ok
						}
					})
				}
				mapGPUReport(b, batch)
				check(b)
			})
		})
	}
}
