package main

// The only pointer arithmetic of the program: viewing a device block as
// typed Go memory, which is what the naive path does by definition.

import (
	"unsafe"

	"github.com/govram/govram/internal/block"
)

// blockU64s views a mapped or host block as []uint64. Valid because blocks
// are at least 64-byte aligned and their memory lives outside the Go heap
// until Free, which the caller does only after dropping the slice.
func blockU64s(b block.Block) []uint64 {
	p := b.Ptr()
	if p == nil {
		return nil
	}
	return unsafe.Slice((*uint64)(p), b.Size()/8)
}
