package recs

import (
	"math/bits"
	"unsafe"
)

// LineSize is the unit of every VRAM access: one cache line, one
// write-combining buffer, one streaming load.
const LineSize = 64

// Record says where the i-th of many equal records sits in memory made of
// 64-byte lines. Records are laid out in groups: a group is LinesPer whole
// lines holding PerLine records, Stride bytes apart, starting at the
// group's first byte.
//
// It is the twin of layout.Record (same fields, so each converts to the
// other) with the methods govram's packages place records with; layout
// documents the rules:
//
//   - Size <= 64: one line holds PerLine = 64/Stride records, Stride being
//     Size rounded up to Align; no record ever straddles two lines.
//   - Size > 64: each record starts on a line boundary and occupies
//     LinesPer = ceil(Size/64) lines (PerLine = 1, Stride = LinesPer*64).
//   - Size == 0: everything is at offset 0 and takes no lines.
type Record struct {
	Size     uintptr // bytes of one record
	Align    uintptr // its alignment, a power of two
	Stride   uintptr // distance between consecutive records of a group
	PerLine  int     // records per group
	LinesPer int     // lines per group
}

// Of returns the layout of records of type T.
func Of[T any]() Record {
	var zero T
	return For(unsafe.Sizeof(zero), unsafe.Alignof(zero))
}

// For returns the layout of records of size bytes aligned to align. An
// align of 0 counts as 1 and one that is not a power of two is rounded up
// to the next power of two.
func For(size, align uintptr) Record {
	if align == 0 {
		align = 1
	}
	if align&(align-1) != 0 {
		align = 1 << bits.Len64(uint64(align))
	}
	r := Record{Size: size, Align: align}
	switch {
	case size == 0:
		r.PerLine = 1
	case size <= LineSize && align <= LineSize:
		r.Stride = roundUp(size, align)
		r.PerLine = int(LineSize / r.Stride)
		r.LinesPer = 1
	default:
		r.Stride = roundUp(roundUp(size, LineSize), align)
		r.PerLine = 1
		r.LinesPer = int(r.Stride / LineSize)
	}
	return r
}

// Offset returns the byte offset of record i (i >= 0) from the start of
// the array.
func (r Record) Offset(i int) uintptr {
	g, k := i/r.PerLine, i%r.PerLine
	return uintptr(g)*uintptr(r.LinesPer)*LineSize + uintptr(k)*r.Stride
}

// Line returns the index of the first line record i occupies.
func (r Record) Line(i int) int { return int(r.Offset(i) / LineSize) }

// Lines returns how many lines n records need.
func (r Record) Lines(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + r.PerLine - 1) / r.PerLine * r.LinesPer
}

// Bytes returns how many bytes n records need: Lines(n) whole lines.
func (r Record) Bytes(n int) uintptr { return uintptr(r.Lines(n)) * LineSize }

// Dense reports whether records sit back to back as in a Go array of the
// same type, so that a []T can be copied in or out unchanged: when Size
// divides 64 or is a multiple of it.
func (r Record) Dense() bool {
	return r.Size == 0 || r.Stride == r.Size && (LineSize%r.Size == 0 || r.Size%LineSize == 0)
}

func roundUp(x, a uintptr) uintptr { return (x + a - 1) &^ (a - 1) }
