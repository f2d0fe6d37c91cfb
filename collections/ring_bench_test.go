package collections

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// Benchmarks of Ring against the baselines: a buffered Go channel, a ring
// on a Go slice in the heap ("heap"), and the naive path ("naive": the same
// layout in mapped memory, read and written with plain Go loads and stores,
// indexes published with an atomic store per operation).
//
// Sizes are element counts (uint64 elements) or byte sizes in MiB. The
// default is 1e5; set VMEM_BENCH_SIZES=1e6,1e7,64MiB,256MiB for the large
// runs (the PopBatch target is stated for runs of 64 MiB and more; sizes in
// MiB skip the naive and channel baselines, which take seconds there).
// VMEM_RING_DMA=piece_MiB,workers overrides how PopBatch splits long DMA
// reads (default 16,3), to tune it on new hardware.

type ringBenchSize struct {
	n    int // uint64 elements
	name string
	big  bool // given in MiB: no slow baselines
}

func ringBenchSizes(b *testing.B) []ringBenchSize {
	ringBenchDMAKnobs(b)
	env := os.Getenv("VMEM_BENCH_SIZES")
	if env == "" {
		return []ringBenchSize{{n: 1e5, name: "1e5"}}
	}
	var out []ringBenchSize
	for _, f := range strings.Split(env, ",") {
		f = strings.TrimSpace(f)
		if mib, ok := strings.CutSuffix(f, "MiB"); ok {
			v, err := strconv.Atoi(mib)
			if err != nil || v < 1 {
				b.Fatalf("VMEM_BENCH_SIZES: bad size %q", f)
			}
			out = append(out, ringBenchSize{n: v << 20 / 8, name: f, big: true})
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v < 1 {
			b.Fatalf("VMEM_BENCH_SIZES: bad size %q", f)
		}
		out = append(out, ringBenchSize{n: int(v), name: ringSizeName(int(v))})
	}
	return out
}

// ringBenchDMAKnobs applies VMEM_RING_DMA.
func ringBenchDMAKnobs(b *testing.B) {
	env := os.Getenv("VMEM_RING_DMA")
	if env == "" {
		return
	}
	piece, workers, ok := strings.Cut(env, ",")
	p, err1 := strconv.Atoi(piece)
	w, err2 := strconv.Atoi(workers)
	if !ok || err1 != nil || err2 != nil || p < 1 || w < 1 {
		b.Fatalf("VMEM_RING_DMA: want piece_MiB,workers, got %q", env)
	}
	ringDMAPiece, ringDMAWorkers = uint64(p)<<20, w
}

func ringSizeName(n int) string {
	s := strconv.Itoa(n)
	if z := len(s) - len(strings.TrimRight(s, "0")); z > 0 && strings.TrimRight(s, "0") == "1" {
		return "1e" + strconv.Itoa(z)
	}
	return s
}

func ringBenchEach(b *testing.B, f func(b *testing.B, d *vmem.Device)) {
	for _, be := range vmemtest.Backends() {
		b.Run(string(be), func(b *testing.B) {
			f(b, vmemtest.Open(b, be, vmem.Options{}))
		})
	}
}

var ringSink uint64

// ringHeapRing is the heap baseline: a power-of-two ring on a Go slice,
// safe for one producer and one consumer (atomic indexes, as Ring).
type ringHeapRing struct {
	buf        []uint64
	mask       uint64
	head, tail atomic.Uint64
}

func ringNewHeap(n int) *ringHeapRing {
	c := 1
	for c < n {
		c *= 2
	}
	return &ringHeapRing{buf: make([]uint64, c), mask: uint64(c - 1)}
}

func (q *ringHeapRing) push(v uint64) bool {
	t := q.tail.Load()
	if t-q.head.Load() > q.mask {
		return false
	}
	q.buf[t&q.mask] = v
	q.tail.Store(t + 1)
	return true
}

func (q *ringHeapRing) pop() (uint64, bool) {
	h := q.head.Load()
	if h == q.tail.Load() {
		return 0, false
	}
	v := q.buf[h&q.mask]
	q.head.Store(h + 1)
	return v, true
}

// pushBatch and popBatch copy with at most one wrap.
func (q *ringHeapRing) pushBatch(vs []uint64) {
	t := q.tail.Load()
	k := copy(q.buf[t&q.mask:], vs)
	copy(q.buf, vs[k:])
	q.tail.Store(t + uint64(len(vs)))
}

func (q *ringHeapRing) popBatch(dst []uint64) {
	h := q.head.Load()
	k := copy(dst, q.buf[h&q.mask:])
	copy(dst[k:], q.buf)
	q.head.Store(h + uint64(len(dst)))
}

// ringNaive is the naive path: the same ring in a mapped block, plain Go
// loads and stores on it.
type ringNaive struct {
	buf        []uint64 // over the mapped block
	n          uint64
	head, tail atomic.Uint64
}

func ringNewNaive(b *testing.B, d *vmem.Device, n int) (*ringNaive, func()) {
	blk, err := kdev(d).Alloc(block.Mapped, uint64(n)*8, 64)
	if err != nil {
		b.Fatal(err)
	}
	return &ringNaive{buf: unsafe.Slice((*uint64)(blk.Ptr()), n), n: uint64(n)}, func() { kdev(d).Free(blk) }
}

func (q *ringNaive) push(v uint64) {
	t := q.tail.Load()
	q.buf[t%q.n] = v
	q.tail.Store(t + 1)
}

func (q *ringNaive) pop() uint64 {
	h := q.head.Load()
	v := q.buf[h%q.n]
	q.head.Store(h + 1)
	return v
}

func (q *ringNaive) pushBatch(vs []uint64) {
	t := q.tail.Load()
	k := copy(q.buf[t%q.n:], vs)
	copy(q.buf, vs[k:])
	q.tail.Store(t + uint64(len(vs)))
}

func (q *ringNaive) popBatch(dst []uint64) {
	h := q.head.Load()
	k := copy(dst, q.buf[h%q.n:])
	copy(dst[k:], q.buf)
	q.head.Store(h + uint64(len(dst)))
}

// ringSkipSlow skips a baseline that would take seconds an operation (a
// channel moves about 50 MB/s; plain Go loads of VRAM about 60 MB/s).
func ringSkipSlow(b *testing.B, sz ringBenchSize) {
	if sz.n > 1e7 || sz.big {
		b.Skipf("%s: too slow for this baseline", sz.name)
	}
}

// ringPinned returns n uint64s of pinned host memory (a vmem.Host block).
func ringPinned(b *testing.B, d *vmem.Device, n int) ([]uint64, func()) {
	blk, err := kdev(d).Alloc(block.Host, uint64(n)*8, 64)
	if err != nil {
		b.Fatal(err)
	}
	return ringTouch(unsafe.Slice((*uint64)(blk.Ptr()), n)), func() { kdev(d).Free(blk) }
}

// ringTouch writes every page of s once, so that no benchmark pays the
// first-touch page faults.
func ringTouch(s []uint64) []uint64 {
	for i := 0; i < len(s); i += 512 {
		s[i] = 1
	}
	return s
}

func ringNew(b *testing.B, d *vmem.Device, n int, p ringPolicy) *Ring[uint64] {
	r, err := NewRing[uint64](d, n, withPolicy(p))
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkRingPush pushes single uint64s into a ring of 1<<20 (8 MiB);
// Ring uses ringOverwriteOldest so the producer runs alone in steady state
// (target on an H200: at most 20 ns a push). The baselines are drained,
// off the clock, when full.
func BenchmarkRingPush(b *testing.B) {
	const n = 1 << 20
	ringBenchEach(b, func(b *testing.B, d *vmem.Device) {
		b.Run("govram", func(b *testing.B) {
			r := ringNew(b, d, n, ringOverwriteOldest)
			defer r.Close()
			b.SetBytes(8)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.Push(uint64(i))
			}
		})
		// Wider elements: the target holds for 8- to 64-byte elements.
		b.Run("govram-16B", func(b *testing.B) { ringBenchPushWide[[2]uint64](b, d, n) })
		b.Run("govram-64B", func(b *testing.B) { ringBenchPushWide[[8]uint64](b, d, n/8) })
		b.Run("govram-errfull", func(b *testing.B) {
			r := ringNew(b, d, n, ringErrorWhenFull)
			defer r.Close()
			b.SetBytes(8)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if r.Push(uint64(i)) != nil {
					b.StopTimer()
					r.Clear()
					b.StartTimer()
					r.Push(uint64(i))
				}
			}
		})
		b.Run("naive", func(b *testing.B) {
			q, free := ringNewNaive(b, d, n)
			defer free()
			b.SetBytes(8)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q.push(uint64(i))
			}
		})
		b.Run("heap", func(b *testing.B) {
			q := ringNewHeap(n)
			b.SetBytes(8)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !q.push(uint64(i)) {
					b.StopTimer()
					q.head.Store(q.tail.Load())
					b.StartTimer()
					q.push(uint64(i))
				}
			}
		})
		b.Run("chan", func(b *testing.B) {
			ch := make(chan uint64, n)
			b.SetBytes(8)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				select {
				case ch <- uint64(i):
				default:
					b.StopTimer()
					for len(ch) > 0 {
						<-ch
					}
					b.StartTimer()
					ch <- uint64(i)
				}
			}
		})
	})
}

