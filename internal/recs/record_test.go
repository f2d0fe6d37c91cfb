package recs

import (
	"fmt"
	"testing"
	"unsafe"
)

var aligns = []uintptr{1, 2, 4, 8, 16, 32, 64}

func TestRecordSmallNeverStraddles(t *testing.T) {
	for size := uintptr(1); size <= LineSize; size++ {
		for _, align := range aligns {
			r := For(size, align)
			stride := roundUp(size, align)
			if r.Stride != stride || r.LinesPer != 1 || r.PerLine != int(LineSize/stride) {
				t.Fatalf("For(%d, %d) = %+v", size, align, r)
			}
			prevEnd := uintptr(0)
			for i := range 1000 {
				off := r.Offset(i)
				if off%align != 0 {
					t.Fatalf("size %d align %d: record %d at %d misaligned", size, align, i, off)
				}
				if off/LineSize != (off+size-1)/LineSize {
					t.Fatalf("size %d align %d: record %d at %d straddles", size, align, i, off)
				}
				if i > 0 && off < prevEnd {
					t.Fatalf("size %d align %d: record %d at %d overlaps or goes back (prev end %d)", size, align, i, off, prevEnd)
				}
				if r.Line(i) != int(off/LineSize) {
					t.Fatalf("Line(%d) = %d, offset %d", i, r.Line(i), off)
				}
				prevEnd = off + size
				if got := r.Lines(i + 1); got != r.Line(i)+1 {
					t.Fatalf("size %d: Lines(%d) = %d, last record on line %d", size, i+1, got, r.Line(i))
				}
			}
		}
	}
}

func TestRecordLarge(t *testing.T) {
	for size := uintptr(LineSize + 1); size <= 700; size++ {
		for _, align := range []uintptr{1, 8, 64, 128} {
			r := For(size, align)
			want := int((size + LineSize - 1) / LineSize)
			if align > LineSize {
				want = int(roundUp(roundUp(size, LineSize), align) / LineSize)
			}
			if r.LinesPer != want || r.PerLine != 1 {
				t.Fatalf("For(%d, %d) = %+v", size, align, r)
			}
			for i := range 50 {
				off := r.Offset(i)
				if off%LineSize != 0 || off%align != 0 {
					t.Fatalf("size %d: record %d at %d not line-aligned", size, i, off)
				}
				if i > 0 && off < r.Offset(i-1)+size {
					t.Fatalf("size %d: record %d overlaps", size, i)
				}
				// Touches the minimum number of lines.
				if touched := int((off+size-1)/LineSize - off/LineSize + 1); touched != int((size+LineSize-1)/LineSize) {
					t.Fatalf("size %d: record %d touches %d lines", size, i, touched)
				}
			}
			if r.Lines(3) != 3*r.LinesPer || r.Bytes(3) != uintptr(3*r.LinesPer*LineSize) {
				t.Fatalf("size %d: Lines(3) = %d", size, r.Lines(3))
			}
		}
	}
}

func TestRecordEdges(t *testing.T) {
	z := For(0, 1)
	if z.Offset(5) != 0 || z.Lines(100) != 0 || !z.Dense() {
		t.Fatalf("zero-size record: %+v", z)
	}
	if r := For(24, 0); r.Align != 1 || r.PerLine != 2 {
		t.Fatalf("For(24, 0) = %+v", r)
	}
	if r := For(24, 3); r.Align != 4 {
		t.Fatalf("For(24, 3) = %+v, want align rounded up to 4", r)
	}
	type rec24 struct{ A, B, C uint64 }
	if r := Of[rec24](); r.Size != 24 || r.Align != 8 || r.PerLine != 2 || r.Offset(3) != 64+24 {
		t.Fatalf("Of[rec24] = %+v", r)
	}
	if r := Of[[20]byte](); r.PerLine != 3 || r.Offset(3) != 64 {
		t.Fatalf("Of[[20]byte] = %+v", r)
	}
	dense := map[uintptr]bool{1: true, 8: true, 16: true, 64: true, 128: true, 24: false, 72: false}
	for size, want := range dense {
		if got := For(size, 1).Dense(); got != want {
			t.Errorf("For(%d, 1).Dense() = %v, want %v", size, got, want)
		}
	}
	var x struct{ a [3]uint32 }
	if r := Of[struct{ a [3]uint32 }](); r.Size != unsafe.Sizeof(x) || r.PerLine != 5 {
		t.Fatalf("12-byte record: %+v", r)
	}
}

func ExampleFor() {
	for _, size := range []uintptr{8, 20, 24, 40, 72} {
		r := For(size, 4)
		fmt.Printf("size %d: stride %d, %d per %d line(s), record 3 at offset %d\n",
			size, r.Stride, r.PerLine, r.LinesPer, r.Offset(3))
	}
	// Output:
	// size 8: stride 8, 8 per 1 line(s), record 3 at offset 24
	// size 20: stride 20, 3 per 1 line(s), record 3 at offset 64
	// size 24: stride 24, 2 per 1 line(s), record 3 at offset 88
	// size 40: stride 40, 1 per 1 line(s), record 3 at offset 192
	// size 72: stride 128, 1 per 2 line(s), record 3 at offset 384
}
