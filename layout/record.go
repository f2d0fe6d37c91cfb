package layout

import "github.com/govram/govram/internal/recs"

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
// Record i of a group-laid array sits at byte (i/PerLine)*LinesPer*64 +
// (i%PerLine)*Stride. The layout equals a Go array's when Size divides 64
// or is a multiple of it; otherwise copying a []T in bulk means
// re-spacing.
type Record struct {
	Size     uintptr // bytes of one record
	Align    uintptr // its alignment, a power of two
	Stride   uintptr // distance between consecutive records of a group
	PerLine  int     // records per group
	LinesPer int     // lines per group
}

// RecordOf returns the layout of records of type T.
func RecordOf[T any]() Record { return Record(recs.Of[T]()) }

// Lines returns how many 64-byte lines n records need.
func (r Record) Lines(n int) int { return recs.Record(r).Lines(n) }

// Bytes returns how many bytes n records need: Lines(n) whole lines.
func (r Record) Bytes(n int) uintptr { return recs.Record(r).Bytes(n) }
