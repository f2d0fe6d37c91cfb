package vmem_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/vmemtest"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/vmem"
)

// kernBenchSizes are the element counts of the kernel benchmarks: 1e6 by
// default (1e5 on a software Vulkan device, whose kernels run on the CPU
// and whose figures mean nothing), VMEM_BENCH_SIZES=1e6,1e7,1e8 for more
// (the H200 runs).
func kernBenchSizes(b *testing.B, d *vmem.Device) []int {
	if d.Info().Type == "cpu" {
		return vmemtest.BenchSizes(b, 1e5)
	}
	return vmemtest.BenchSizes(b, 1e6)
}

var kernSink uint64

// perSecond reports n items per operation as a rate.
func perSecond(b *testing.B, n int, unit string) {
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), unit)
}

func benchSortType[T vmem.Number](b *testing.B, d *vmem.Device, n int) {
	var zero T
	name := fmt.Sprintf("%T/%s", zero, vmemtest.SizeName(n))
	rng := rand.New(rand.NewPCG(1, 2))
	vals := randNumbers[T](rng, n, 0)
	heap := make([]T, n)
	s, err := vmem.NewSlice[T](d, n)
	if err != nil {
		b.Skipf("%d elements: %v", n, err)
	}
	defer s.Close()
	// The GPU radix sort; each run sorts fresh random data.
	b.Run(name+"/govram", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if err := s.CopyFrom(vals, 0); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := vmem.Sort(s); err != nil {
				b.Fatal(err)
			}
		}
		perSecond(b, n, "keys/s")
	})
	// The baseline: slices.Sort of a []T on the Go heap.
	b.Run(name+"/slices.Sort", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			copy(heap, vals)
			b.StartTimer()
			slices.Sort(heap)
		}
		perSecond(b, n, "keys/s")
	})
	// The best CPU path for data in VRAM: read it out, sort, write it back.
	b.Run(name+"/cpu-roundtrip", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if err := s.CopyFrom(vals, 0); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := s.CopyTo(heap, 0); err != nil {
				b.Fatal(err)
			}
			slices.Sort(heap)
			if err := s.CopyFrom(heap, 0); err != nil {
				b.Fatal(err)
			}
		}
		perSecond(b, n, "keys/s")
	})
	// The naive path: slices.Sort straight on mapped memory with plain Go
	// loads and stores (1.5 µs a load on VRAM: only the first 1e4 keys).
	b.Run(name+"/naive", func(b *testing.B) {
		m := min(n, 1e4)
		blk, err := kdev(d).Alloc(block.Mapped, uint64(m)*uint64(unsafe.Sizeof(zero)), 64)
		if err != nil {
			b.Skip(err)
		}
		defer kdev(d).Free(blk)
		view := unsafe.Slice((*T)(blk.Ptr()), m)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			copy(view, vals[:m])
			b.StartTimer()
			slices.Sort(view)
		}
		perSecond(b, m, "keys/s")
	})
}

// BenchmarkSliceSort sorts random keys: govram's GPU radix sort against
// slices.Sort on the heap, the CPU round trip, and the naive path.
func BenchmarkSliceSort(b *testing.B) {
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		for _, n := range kernBenchSizes(b, d) {
			benchSortType[uint64](b, d, n)
			benchSortType[uint32](b, d, n)
			benchSortType[float32](b, d, n)
		}
	})
}

// BenchmarkSliceGather reads 1e6 random 64-byte elements (or as many as the
// Slice has) of a Slice of each size: the GPU gather (into the Go heap, into
// pinned host memory, and with the kernel writing to host memory itself)
// against a CPU loop of Get, GetMany, and the naive path.
func BenchmarkSliceGather(b *testing.B) {
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		for _, n := range kernBenchSizes(b, d) {
			s, err := vmem.NewSlice[e64](d, n)
			if err != nil {
				b.Skipf("%d elements: %v", n, err)
			}
			vals := make([]e64, n)
			for i := range vals {
				vals[i] = e64{uint64(i)}
			}
			if err := s.CopyFrom(vals, 0); err != nil {
				b.Fatal(err)
			}
			vals = nil
			m := min(n, 1e6)
			idx := randomIndices(n, m)
			dst := make([]e64, m)
			name := fmt.Sprintf("e64/%s", vmemtest.SizeName(n))
			check := func(b *testing.B, dst []e64) {
				for k := range min(len(dst), 1000) {
					if dst[k][0] != uint64(idx[k]) {
						b.Fatalf("element %d is wrong", k)
					}
				}
			}
			b.Run(name+"/govram", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if err := s.GetBatch(idx, dst); err != nil {
						b.Fatal(err)
					}
				}
				perSecond(b, m, "elements/s")
				check(b, dst)
			})
			b.Run(name+"/govram-pinned", func(b *testing.B) {
				blk, err := kdev(d).Alloc(block.Host, uint64(m)*64, 64)
				if err != nil {
					b.Skip(err)
				}
				defer kdev(d).Free(blk)
				pinned := unsafe.Slice((*e64)(blk.Ptr()), m)
				for i := 0; i < b.N; i++ {
					if err := s.GetBatch(idx, pinned); err != nil {
						b.Fatal(err)
					}
				}
				perSecond(b, m, "elements/s")
				check(b, pinned)
			})
			b.Run(name+"/govram-direct", func(b *testing.B) {
				defer vmem.SetGatherDirect(true)()
				for i := 0; i < b.N; i++ {
					if err := s.GetBatch(idx, dst); err != nil {
						b.Fatal(err)
					}
				}
				perSecond(b, m, "elements/s")
				check(b, dst)
			})
			b.Run(name+"/get-loop", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					for k, x := range idx {
						dst[k] = s.Get(x)
					}
				}
				perSecond(b, m, "elements/s")
				check(b, dst)
			})
			b.Run(name+"/getmany", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					s.GetManyCPU(idx, dst)
				}
				perSecond(b, m, "elements/s")
				check(b, dst)
			})
			// Plain Go loads of 64-byte records from mapped memory: about 1.5 µs
			// a load on VRAM, so only the first 1e4 indices.
			b.Run(name+"/naive", func(b *testing.B) {
				blk, err := kdev(d).Alloc(block.Mapped, uint64(n)*64, 64)
				if err != nil {
					b.Skip(err)
				}
				defer kdev(d).Free(blk)
				view := unsafe.Slice((*e64)(blk.Ptr()), n)
				part := idx[:min(m, 1e4)]
				for i := 0; i < b.N; i++ {
					for k, x := range part {
						dst[k] = view[x]
					}
				}
				perSecond(b, len(part), "elements/s")
			})
			s.Close()
		}
	})
}

