//go:build !amd64 || purego

package lineio

import (
	"sync/atomic"
	"unsafe"
)

func bestKind() int { return kindGeneric }

func supported(k int) bool { return k == kindGeneric }

func load(dst *[LineSize]byte, src unsafe.Pointer)    { goLoad(dst, src) }
func loadFloor(dst *[LineSize]byte, p unsafe.Pointer) { goLoadFloor(dst, p) }
func store(dst unsafe.Pointer, src *[LineSize]byte)   { goStore(dst, src) }
func loadLines(dst *byte, src unsafe.Pointer, n int)  { goLoadLines(dst, src, n) }
func storeLines(dst unsafe.Pointer, src *byte, n int) { goStoreLines(dst, src, n) }
func gather(dst *byte, srcs *unsafe.Pointer, n int)   { goGather(dst, srcs, n) }
func copyLines(dst, src unsafe.Pointer, n int)        { goCopyLines(dst, src, n) }
func scatter(dsts *unsafe.Pointer, src *byte, n int)  { goScatter(dsts, src, n) }

var fenceWord atomic.Uint32

// Without assembly the strongest portable barrier is a sequentially
// consistent atomic operation: it orders the plain stores before it for
// every other goroutine.
func sfence() { fenceWord.Add(1) }

func mfence() { fenceWord.Add(1) }
