package layout

import "errors"

// Errors returned by this package. Match them with errors.Is; the errors
// returned carry details (the type and field, the offset) around them.
var (
	// ErrPointerType: the type holds pointers (or slices, maps, interfaces,
	// channels, funcs, strings), which the garbage collector cannot see
	// once the value lives in device memory.
	ErrPointerType = errors.New("type holds pointers")
)
