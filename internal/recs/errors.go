package recs

import "errors"

// ErrPointerType is layout.ErrPointerType: the type holds pointers (or
// slices, maps, interfaces, channels, funcs, strings), which the garbage
// collector cannot see once the value lives in device memory. The errors
// CheckType returns wrap it.
var ErrPointerType = errors.New("type holds pointers")
