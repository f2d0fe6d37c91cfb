package vmem

import (
	"runtime"
	"unsafe"

	"github.com/govram/govram/internal/hostmem"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/par"
)

// parallelMin: copies at least this large are split over goroutines; one
// core moves 10-20 GB/s, the link and memory take two to four times that.
const parallelMin = 8 << 20

// parallel runs f over [0, n) in 64-byte-aligned parts of at least minPart
// bytes, on up to GOMAXPROCS (at most 16) goroutines, the caller's and
// par's kept workers.
func parallel(n, minPart uint64, f func(off, size uint64)) {
	workers := min(uint64(runtime.GOMAXPROCS(0)), 16, n/max(minPart, 1))
	if workers <= 1 {
		f(0, n)
		return
	}
	part := roundUp((n+workers-1)/workers, 64)
	par.Run(int((n+part-1)/part), func(i int) {
		off := uint64(i) * part
		f(off, min(part, n-off))
	})
}

// memcpy copies cacheable memory (the Go heap, host tiers).
func memcpy(dst, src unsafe.Pointer, n uint64) {
	if n < parallelMin {
		copy(hostmem.Bytes(dst, n), hostmem.Bytes(src, n))
		return
	}
	parallel(n, 1<<20, func(off, size uint64) {
		copy(hostmem.Bytes(hostmem.Add(dst, off), size), hostmem.Bytes(hostmem.Add(src, off), size))
	})
}

// wcParallelMin: copies to or from write-combining VRAM of at least this
// many bytes are split over goroutines in parts of at least a quarter of
// it. One core's non-temporal stores reach about a third of what the link
// takes (docs/physics.md; BenchmarkSliceBulk measures it).
const wcParallelMin = 1 << 20

// wcCopy copies to or from write-combining VRAM with whole-line streaming
// loads and non-temporal stores, then fences so the stores are visible
// before anything that follows (a DMA, another thread's read).
func wcCopy(dst, src unsafe.Pointer, n uint64) {
	if n < wcParallelMin {
		lineio.Copy(dst, src, uintptr(n))
	} else {
		parallel(n, wcParallelMin/4, func(off, size uint64) {
			lineio.Copy(hostmem.Add(dst, off), hostmem.Add(src, off), uintptr(size))
			lineio.Fence()
		})
	}
	lineio.Fence()
}
