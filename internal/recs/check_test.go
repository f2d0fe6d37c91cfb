package recs

import (
	"errors"
	"reflect"
	"testing"
	"unsafe"
)

type plainInner struct {
	A uint16
	B [3]float32
}

type plainRec struct {
	ID    uint64
	Inner plainInner
	Grid  [2][2]int32
	Flag  bool
	Addr  uintptr
	C     complex128
	Empty [0]*int // holds nothing: the GC sees no pointer here
}

type namesInner struct {
	Count int
	Names [2][]string
}

type namesRec struct {
	X     int64
	Inner namesInner
}

type Embedded struct{ P *int }

type withEmbedded struct {
	N int
	Embedded
}

type cell struct {
	V int
	F func()
}

type MyString string

func TestCheckType(t *testing.T) {
	cases := []struct {
		t    reflect.Type
		path string // "" with ok=false: the type itself
		kind reflect.Kind
		ok   bool
	}{
		{t: reflect.TypeFor[int](), ok: true},
		{t: reflect.TypeFor[[4]float64](), ok: true},
		{t: reflect.TypeFor[plainRec](), ok: true},
		{t: reflect.TypeFor[struct{}](), ok: true},
		{t: reflect.TypeFor[*int](), kind: reflect.Pointer},
		{t: reflect.TypeFor[[]int](), kind: reflect.Slice},
		{t: reflect.TypeFor[map[int]int](), kind: reflect.Map},
		{t: reflect.TypeFor[any](), kind: reflect.Interface},
		{t: reflect.TypeFor[chan int](), kind: reflect.Chan},
		{t: reflect.TypeFor[func()](), kind: reflect.Func},
		{t: reflect.TypeFor[unsafe.Pointer](), kind: reflect.UnsafePointer},
		{t: reflect.TypeFor[string](), kind: reflect.String},
		{t: reflect.TypeFor[MyString](), kind: reflect.String},
		{t: reflect.TypeFor[namesRec](), path: ".Inner.Names[]", kind: reflect.Slice},
		{t: reflect.TypeFor[withEmbedded](), path: ".Embedded.P", kind: reflect.Pointer},
		{t: reflect.TypeFor[[3]cell](), path: "[].F", kind: reflect.Func},
		{t: reflect.TypeFor[[2][2]string](), path: "[][]", kind: reflect.String},
		{t: reflect.TypeFor[struct{ S struct{ E error } }](), path: ".S.E", kind: reflect.Interface},
	}
	for _, c := range cases {
		t.Run(c.t.String(), func(t *testing.T) {
			for range 2 { // the second call answers from the cache
				err := CheckType(c.t)
				if c.ok {
					if err != nil {
						t.Fatalf("CheckType(%v) = %v, want nil", c.t, err)
					}
					continue
				}
				if !errors.Is(err, ErrPointerType) {
					t.Fatalf("CheckType(%v) = %v, want ErrPointerType", c.t, err)
				}
				var te *typeError
				if !errors.As(err, &te) || te.Path != c.path || te.Kind != c.kind || te.Type != c.t {
					t.Fatalf("CheckType(%v) = %#v, want path %q kind %v", c.t, err, c.path, c.kind)
				}
			}
		})
	}
}

// TestCheckTypeMessage: the messages users see are checked through
// layout.Check (layout/check_test.go); here the nil type.
func TestCheckTypeMessage(t *testing.T) {
	if err := CheckType(nil); !errors.Is(err, ErrPointerType) {
		t.Fatalf("CheckType(nil) = %v", err)
	}
}
