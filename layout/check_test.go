package layout

import (
	"errors"
	"testing"
)

type namesInner struct {
	Count int
	Names [2][]string
}

type namesRec struct {
	X     int64
	Inner namesInner
}

type plainRec struct {
	ID    uint64
	Grid  [2][2]int32
	Flag  bool
	Addr  uintptr
	C     complex128
	Empty [0]*int // holds nothing: the GC sees no pointer here
}

func TestCheck(t *testing.T) {
	if err := Check[plainRec](); err != nil {
		t.Fatalf("Check[plainRec] = %v, want nil", err)
	}
	for _, err := range []error{Check[namesRec](), Check[*int](), Check[string](), Check[any]()} {
		if !errors.Is(err, ErrPointerType) {
			t.Fatalf("got %v, want ErrPointerType", err)
		}
	}
}

func TestCheckMessage(t *testing.T) {
	err := Check[namesRec]()
	want := "type layout.namesRec: field Inner.Names[] is a slice: type holds pointers"
	if err == nil || err.Error() != want {
		t.Fatalf("got %q\nwant %q", err, want)
	}
	err = Check[*int]()
	want = "type *int is a pointer: type holds pointers"
	if err == nil || err.Error() != want {
		t.Fatalf("got %q\nwant %q", err, want)
	}
}
