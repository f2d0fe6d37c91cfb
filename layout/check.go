package layout

import (
	"reflect"

	"github.com/govram/govram/internal/recs"
)

// Check reports whether values of T can live in device memory: it returns
// nil for a type made only of booleans, numbers (uintptr included: the GC
// does not follow it), and arrays and structs of those, and otherwise an
// error wrapping ErrPointerType that names T and the first field holding a
// pointer, slice, map, interface, channel, func, unsafe.Pointer or string
// ("type T: field Inner.Names[] is a slice: type holds pointers").
// Zero-length arrays hold nothing and pass whatever their element.
//
// Strings are refused because their bytes live on the Go heap; the
// containers that accept string keys or values store the bytes
// themselves.
func Check[T any]() error { return recs.CheckType(reflect.TypeFor[T]()) }
