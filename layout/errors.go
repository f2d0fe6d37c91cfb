package layout

import "github.com/govram/govram/internal/recs"

// Errors returned by this package. Match them with errors.Is; the errors
// returned carry details (the type and field) around them.
var (
	// ErrPointerType: the type holds pointers (or slices, maps, interfaces,
	// channels, funcs, strings), which the garbage collector cannot see
	// once the value lives in device memory. vmem.ErrPointerType is the
	// same error.
	ErrPointerType = recs.ErrPointerType
)
