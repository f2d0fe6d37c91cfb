package recs

import "errors"

// ErrPointerType is the error CheckType's errors wrap: the type holds
// pointers (or slices, maps, interfaces, channels, funcs, strings), which
// the garbage collector cannot see once the value lives in device memory.
// Package layout replaces it with layout.ErrPointerType when it is
// initialised, before any package that imports layout runs.
var ErrPointerType = errors.New("type holds pointers")
