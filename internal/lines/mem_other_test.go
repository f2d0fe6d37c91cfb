//go:build !unix

package lines

import (
	"testing"
	"unsafe"
)

// mapRegion returns n bytes of 4096-aligned heap memory where no mmap is.
func mapRegion(tb testing.TB, n int) []byte {
	b := make([]byte, n+4096)
	off := int(-uintptr(unsafe.Pointer(&b[0])) & 4095)
	return b[off : off+n : off+n]
}

func mapForever(tb testing.TB, n int) []byte { return mapRegion(tb, n) }
