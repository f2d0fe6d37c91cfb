package vmem_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// benchBytes is the working set of the Slice benchmarks: 64 MiB by
// default, VMEM_BENCH_BIG=1 for 1 GiB (the H200 runs).
func benchBytes() int {
	if os.Getenv("VMEM_BENCH_BIG") == "1" {
		return 1 << 30
	}
	return 64 << 20
}

func randomIndices(n, count int) []int {
	rng := rand.New(rand.NewPCG(7, 7))
	idx := make([]int, count)
	for i := range idx {
		idx[i] = rng.IntN(n)
	}
	return idx
}

// BenchmarkSliceGet reads random 64-byte elements: govram's Slice, the
// naive path (plain Go loads from the same kind of mapped memory) and a
// []T on the Go heap, in one run.
func BenchmarkSliceGet(b *testing.B) {
	nbytes := benchBytes()
	n := nbytes / 64
	idx := randomIndices(n, 1<<20)
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		s := touched(b, d, n)
		defer s.Close()
		name := sizeName(uint64(nbytes))
		b.Run("govram/"+name, func(b *testing.B) {
			var sum uint64
			for i := 0; i < b.N; i++ {
				sum += s.Get(idx[i&(len(idx)-1)])[0]
			}
			sink = sum
		})
		b.Run("govram-parallel/"+name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				var sum uint64
				i := rand.IntN(len(idx))
				for pb.Next() {
					sum += s.Get(idx[i&(len(idx)-1)])[0]
					i++
				}
				sink += sum
			})
		})
		b.Run("govram-many/"+name, func(b *testing.B) {
			var sum uint64
			dst := make([]e64, 256)
			for i := 0; i < b.N; i += len(dst) {
				k := i & (len(idx) - 1)
				s.GetManyCPU(idx[k:k+len(dst)], dst)
				sum += dst[0][0]
			}
			sink = sum
		})
		raw := touchedRaw(b, d, nbytes)
		defer kdev(d).Free(raw)
		base := raw.Ptr()
		b.Run("naive/"+name, func(b *testing.B) {
			var sum uint64
			for i := 0; i < b.N; i++ {
				sum += (*e64)(unsafe.Add(base, idx[i&(len(idx)-1)]*64))[0]
			}
			sink = sum
		})
		heap := touchedHeap[e64](n)
		// heap: the element read by value, as Get returns it (the compiler
		// copies a 64-byte array through the stack either way);
		// heap-word: one word of it, loaded in place.
		b.Run("heap/"+name, func(b *testing.B) {
			var sum uint64
			for i := 0; i < b.N; i++ {
				sum += heapGet(heap, idx[i&(len(idx)-1)])[0]
			}
			sink = sum
		})
		b.Run("heap-word/"+name, func(b *testing.B) {
			var sum uint64
			for i := 0; i < b.N; i++ {
				sum += heap[idx[i&(len(idx)-1)]][0]
			}
			sink = sum
		})
	})
}

// heapGet is a []T's element by value, Get's counterpart.
func heapGet[T any](h []T, i int) T { return h[i] }

var sink uint64

// touched returns a Slice of n 64-byte elements whose memory has been
// written once, so no benchmark pays first-touch page faults.
func touched(b *testing.B, d *vmem.Device, n int) *vmem.Slice[e64] {
	s, err := vmem.NewSlice[e64](d, n)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Fill(e64{1}); err != nil {
		b.Fatal(err)
	}
	return s
}

// touchedRaw returns a mapped block of n bytes, written once.
func touchedRaw(b *testing.B, d *vmem.Device, n int) block.Block {
	raw, err := kdev(d).Alloc(block.Mapped, uint64(n), 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := kdev(d).Fill(raw, 0, uint64(n), 1); err != nil {
		b.Fatal(err)
	}
	return raw
}

func touchedHeap[T any](n int) []T {
	h := make([]T, n)
	p := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(h))), uintptr(n)*unsafe.Sizeof(h[0]))
	for i := range p {
		p[i] = 1
	}
	return h
}

// BenchmarkSliceSet writes random 64-byte elements: through a Writer
// (batched, sorted, whole lines), with Set, with plain stores to mapped
// memory (the naive path) and into a []T.
func BenchmarkSliceSet(b *testing.B) {
	nbytes := benchBytes()
	n := nbytes / 64
	idx := randomIndices(n, 1<<20)
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		s := touched(b, d, n)
		defer s.Close()
		name := sizeName(uint64(nbytes))
		v := e64{1, 2, 3, 4, 5, 6, 7, 8}
		for _, batch := range []int{1 << 14, 1 << 15, 1 << 16, 1 << 20} {
			b.Run(fmt.Sprintf("writer/%s/batch%dK", name, batch>>10), func(b *testing.B) {
				w := s.Writer(batch)
				for i := 0; i < b.N; i++ {
					v[0] = uint64(i)
					w.Set(idx[i&(len(idx)-1)], v)
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
			})
		}
		b.Run("set/"+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				v[0] = uint64(i)
				s.Set(idx[i&(len(idx)-1)], v)
			}
		})
		raw := touchedRaw(b, d, nbytes)
		defer kdev(d).Free(raw)
		base := raw.Ptr()
		b.Run("naive/"+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				v[0] = uint64(i)
				*(*e64)(unsafe.Add(base, idx[i&(len(idx)-1)]*64)) = v
			}
		})
		heap := touchedHeap[e64](n)
		b.Run("heap/"+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				v[0] = uint64(i)
				heap[idx[i&(len(idx)-1)]] = v
			}
		})
	})
}

