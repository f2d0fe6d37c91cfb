package vmem

import (
	"unsafe"

	"github.com/govram/govram/internal/hostmem"
	"github.com/govram/govram/internal/tlsf"
	"github.com/govram/govram/internal/vk"
)

// chunk is one piece of memory taken from the driver (or from mmap) and
// carved into Blocks by its tier's allocator.
type chunk struct {
	dev    *Device
	tier   Tier
	region uint32
	size   uint64
	ptr    unsafe.Pointer // CPU address: every tier on the host backend, mapped and host tiers on Vulkan
	mem    *vk.Memory     // nil on the host backend
	// clean: no byte at or above this offset has been handed out since the
	// chunk was zeroed, so Alloc need not zero it again.
	clean uint64
}

// Block is a range of device memory returned by Device.Alloc. It is a small
// value; copies refer to the same memory. Free it exactly once.
type Block struct {
	c    *chunk
	h    tlsf.Handle
	off  uint64
	size uint64
}

// IsZero reports whether b is the zero Block (no memory).
func (b Block) IsZero() bool { return b.c == nil }

// Tier returns the block's tier.
func (b Block) Tier() Tier {
	if b.c == nil {
		return Host
	}
	return b.c.tier
}

// Size returns the size the block was allocated with.
func (b Block) Size() uint64 { return b.size }

// Ptr returns the block's CPU address for mapped and host blocks, nil for
// private blocks (even on the host backend, so that code behaves the same on
// every backend). Mapped-tier memory is write-combining VRAM: load it with
// whole-line streaming loads (package layout), never with plain loads on a
// hot path.
func (b Block) Ptr() unsafe.Pointer {
	if b.c == nil || b.c.tier == Private || b.c.ptr == nil {
		return nil
	}
	return hostmem.Add(b.c.ptr, b.off)
}

// Bytes returns the block's memory as a slice for mapped and host blocks, nil
// for private blocks. The slice is invalid after Free or Device.Close.
func (b Block) Bytes() []byte {
	p := b.Ptr()
	if p == nil {
		return nil
	}
	return hostmem.Bytes(p, b.size)
}

// cpu returns the CPU address of byte off of the block, whatever the tier,
// or nil where the CPU cannot reach it.
func (b Block) cpu(off uint64) unsafe.Pointer {
	if b.c.ptr == nil {
		return nil
	}
	return hostmem.Add(b.c.ptr, b.off+off)
}