// BenchmarkSliceFill fills a Slice of 64-byte elements: the GPU fill against
// the CPU's non-temporal stores (and DMA for private memory).
func BenchmarkSliceFill(b *testing.B) {
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		for _, n := range kernBenchSizes(b, d) {
			for _, tier := range []vmem.Tier{vmem.Mapped, vmem.Private} {
				s, err := vmem.NewSlice[e64](d, n, vmem.InTier(tier))
				if err != nil {
					b.Skipf("%d elements: %v", n, err)
				}
				name := fmt.Sprintf("e64/%s/%s", vmemtest.SizeName(n), tier)
				for _, gpu := range []bool{true, false} {
					method := "govram"
					if !gpu {
						method = "cpu"
					}
					b.Run(name+"/"+method, func(b *testing.B) {
						if !gpu {
							defer vmem.SetKernelThresholds(math.MaxUint64, 1)()
						}
						for i := 0; i < b.N; i++ {
							if err := s.Fill(e64{uint64(i)}); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(float64(n)*64*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
					})
				}
				s.Close()
			}
		}
	})
}

// BenchmarkSliceSum adds up a Slice: the GPU reduction against a loop over
// Chunks (DMA to the host, then the CPU) and a loop over a []T on the heap.
func BenchmarkSliceSum(b *testing.B) {
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		for _, n := range kernBenchSizes(b, d) {
			s, err := vmem.NewSlice[uint64](d, n)
			if err != nil {
				b.Skipf("%d elements: %v", n, err)
			}
			heap := make([]uint64, n)
			for i := range heap {
				heap[i] = uint64(i)
			}
			if err := s.CopyFrom(heap, 0); err != nil {
				b.Fatal(err)
			}
			name := fmt.Sprintf("uint64/%s", vmemtest.SizeName(n))
			want := uint64(n) * uint64(n-1) / 2
			b.Run(name+"/govram", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					v, err := vmem.Sum(s)
					if err != nil || v != want {
						b.Fatalf("sum %d, %v", v, err)
					}
				}
				b.ReportMetric(float64(n)*8*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
			b.Run(name+"/chunks", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					var v uint64
					for _, run := range s.Chunks() {
						for _, x := range run {
							v += x
						}
					}
					kernSink = v
				}
				b.ReportMetric(float64(n)*8*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
			b.Run(name+"/heap", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					var v uint64
					for _, x := range heap {
						v += x
					}
					kernSink = v
				}
				b.ReportMetric(float64(n)*8*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
			s.Close()
		}
	})
}

// BenchmarkSliceGetManyPrivate reads 1e4 random elements of a Slice in
// private VRAM (reached only by DMA): GetMany, which gathers them by
// kernel in one round trip, against a loop of Get, one DMA round trip per
// element (what GetMany did there before).
func BenchmarkSliceGetManyPrivate(b *testing.B) {
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		if d.Info().Backend != vmem.BackendVulkan {
			b.Skip("no private VRAM on the host backend")
		}
		const n, m = 1 << 22, 10000
		s, err := vmem.NewSlice[uint64](d, n, vmem.InTier(vmem.Private))
		if err != nil {
			b.Skip(err)
		}
		defer s.Close()
		vals := make([]uint64, n)
		for i := range vals {
			vals[i] = uint64(i) * 5
		}
		if err := s.CopyFrom(vals, 0); err != nil {
			b.Fatal(err)
		}
		idx := randomIndices(n, m)
		dst := make([]uint64, m)
		check := func(b *testing.B) {
			for k, x := range idx {
				if dst[k] != uint64(x)*5 {
					b.Fatalf("element %d is wrong", k)
				}
			}
			if err := s.Err(); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("getmany", func(b *testing.B) {
			for b.Loop() {
				s.GetManyCPU(idx, dst)
			}
			perSecond(b, m, "elements/s")
			check(b)
		})
		b.Run("get-loop", func(b *testing.B) {
			for b.Loop() {
				for k, x := range idx {
					dst[k] = s.Get(x)
				}
			}
			perSecond(b, m, "elements/s")
			check(b)
		})
	})
}
