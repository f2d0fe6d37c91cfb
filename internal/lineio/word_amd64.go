//go:build amd64 && !purego

package lineio

import "unsafe"

//go:noescape
func loadWord(p unsafe.Pointer) uint64

//go:noescape
func loadPair(p unsafe.Pointer) (lo, hi uint64)
