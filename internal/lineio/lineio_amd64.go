//go:build amd64 && !purego

package lineio

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

func bestKind() int {
	switch {
	case cpu.X86.HasAVX512F: // also means the OS saves Z registers
		return kindAVX512
	case cpu.X86.HasAVX2:
		return kindAVX2
	case cpu.X86.HasSSE41:
		return kindSSE41
	}
	return kindGeneric
}

func supported(k int) bool { return k >= kindGeneric && k <= bestKind() }

// The assembly routines, one set per variant (suffix: register width in
// bits). They trust their callers: alignment and lengths are checked in
// lineio.go, and n is at least 1.

//go:noescape
func load512(dst *[LineSize]byte, src unsafe.Pointer)

//go:noescape
func load256(dst *[LineSize]byte, src unsafe.Pointer)

//go:noescape
func load128(dst *[LineSize]byte, src unsafe.Pointer)

// loadFloor* read the line that contains p, which need not be aligned.

//go:noescape
func loadFloor512(dst *[LineSize]byte, p unsafe.Pointer)

//go:noescape
func loadFloor256(dst *[LineSize]byte, p unsafe.Pointer)

//go:noescape
func loadFloor128(dst *[LineSize]byte, p unsafe.Pointer)

//go:noescape
func store512(dst unsafe.Pointer, src *[LineSize]byte)

//go:noescape
func store256(dst unsafe.Pointer, src *[LineSize]byte)

//go:noescape
func store128(dst unsafe.Pointer, src *[LineSize]byte)

//go:noescape
func loadLines512(dst *byte, src unsafe.Pointer, n int)

//go:noescape
func loadLines256(dst *byte, src unsafe.Pointer, n int)

//go:noescape
func loadLines128(dst *byte, src unsafe.Pointer, n int)

//go:noescape
func storeLines512(dst unsafe.Pointer, src *byte, n int)

//go:noescape
func storeLines256(dst unsafe.Pointer, src *byte, n int)

//go:noescape
func storeLines128(dst unsafe.Pointer, src *byte, n int)

//go:noescape
func gather512(dst *byte, srcs *unsafe.Pointer, n int)

//go:noescape
func gather256(dst *byte, srcs *unsafe.Pointer, n int)

//go:noescape
func gather128(dst *byte, srcs *unsafe.Pointer, n int)

//go:noescape
func scatter512(dsts *unsafe.Pointer, src *byte, n int)

//go:noescape
func scatter256(dsts *unsafe.Pointer, src *byte, n int)

//go:noescape
func scatter128(dsts *unsafe.Pointer, src *byte, n int)

// copyLines* move n aligned lines from src to dst: streaming loads straight
// into NT stores, no host buffer between.

//go:noescape
func copyLines512(dst, src unsafe.Pointer, n int)

//go:noescape
func copyLines256(dst, src unsafe.Pointer, n int)

//go:noescape
func copyLines128(dst, src unsafe.Pointer, n int)

func sfence()

func mfence()

func load(dst *[LineSize]byte, src unsafe.Pointer) {
	switch kind {
	case kindAVX512:
		load512(dst, src)
	case kindAVX2:
		load256(dst, src)
	case kindSSE41:
		load128(dst, src)
	default:
		goLoad(dst, src)
	}
}

func loadFloor(dst *[LineSize]byte, p unsafe.Pointer) {
	switch kind {
	case kindAVX512:
		loadFloor512(dst, p)
	case kindAVX2:
		loadFloor256(dst, p)
	case kindSSE41:
		loadFloor128(dst, p)
	default:
		goLoadFloor(dst, p)
	}
}

func store(dst unsafe.Pointer, src *[LineSize]byte) {
	switch kind {
	case kindAVX512:
		store512(dst, src)
	case kindAVX2:
		store256(dst, src)
	case kindSSE41:
		store128(dst, src)
	default:
		goStore(dst, src)
	}
}

func loadLines(dst *byte, src unsafe.Pointer, n int) {
	switch kind {
	case kindAVX512:
		loadLines512(dst, src, n)
	case kindAVX2:
		loadLines256(dst, src, n)
	case kindSSE41:
		loadLines128(dst, src, n)
	default:
		goLoadLines(dst, src, n)
	}
}

func storeLines(dst unsafe.Pointer, src *byte, n int) {
	switch kind {
	case kindAVX512:
		storeLines512(dst, src, n)
	case kindAVX2:
		storeLines256(dst, src, n)
	case kindSSE41:
		storeLines128(dst, src, n)
	default:
		goStoreLines(dst, src, n)
	}
}

func gather(dst *byte, srcs *unsafe.Pointer, n int) {
	switch kind {
	case kindAVX512:
		gather512(dst, srcs, n)
	case kindAVX2:
		gather256(dst, srcs, n)
	case kindSSE41:
		gather128(dst, srcs, n)
	default:
		goGather(dst, srcs, n)
	}
}

func scatter(dsts *unsafe.Pointer, src *byte, n int) {
	switch kind {
	case kindAVX512:
		scatter512(dsts, src, n)
	case kindAVX2:
		scatter256(dsts, src, n)
	case kindSSE41:
		scatter128(dsts, src, n)
	default:
		goScatter(dsts, src, n)
	}
}

func copyLines(dst, src unsafe.Pointer, n int) {
	switch kind {
	case kindAVX512:
		copyLines512(dst, src, n)
	case kindAVX2:
		copyLines256(dst, src, n)
	case kindSSE41:
		copyLines128(dst, src, n)
	default:
		goCopyLines(dst, src, n)
	}
}