// BenchmarkSliceBulk measures sequential bulk paths in bytes per second:
// Append of 1 MiB batches, CopyFrom and CopyTo of the whole Slice, and
// All/Chunks scans.
func BenchmarkSliceBulk(b *testing.B) {
	nbytes := benchBytes()
	n := nbytes / 8
	src := make([]uint64, n)
	for i := range src {
		src[i] = uint64(i)
	}
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		name := sizeName(uint64(nbytes))
		// Append: 1 MiB batches into reserved capacity (the allocation,
		// which a Slice pays once, untimed); Append-grow: from an empty
		// Slice, allocation and growth included.
		appendAll := func(b *testing.B, reserve bool) {
			b.SetBytes(int64(nbytes))
			for i := 0; i < b.N; i++ {
				var opts []vmem.SliceOption
				if reserve {
					opts = append(opts, vmem.WithCapacity(n))
					b.StopTimer()
				}
				s, err := vmem.NewSlice[uint64](d, 0, opts...)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for at := 0; at < n; at += 1 << 17 {
					if err := s.Append(src[at:min(n, at+1<<17)]...); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
		}
		b.Run("Append/"+name, func(b *testing.B) { appendAll(b, true) })
		b.Run("Append-grow/"+name, func(b *testing.B) { appendAll(b, false) })
		s, err := vmem.NewSlice[uint64](d, n)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.Run("CopyFrom/"+name, func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			for i := 0; i < b.N; i++ {
				if err := s.CopyFrom(src, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		dst := touchedHeap[uint64](n)
		b.Run("CopyTo/"+name, func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			for i := 0; i < b.N; i++ {
				if err := s.CopyTo(dst, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Chunks/"+name, func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			for i := 0; i < b.N; i++ {
				var x uint64
				for _, run := range s.Chunks() {
					for _, v := range run {
						x += v
					}
				}
				sink = x
			}
		})
		b.Run("All/"+name, func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			for i := 0; i < b.N; i++ {
				var x uint64
				for _, v := range s.All() {
					x += v
				}
				sink = x
			}
		})
		// Baselines on the Go heap: one goroutine's copy() (what CopyTo
		// would be if the data were already in host memory) and
		// slices.All, the iterator protocol alone (what All can be at best).
		b.Run("copy-heap/"+name, func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			for i := 0; i < b.N; i++ {
				copy(dst, src)
			}
		})
		b.Run("All-heap/"+name, func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			for i := 0; i < b.N; i++ {
				var x uint64
				for _, v := range slices.All(src) {
					x += v
				}
				sink = x
			}
		})
	})
}

// BenchmarkSliceAppendOne appends single elements (the write-combined path).
func BenchmarkSliceAppendOne(b *testing.B) {
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		s, err := vmem.NewSlice[uint64](d, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.SetBytes(8)
		for i := 0; i < b.N; i++ {
			if err := s.Append(uint64(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSliceHuge creates and fills a Slice of VMEM_HUGE_GIB GiB (the H200
// run uses 130): it runs only when that variable is set.
func TestSliceHuge(t *testing.T) {
	var gib int
	if _, err := fmt.Sscan(os.Getenv("VMEM_HUGE_GIB"), &gib); err != nil || gib <= 0 {
		t.Skip("set VMEM_HUGE_GIB to create a Slice that large")
	}
	d := vmemtest.Open(t, vmem.BackendVulkan, vmem.Options{})
	n := gib << 27 // uint64 elements
	s, err := vmem.NewSlice[uint64](d, n)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	buf := make([]uint64, 1<<24)
	for at := 0; at < n; at += len(buf) {
		k := min(len(buf), n-at)
		for i := range buf[:k] {
			buf[i] = uint64(at + i)
		}
		if err := s.CopyFrom(buf[:k], at); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range []int{0, n / 3, n / 2, n - 1} {
		if got := s.Get(i); got != uint64(i) {
			t.Fatalf("element %d = %d", i, got)
		}
	}
	t.Logf("Slice of %d GiB filled: %s", gib, d.Info())
}

// BenchmarkSliceGet8 reads random uint64 elements (Slice, naive, []T).
func BenchmarkSliceGet8(b *testing.B) {
	nbytes := benchBytes()
	n := nbytes / 8
	idx := randomIndices(n, 1<<20)
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		s, err := vmem.NewSlice[uint64](d, n)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		if err := s.Fill(3); err != nil {
			b.Fatal(err)
		}
		name := sizeName(uint64(nbytes))
		b.Run("govram/"+name, func(b *testing.B) {
			var sum uint64
			for i := 0; i < b.N; i++ {
				sum += s.Get(idx[i&(len(idx)-1)])
			}
			sink = sum
		})
		heap := touchedHeap[uint64](n)
		b.Run("heap/"+name, func(b *testing.B) {
			var sum uint64
			for i := 0; i < b.N; i++ {
				sum += heap[idx[i&(len(idx)-1)]]
			}
			sink = sum
		})
		b.Run("govram-set/"+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s.Set(idx[i&(len(idx)-1)], uint64(i))
			}
		})
		b.Run("heap-set/"+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				heap[idx[i&(len(idx)-1)]] = uint64(i)
			}
		})
	})
}
