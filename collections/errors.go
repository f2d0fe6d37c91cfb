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
	// ErrRange: a length or value out of range (slices of different
	// lengths given to a batch call, a capacity below 1).
	ErrRange = vmem.ErrRange
	// ErrTooLarge: an element, string or container larger than the
	// device or the container's format holds.
	ErrTooLarge = vmem.ErrTooLarge
	// ErrFull: a Ring with the ErrorWhenFull policy has no room.
	ErrFull = errors.New("collections: ring is full")
)