// ringBenchPushWide pushes single elements of type A (an array of uint64)
// into an ringOverwriteOldest ring of n.
func ringBenchPushWide[A ~[2]uint64 | ~[8]uint64](b *testing.B, d *vmem.Device, n int) {
	r, err := NewRing[A](d, n, withPolicy(ringOverwriteOldest))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var v A
	b.SetBytes(int64(unsafe.Sizeof(v)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v[0] = uint64(i)
		r.Push(v)
	}
}

// BenchmarkRingPop pops single uint64s from a ring of 1<<20 elements,
// refilled off the clock when empty (target on an H200: at most 250 ns).
func BenchmarkRingPop(b *testing.B) {
	const n = 1 << 20
	src := make([]uint64, n)
	for i := range src {
		src[i] = uint64(i)
	}
	ringBenchEach(b, func(b *testing.B, d *vmem.Device) {
		b.Run("govram", func(b *testing.B) {
			r := ringNew(b, d, n, ringErrorWhenFull)
			defer r.Close()
			b.SetBytes(8)
			b.ResetTimer()
			var sum uint64
			for i := 0; i < b.N; i++ {
				v, ok := r.Pop()
				if !ok {
					b.StopTimer()
					r.PushBatch(src)
					b.StartTimer()
					v, _ = r.Pop()
				}
				sum += v
			}
			ringSink = sum
		})
		b.Run("naive", func(b *testing.B) {
			q, free := ringNewNaive(b, d, n)
			defer free()
			q.pushBatch(src)
			b.SetBytes(8)
			b.ResetTimer()
			var sum uint64
			for i := 0; i < b.N; i++ {
				// Always full: the pops wrap round the same memory.
				sum += q.pop()
			}
			ringSink = sum
		})
		b.Run("heap", func(b *testing.B) {
			q := ringNewHeap(n)
			b.SetBytes(8)
			b.ResetTimer()
			var sum uint64
			for i := 0; i < b.N; i++ {
				v, ok := q.pop()
				if !ok {
					b.StopTimer()
					q.pushBatch(src)
					b.StartTimer()
					v, _ = q.pop()
				}
				sum += v
			}
			ringSink = sum
		})
		b.Run("chan", func(b *testing.B) {
			ch := make(chan uint64, n)
			b.SetBytes(8)
			b.ResetTimer()
			var sum uint64
			for i := 0; i < b.N; i++ {
				select {
				case v := <-ch:
					sum += v
				default:
					b.StopTimer()
					for _, v := range src {
						ch <- v
					}
					b.StartTimer()
					sum += <-ch
				}
			}
			ringSink = sum
		})
	})
}

// BenchmarkRingPushBatch pushes batches of size uint64s into a ring of the
// same size (target on an H200: at least 20 GB/s).
func BenchmarkRingPushBatch(b *testing.B) {
	ringBenchEach(b, func(b *testing.B, d *vmem.Device) {
		for _, sz := range ringBenchSizes(b) {
			n, name := sz.n, sz.name
			src := make([]uint64, n)
			for i := range src {
				src[i] = uint64(i)
			}
			b.Run("govram/"+name, func(b *testing.B) {
				r := ringNew(b, d, n, ringOverwriteOldest)
				defer r.Close()
				b.SetBytes(int64(n) * 8)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := r.PushBatch(src); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("naive/"+name, func(b *testing.B) {
				q, free := ringNewNaive(b, d, n)
				defer free()
				b.SetBytes(int64(n) * 8)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					q.pushBatch(src)
				}
			})
			b.Run("heap/"+name, func(b *testing.B) {
				q := ringNewHeap(n)
				b.SetBytes(int64(n) * 8)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					q.head.Store(q.tail.Load())
					q.pushBatch(src)
				}
			})
			b.Run("chan/"+name, func(b *testing.B) {
				ringSkipSlow(b, sz)
				ch := make(chan uint64, n)
				b.SetBytes(int64(n) * 8)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for _, v := range src {
						ch <- v
					}
					b.StopTimer()
					for len(ch) > 0 {
						<-ch
					}
					b.StartTimer()
				}
			})
		}
	})
}

