package vmem

import (
	"unsafe"

	"github.com/govram/govram/internal/hostmem"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/par"
)

// parallelMin: copies at least this large are split over goroutines; one
// core moves a fraction of what the link and memory take (docs/physics.md).
const parallelMin = 8 << 20

// copyParts bounds the parts of a bulk copy (par.Lines, par.Copy): the
// link takes no more than 16 cores' stores.
const copyParts = 16

// memcpy copies cacheable memory (the Go heap, host tiers).
func memcpy(dst, src unsafe.Pointer, n uint64) {
	if n < parallelMin {
		hostCopy(dst, src, n)
		return
	}
	par.Copy(dst, src, n, 1<<20, copyParts, hostCopy)
}

// hostCopy copies n bytes of cacheable memory on the calling goroutine.
func hostCopy(dst, src unsafe.Pointer, n uint64) {
	copy(hostmem.Bytes(dst, n), hostmem.Bytes(src, n))
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
		par.Copy(dst, src, n, wcParallelMin/4, copyParts, wcCopyFenced)
	}
	lineio.Fence()
}

// wcCopyFenced is a part of a parallel wcCopy: each worker fences its own
// stores (a fence orders only its own core's).
func wcCopyFenced(dst, src unsafe.Pointer, n uint64) {
	lineio.Copy(dst, src, uintptr(n))
	lineio.Fence()
}
