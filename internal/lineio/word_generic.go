//go:build !amd64 || purego

package lineio

import "unsafe"

func loadWord(p unsafe.Pointer) uint64 { return *(*uint64)(p) }

func loadPair(p unsafe.Pointer) (lo, hi uint64) {
	return *(*uint64)(p), *(*uint64)(unsafe.Add(p, 8))
}

func countLE(keys *[64]uint64, n int, ko, flip uint64) int { return goCountLE(keys, n, ko, flip) }