// BenchmarkRingPopBatch pops whole rings of size uint64s in one PopBatch,
// refilled off the clock: into pinned host memory ("govram-pinned", the
// direct DMA path; target on an H200 for 64 MiB and more: at least
// 45 GB/s) and into the Go heap ("govram").
func BenchmarkRingPopBatch(b *testing.B) {
	ringBenchEach(b, func(b *testing.B, d *vmem.Device) {
		for _, sz := range ringBenchSizes(b) {
			n, size := sz.n, sz.name
			src := make([]uint64, n)
			for i := range src {
				src[i] = uint64(i)
			}
			heapDst := ringTouch(make([]uint64, n))
			run := func(name string, dst []uint64) {
				b.Run(name+"/"+size, func(b *testing.B) {
					r := ringNew(b, d, n, ringErrorWhenFull)
					defer r.Close()
					b.SetBytes(int64(n) * 8)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						b.StopTimer()
						r.PushBatch(src)
						b.StartTimer()
						if k, err := r.PopBatch(dst); k != n || err != nil {
							b.Fatalf("PopBatch: %d, %v", k, err)
						}
					}
				})
			}
			pinned, free := ringPinned(b, d, n)
			defer free()
			run("govram-pinned", pinned)
			run("govram", heapDst)
			b.Run("naive/"+size, func(b *testing.B) {
				ringSkipSlow(b, sz)
				q, free := ringNewNaive(b, d, n)
				defer free()
				q.pushBatch(src)
				b.SetBytes(int64(n) * 8)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					q.popBatch(heapDst) // always full: wraps round the same memory
				}
			})
			b.Run("heap/"+size, func(b *testing.B) {
				q := ringNewHeap(n)
				b.SetBytes(int64(n) * 8)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					q.pushBatch(src)
					b.StartTimer()
					q.popBatch(heapDst)
				}
			})
			b.Run("chan/"+size, func(b *testing.B) {
				ringSkipSlow(b, sz)
				ch := make(chan uint64, n)
				b.SetBytes(int64(n) * 8)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					for _, v := range src {
						ch <- v
					}
					b.StartTimer()
					for j := range heapDst {
						heapDst[j] = <-ch
					}
				}
			})
		}
	})
}

