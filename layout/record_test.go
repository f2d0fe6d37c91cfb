package layout

import (
	"fmt"
	"testing"

	"github.com/govram/govram/internal/recs"
)

func TestRecordOf(t *testing.T) {
	type rec24 struct{ A, B, C uint64 }
	if r := RecordOf[rec24](); r.Size != 24 || r.Align != 8 || r.Stride != 24 || r.PerLine != 2 || r.LinesPer != 1 {
		t.Fatalf("RecordOf[rec24] = %+v", r)
	}
	if r := RecordOf[[20]byte](); r.PerLine != 3 || r.Stride != 20 {
		t.Fatalf("RecordOf[[20]byte] = %+v", r)
	}
	if r := RecordOf[[72]byte](); r.PerLine != 1 || r.LinesPer != 2 || r.Stride != 128 {
		t.Fatalf("RecordOf[[72]byte] = %+v", r)
	}
	if r := RecordOf[struct{}](); r.Lines(100) != 0 || r.Bytes(100) != 0 {
		t.Fatalf("zero-size record: %+v", r)
	}
}

// TestRecordLines checks Lines and Bytes against the internal layout they
// report, for every size up to four lines.
func TestRecordLines(t *testing.T) {
	for size := uintptr(1); size <= 4*64; size++ {
		for _, align := range []uintptr{1, 8, 64} {
			in := recs.For(size, align)
			r := Record(in)
			for _, n := range []int{-1, 0, 1, 2, 3, 7, 64, 1000} {
				want := 0
				if n > 0 {
					want = in.Line(n-1) + in.LinesPer
				}
				if got := r.Lines(n); got != want {
					t.Fatalf("size %d align %d: Lines(%d) = %d, want %d", size, align, n, got, want)
				}
				if got := r.Bytes(n); got != uintptr(want)*64 {
					t.Fatalf("size %d align %d: Bytes(%d) = %d, want %d", size, align, n, got, want*64)
				}
			}
		}
	}
}

func ExampleRecordOf() {
	type rec20 struct {
		ID    uint32
		Score [4]float32
	}
	for _, r := range []Record{RecordOf[uint64](), RecordOf[rec20](), RecordOf[[3]uint64](), RecordOf[[40]byte](), RecordOf[[9]uint64]()} {
		fmt.Printf("size %d: stride %d, %d per %d line(s), 1000 records in %d lines (%d bytes)\n",
			r.Size, r.Stride, r.PerLine, r.LinesPer, r.Lines(1000), r.Bytes(1000))
	}
	// Output:
	// size 8: stride 8, 8 per 1 line(s), 1000 records in 125 lines (8000 bytes)
	// size 20: stride 20, 3 per 1 line(s), 1000 records in 334 lines (21376 bytes)
	// size 24: stride 24, 2 per 1 line(s), 1000 records in 500 lines (32000 bytes)
	// size 40: stride 40, 1 per 1 line(s), 1000 records in 1000 lines (64000 bytes)
	// size 72: stride 128, 1 per 2 line(s), 1000 records in 2000 lines (128000 bytes)
}
