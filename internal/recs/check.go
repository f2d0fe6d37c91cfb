package recs

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// typeError says which part of a type holds a pointer. It matches
// ErrPointerType with errors.Is.
type typeError struct {
	Type reflect.Type // the type that was checked
	Path string       // where inside it, as ".Inner.Names[]"; "" for Type itself
	Kind reflect.Kind // what was found there
}

func (e *typeError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("type %v is %s: %v", e.Type, kindWord(e.Kind), ErrPointerType)
	}
	// The message is the caller's (vmem: NewSlice: type T: field F...): it
	// names the user's type and field, not this package.
	return fmt.Sprintf("type %v: field %s is %s: %v", e.Type, strings.TrimPrefix(e.Path, "."), kindWord(e.Kind), ErrPointerType)
}

func (e *typeError) Unwrap() error { return ErrPointerType }

func kindWord(k reflect.Kind) string {
	switch k {
	case reflect.Pointer:
		return "a pointer"
	case reflect.Slice:
		return "a slice"
	case reflect.Map:
		return "a map"
	case reflect.Interface:
		return "an interface"
	case reflect.Chan:
		return "a channel"
	case reflect.Func:
		return "a func"
	case reflect.UnsafePointer:
		return "an unsafe.Pointer"
	case reflect.String:
		return "a string"
	}
	return "a " + k.String()
}

// checked caches CheckType's answer per type: reflection walks are slow and
// containers check their element type on every construction.
var checked sync.Map // reflect.Type -> error (nil stored as a nil error)

// CheckType reports whether values of t can live in device memory: it
// returns nil for a type made only of booleans, numbers (uintptr included:
// the GC does not follow it), and arrays and structs of those, and an
// error wrapping ErrPointerType that names t and the first field that
// holds a pointer, slice, map, interface, channel, func, unsafe.Pointer or
// string. Zero-length arrays hold nothing and pass whatever their element.
//
// Strings are refused here because their bytes live on the Go heap; a
// container that stores strings specially recognises them first and
// checks other types with CheckType.
func CheckType(t reflect.Type) error {
	if t == nil {
		return &typeError{Kind: reflect.Interface}
	}
	if v, ok := checked.Load(t); ok {
		err, _ := v.(error)
		return err
	}
	var err error
	if path, k, bad := findPointer(t, ""); bad {
		err = &typeError{Type: t, Path: path, Kind: k}
	}
	checked.Store(t, err)
	return err
}

// Check is CheckType for a type parameter.
func Check[T any]() error { return CheckType(reflect.TypeFor[T]()) }

// findPointer walks t depth first and returns the path and kind of the
// first pointer-holding part.
func findPointer(t reflect.Type, path string) (string, reflect.Kind, bool) {
	switch k := t.Kind(); k {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return "", 0, false
	case reflect.Array:
		if t.Len() == 0 {
			return "", 0, false
		}
		return findPointer(t.Elem(), path+"[]")
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if p, k, bad := findPointer(f.Type, path+"."+f.Name); bad {
				return p, k, true
			}
		}
		return "", 0, false
	default:
		return path, k, true
	}
}
