// Package hostmem maps anonymous memory outside the Go heap. The garbage
// collector never scans or moves it, which is what lets govram hold hundreds
// of gigabytes of host-side state at no GC cost.
package hostmem

import (
	"fmt"
	"syscall"
	"unsafe"
)

// PageSize is the system page size.
var PageSize = uint64(syscall.Getpagesize())

// Map returns size bytes of zeroed, private, anonymous memory. size is
// rounded up to a page. Pages are committed by the kernel on first touch.
func Map(size uint64) (unsafe.Pointer, error) {
	size = (size + PageSize - 1) &^ (PageSize - 1)
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	if size >= hugePage {
		// Transparent huge pages cut first-touch faults 512-fold; a hint only.
		_ = syscall.Madvise(b, madvHugepage)
	}
	return unsafe.Pointer(unsafe.SliceData(b)), nil
}

const (
	hugePage     = 2 << 20
	madvHugepage = 14 // MADV_HUGEPAGE
)

// Unmap releases memory returned by Map with the same size.
func Unmap(p unsafe.Pointer, size uint64) error {
	size = (size + PageSize - 1) &^ (PageSize - 1)
	return syscall.Munmap(unsafe.Slice((*byte)(p), size))
}

// Bytes views n bytes at p as a slice. p must point into memory from Map (or
// other memory outside the Go heap) that stays mapped while the slice is used.
func Bytes(p unsafe.Pointer, n uint64) []byte {
	return unsafe.Slice((*byte)(p), n)
}

// Add offsets p by off bytes; the result must stay inside p's mapping.
func Add(p unsafe.Pointer, off uint64) unsafe.Pointer {
	return unsafe.Add(p, uintptr(off))
}

// TotalRAM returns the machine's physical memory in bytes (0 if unknown).
func TotalRAM() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
