//go:build !amd64

package prefetch

import (
	"runtime"
	"unsafe"
)

// fetchLine loads a byte of p's line: a load whose result nothing waits
// for does not hold up the loads after it.
func fetchLine(p unsafe.Pointer) {
	runtime.KeepAlive(*(*byte)(p))
}

// fetchStrings loads the first and last byte of each string: without a prefetch
// instruction, loads that do not depend on each other still overlap. The
// sum is kept alive so that the loads are not removed (not stored: callers
// run on many goroutines at once).
func fetchStrings(p unsafe.Pointer, n int) {
	var t byte
	for _, s := range unsafe.Slice((*string)(p), n) {
		if len(s) > 0 {
			t += s[0] + s[len(s)-1]
		}
	}
	runtime.KeepAlive(t)
}

// fetchSpan loads a byte of each line of the n > 0 bytes at p: at p, every
// 64 bytes after it, and the last byte.
func fetchSpan(p unsafe.Pointer, n uintptr) {
	var t byte
	for off := uintptr(0); off < n; off += 64 {
		t += *(*byte)(unsafe.Add(p, off))
	}
	t += *(*byte)(unsafe.Add(p, n-1))
	runtime.KeepAlive(t)
}
