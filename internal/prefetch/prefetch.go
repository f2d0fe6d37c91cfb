// Package prefetch asks the CPU to start fetching memory a loop will read
// soon, without waiting for it.
//
// A batch of string keys picked from a large Go heap misses every cache and
// the TLB once per key. A loop that hashes each key in turn waits for each
// key's lines alone; issuing the fetches of keys a few dozen places ahead
// keeps many misses in flight at once. A prefetch instruction, unlike a
// load, never blocks the loop or faults, so it can run as far ahead as
// wanted.
package prefetch

import "unsafe"

// Line starts fetching the cache line that holds p.
func Line(p unsafe.Pointer) { fetchLine(p) }

// Span starts fetching the cache lines that hold the n bytes at p.
func Span(p unsafe.Pointer, n uintptr) {
	if n > 0 {
		fetchSpan(p, n)
	}
}

// Strings starts fetching the first and last byte of each of ss's strings.
func Strings(ss []string) {
	if len(ss) > 0 {
		fetchStrings(unsafe.Pointer(unsafe.SliceData(ss)), len(ss))
	}
}
