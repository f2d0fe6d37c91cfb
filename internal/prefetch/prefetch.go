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

// Translate starts the translation of p's address where the CPU can do
// so without reading p: on amd64, a prefetch of write-combining memory
// (mapped VRAM) reads nothing but translates its address, a page walk
// that a load of a large window of VRAM otherwise pays after the load
// starts. Elsewhere it does nothing: a load of device memory would wait
// for a round trip. p may be any address; nothing faults.
func Translate(p unsafe.Pointer) { translate(p) }

// Strings starts fetching the first and last byte of each of ss's strings.
func Strings(ss []string) {
	if len(ss) > 0 {
		fetchStrings(unsafe.Pointer(unsafe.SliceData(ss)), len(ss))
	}
}
