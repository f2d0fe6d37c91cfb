package collections

import (
	"errors"

	"github.com/govram/govram/vmem"
)

// Errors, matched with errors.Is. The vmem errors are the same values, so a
// caller may test either.
var (
	ErrClosed       = vmem.ErrClosed
	ErrOutOfMemory  = vmem.ErrOutOfMemory
	ErrPointerType  = vmem.ErrPointerType
	ErrDeviceLost   = vmem.ErrDeviceLost
	ErrTimeout      = vmem.ErrTimeout
	ErrCorrupt      = vmem.ErrCorrupt
	ErrTypeMismatch = vmem.ErrTypeMismatch
	// ErrFull: a Ring with the ErrorWhenFull policy has no room.
	ErrFull = errors.New("collections: ring is full")
)
