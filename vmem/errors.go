package vmem

import (
	"errors"
	"fmt"

	"github.com/govram/govram/internal/vk"
	"github.com/govram/govram/layout"
)

// Errors returned by vmem and the containers built on it. Match them with
// errors.Is; the returned errors carry the detail (the Vulkan call, sizes).
var (
	// ErrNoDevice: no usable device for the requested backend.
	ErrNoDevice = errors.New("vmem: no device")
	// ErrOutOfMemory: the tier (or the driver) has no room; nothing changed.
	ErrOutOfMemory = errors.New("vmem: out of memory")
	// ErrTooLarge: one block larger than the device's largest allocation.
	ErrTooLarge = errors.New("vmem: block too large")
	// ErrDeviceLost: the GPU stopped answering; every later call fails too.
	ErrDeviceLost = errors.New("vmem: device lost")
	// ErrClosed: the device or container was closed.
	ErrClosed = errors.New("vmem: closed")
	// ErrRange: an offset or length outside the block, or a value that
	// does not fit its type (a Sum larger than the element type holds).
	ErrRange = errors.New("vmem: out of range")
	// ErrPointerType: an element type holds pointers, which the garbage
	// collector cannot follow into device memory. The error names the field.
	ErrPointerType = layout.ErrPointerType
	// ErrCorrupt: damaged serialized data.
	ErrCorrupt = errors.New("vmem: corrupt data")
	// ErrTypeMismatch: a snapshot holds another container or other element,
	// key or value types than the Load it was given to.
	ErrTypeMismatch = errors.New("vmem: snapshot type mismatch")
)

// errNoTier: the device has no memory of the tier asked for, which is
// running out of it from the start (it matches ErrOutOfMemory).
var errNoTier = fmt.Errorf("vmem: tier not available: %w", ErrOutOfMemory)

// vkError is a failed Vulkan call that also matches one of the sentinels.
type vkError struct {
	call *vk.CallError
	kind error
}

func (e *vkError) Error() string        { return "vmem: " + e.call.Error() }
func (e *vkError) Is(target error) bool { return target == e.kind }
func (e *vkError) Unwrap() error        { return e.call }

// wrapVk turns an error from internal/vk into a vmem error.
func wrapVk(err error) error {
	if err == nil {
		return nil
	}
	var ce *vk.CallError
	if !errors.As(err, &ce) {
		return fmt.Errorf("vmem: %w", err)
	}
	switch ce.Result {
	case vk.ErrorOutOfDeviceMemory, vk.ErrorOutOfHostMemory, vk.ErrorTooManyObjects:
		return &vkError{ce, ErrOutOfMemory}
	case vk.ErrorDeviceLost:
		return &vkError{ce, ErrDeviceLost}
	}
	return &vkError{ce, nil}
}
