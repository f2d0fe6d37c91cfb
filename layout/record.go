package layout

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
//   - Size <= 64: one line holds PerLine = 64/Stride records, Stride being
//     Size rounded up to Align; the last 64 - PerLine*Stride bytes of every
//     line are padding. No record ever straddles two lines, so reading one
//     costs one streaming load and writing one touches one line. Packing
//     floor(64/Stride) records a line, rather than rounding Stride up to a
//     power of two, keeps more records per line where that differs: 20-byte
//     records go 3 to a line (stride 32 would give 2), 12-byte records 5
//     (against 4), so a table needs up to a third fewer lines and bulk
//     transfers move that much less.
//   - Size > 64: each record starts on a line boundary and occupies
//     LinesPer = ceil(Size/64) lines (PerLine = 1, Stride = LinesPer*64).
//     Starting on a boundary makes every record touch exactly LinesPer
//     lines; packed back to back, a 72-byte record would touch three lines
//     one time in eight instead of two.
//   - Size == 0: everything is at offset 0 and takes no lines.
//
// The layout equals a Go array's ([Record.Dense]) when Size divides 64 or
// is a multiple of it; otherwise copying a []T in bulk means re-spacing.
type Record struct {
	Size     uintptr // bytes of one record
	Align    uintptr // its alignment, a power of two
	Stride   uintptr // distance between consecutive records of a group
	PerLine  int     // records per group
	LinesPer int     // lines per group
}

// RecordOf returns the layout of records of type T.
func RecordOf[T any]() Record {
	var zero T
	return RecordFor(unsafe.Sizeof(zero), unsafe.Alignof(zero))
}

// RecordFor returns the layout of records of size bytes aligned to align.
// An align of 0 counts as 1 and one that is not a power of two is rounded
// up to the next power of two.
func RecordFor(size, align uintptr) Record {
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
// same type, so that a []T can be copied in or out unchanged.
func (r Record) Dense() bool {
	return r.Size == 0 || r.Stride == r.Size && (LineSize%r.Size == 0 || r.Size%LineSize == 0)
}

func roundUp(x, a uintptr) uintptr { return (x + a - 1) &^ (a - 1) }
