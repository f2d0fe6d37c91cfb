//go:build unix

package lines

import (
	"syscall"
	"testing"
)

// mapRegion returns n bytes of anonymous memory outside the Go heap,
// page-aligned, standing in for a mapping of VRAM.
func mapRegion(tb testing.TB, n int) []byte {
	tb.Helper()
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		tb.Fatalf("mmap %d bytes: %v", n, err)
	}
	tb.Cleanup(func() { _ = syscall.Munmap(b) })
	return b
}

// mapForever maps n bytes that stay mapped until the process ends, for
// regions shared by many benchmark runs.
func mapForever(tb testing.TB, n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		tb.Fatalf("mmap %d bytes: %v", n, err)
	}
	return b
}
