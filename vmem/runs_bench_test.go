package vmem_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/vmem"
)

// BenchmarkLineRuns times what a scan that misses every cache pays for its
// leaves: runs of L contiguous lines (a Range of 100 uint64 pairs reads
// about 33 lines in four or five adjacent leaves) at random places of a
// mapped window, each run's place depending on every line of the run
// before, so runs do not overlap one another.
//
//	run<L>           one goroutine loads the run (lineio.LoadLines)
//	run<L>-interleave4
//	                 one goroutine loads the run's lines in the order of
//	                 four interleaved quarters (lineio.Gather): whether the
//	                 order of the addresses, not the core, bounds the rate
//	run<L>-split<k>  the run cut into k contiguous parts, loaded at once by
//	                 the caller and k-1 helper goroutines that spin waiting
//	                 for work: the best a scan could get from lending its
//	                 misses to other cores (no wake-up cost)
//
// Windows: VMEM_LAT_MIB (default 16 MiB and the Slice benchmarks' size).
func BenchmarkLineRuns(b *testing.B) {
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		for _, nbytes := range latencyWindows() {
			addr, free := lineWindow(b, d, nbytes)
			idx := randomIndices(nbytes/64, 1<<20)
			name := sizeName(uint64(nbytes))
			for _, l := range []int{8, 16, 32, 64} {
				b.Run(fmt.Sprintf("run%d/%s", l, name), func(b *testing.B) {
					lineRuns(b, l, 1, idx, addr)
				})
				b.Run(fmt.Sprintf("run%d-interleave4/%s", l, name), func(b *testing.B) {
					lineRunsInterleaved(b, l, idx, addr)
				})
				for _, k := range []int{2, 4, 8} {
					if l/k < 2 || runtime.GOMAXPROCS(0) < 2*k {
						continue // parts of one line, or helpers without cores of their own
					}
					b.Run(fmt.Sprintf("run%d-split%d/%s", l, k, name), func(b *testing.B) {
						lineRuns(b, l, k, idx, addr)
					})
				}
			}
			free()
		}
	})
}

// runHelpers are k-1 goroutines that each load their part of the run the
// caller publishes: the caller bumps gen, each helper loads part i of the
// run at start and adds one to done.
type runHelpers struct {
	start atomic.Pointer[byte] // the run's first line
	_     [56]byte
	gen   atomic.Uint64
	_     [56]byte
	done  atomic.Uint64
	_     [56]byte
	stop  atomic.Bool
	wg    sync.WaitGroup
}

func lineRuns(b *testing.B, l, k int, idx []int, addr func(int) unsafe.Pointer) {
	n := len(idx)
	dst := make([]byte, l*64+64)
	off := int(-uintptr(unsafe.Pointer(&dst[0])) & 63)
	dst = dst[off : off+l*64]
	part := l / k * 64
	h := &runHelpers{}
	for i := 1; i < k; i++ {
		h.wg.Go(func() {
			seen := uint64(0)
			for !h.stop.Load() {
				g := h.gen.Load()
				if g == seen {
					continue // spin: a helper's cost is its core
				}
				seen = g
				lo := i * part
				hi := min(lo+part, l*64)
				if i == k-1 {
					hi = l * 64
				}
				lineio.LoadLines(dst[lo:hi], unsafe.Add(unsafe.Pointer(h.start.Load()), lo))
				h.done.Add(1)
			}
		})
	}
	defer func() {
		h.stop.Store(true)
		h.wg.Wait()
	}()
	mask := ^(l - 1)
	var w uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := (idx[i&(n-1)] ^ int(w>>63)) & mask
		src := addr(j)
		if k == 1 {
			lineio.LoadLines(dst, src)
		} else {
			h.start.Store((*byte)(src))
			h.gen.Add(1)
			lineio.LoadLines(dst[:part], src)
			for want := uint64(i+1) * uint64(k-1); h.done.Load() != want; {
			}
		}
		w = runFold(dst)
	}
	runDone(b, w, l)
}

// runFold returns the first words of the run's lines or-ed together: the
// next run's place depends on every line of this one.
func runFold(dst []byte) uint64 {
	var w uint64
	for p := 0; p < len(dst); p += 64 {
		w |= *(*uint64)(unsafe.Pointer(&dst[p]))
	}
	return w
}

// runDone ends a runs row: its result kept, its time a line reported.
func runDone(b *testing.B, w uint64, l int) {
	b.StopTimer()
	sink = w
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(l), "ns/line")
}

// lineRunsInterleaved is lineRuns with one goroutine loading each run's
// lines as four interleaved quarters: line 0, l/4, l/2, 3l/4, 1, ...
func lineRunsInterleaved(b *testing.B, l int, idx []int, addr func(int) unsafe.Pointer) {
	n := len(idx)
	dst := make([]byte, l*64)
	srcs := make([]unsafe.Pointer, l)
	order := make([]int, 0, l)
	for i := range l / 4 {
		for q := range 4 {
			order = append(order, q*(l/4)+i)
		}
	}
	mask := ^(l - 1)
	var w uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := (idx[i&(n-1)] ^ int(w>>63)) & mask
		for x, o := range order {
			srcs[x] = addr(j + o)
		}
		lineio.Gather(dst, srcs)
		w = runFold(dst)
	}
	runDone(b, w, l)
}
