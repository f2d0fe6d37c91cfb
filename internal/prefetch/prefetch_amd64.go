package prefetch

import "unsafe"

// fetchLine issues PREFETCHT0 for p (prefetch_amd64.s).
//
//go:noescape
func fetchLine(p unsafe.Pointer)

// fetchStrings issues PREFETCHT0 for the first and last byte of each of the n
// string headers at p (prefetch_amd64.s).
//
//go:noescape
func fetchStrings(p unsafe.Pointer, n int)

// fetchSpan issues PREFETCHT0 for each line of the n > 0 bytes at p
// (prefetch_amd64.s).
//
//go:noescape
func fetchSpan(p unsafe.Pointer, n uintptr)