// BenchmarkRingSPSC moves uint64s from a producer goroutine to a consumer
// goroutine through a ring of 4096, one element at a time, against a
// channel of the same capacity and the heap ring.
func BenchmarkRingSPSC(b *testing.B) {
	const n = 4096
	ringBenchEach(b, func(b *testing.B, d *vmem.Device) {
		b.Run("govram", func(b *testing.B) {
			r := ringNew(b, d, n, ringErrorWhenFull)
			defer r.Close()
			b.SetBytes(8)
			b.ResetTimer()
			ringSPSC(b, func(v uint64) bool { return r.Push(v) == nil }, r.Pop, func() { r.Flush() })
		})
		b.Run("heap", func(b *testing.B) {
			q := ringNewHeap(n)
			b.SetBytes(8)
			b.ResetTimer()
			ringSPSC(b, q.push, q.pop, func() {})
		})
		b.Run("chan", func(b *testing.B) {
			ch := make(chan uint64, n)
			b.SetBytes(8)
			b.ResetTimer()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < b.N; i++ {
					ch <- uint64(i)
				}
			}()
			var sum uint64
			for i := 0; i < b.N; i++ {
				sum += <-ch
			}
			wg.Wait()
			ringSink = sum
		})
	})
}

func ringSPSC(b *testing.B, push func(uint64) bool, pop func() (uint64, bool), flush func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < b.N; i++ {
			for !push(uint64(i)) {
				runtime.Gosched()
			}
		}
		flush() // the consumer waits for the last element
	}()
	var sum uint64
	for i := 0; i < b.N; {
		v, ok := pop()
		if !ok {
			runtime.Gosched()
			continue
		}
		if v != uint64(i) {
			b.Errorf("popped %d, want %d", v, i)
			break
		}
		sum += v
		i++
	}
	wg.Wait()
	ringSink = sum
}

// BenchmarkRingPushPop256 alternates PushBatch and PopBatch of 256 uint64s
// (2 KiB: streaming loads, no DMA), the shape of a consumer that keeps up.
func BenchmarkRingPushPop256(b *testing.B) {
	const k = 256
	src := make([]uint64, k)
	dst := make([]uint64, k)
	ringBenchEach(b, func(b *testing.B, d *vmem.Device) {
		b.Run("govram", func(b *testing.B) {
			r := ringNew(b, d, 1<<16, ringErrorWhenFull)
			defer r.Close()
			b.SetBytes(k * 8)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.PushBatch(src); err != nil {
					b.Fatal(err)
				}
				if n, err := r.PopBatch(dst); n != k || err != nil {
					b.Fatalf("PopBatch: %d, %v", n, err)
				}
			}
		})
		b.Run("heap", func(b *testing.B) {
			q := ringNewHeap(1 << 16)
			b.SetBytes(k * 8)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q.pushBatch(src)
				q.popBatch(dst)
			}
		})
	})
}
