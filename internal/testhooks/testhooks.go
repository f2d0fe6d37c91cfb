// Package testhooks lets govram's tests reach what vmem keeps out of its
// API: vmem sets the hooks when it is initialised, and internal/vmemtest
// wraps them in typed helpers.
package testhooks

// NewPool makes a pool (a *vmem.Pool) of devices (*vmem.Device) the caller
// opened and keeps closing. Tests use it to simulate several GPUs with
// several host devices, or one Vulkan device opened twice.
var NewPool func(devs []any) (any, error)

// SegmentBytes returns a vmem.SliceOption that caps a Slice's segments at
// n bytes, so that tests cover segment boundaries with little data.
var SegmentBytes func(n uint64) any
