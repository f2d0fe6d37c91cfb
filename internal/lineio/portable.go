package lineio

import "unsafe"

// The portable twins of the assembly routines: plain Go loads and stores of
// whole lines. They serve the "generic" variant on every architecture.

func goLoad(dst *[LineSize]byte, src unsafe.Pointer) { *dst = *(*[LineSize]byte)(src) }

// goLoadFloor reads the line containing p. Copy never reaches it in the
// generic variant (it copies exactly instead); LoadContaining does, and
// its callers vouch for the whole line.
func goLoadFloor(dst *[LineSize]byte, p unsafe.Pointer) {
	*dst = *(*[LineSize]byte)(unsafe.Add(p, -int(uintptr(p)&lineMask)))
}

func goStore(dst unsafe.Pointer, src *[LineSize]byte) { *(*[LineSize]byte)(dst) = *src }

func goLoadLines(dst *byte, src unsafe.Pointer, n int) {
	copy(unsafe.Slice(dst, n*LineSize), unsafe.Slice((*byte)(src), n*LineSize))
}

func goStoreLines(dst unsafe.Pointer, src *byte, n int) {
	copy(unsafe.Slice((*byte)(dst), n*LineSize), unsafe.Slice(src, n*LineSize))
}

func goGather(dst *byte, srcs *unsafe.Pointer, n int) {
	d := unsafe.Slice(dst, n*LineSize)
	for i, p := range unsafe.Slice(srcs, n) {
		*(*[LineSize]byte)(d[i*LineSize:]) = *(*[LineSize]byte)(p)
	}
}

func goScatter(dsts *unsafe.Pointer, src *byte, n int) {
	s := unsafe.Slice(src, n*LineSize)
	for i, p := range unsafe.Slice(dsts, n) {
		*(*[LineSize]byte)(p) = *(*[LineSize]byte)(s[i*LineSize:])
	}
}

func goCopyLines(dst, src unsafe.Pointer, n int) {
	copy(unsafe.Slice((*byte)(dst), n*LineSize), unsafe.Slice((*byte)(src), n*LineSize))
}
