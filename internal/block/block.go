// Package block is the unit of govram's memory: a Block is a range of a
// Chunk, a piece of memory that vmem took from the driver (or from mmap)
// and carves with its tier's allocator (internal/tlsf). Every container is
// made of blocks. Only vmem makes them; govram's packages allocate, free
// and move them through a device's plumbing (internal/kern), and users
// never see them.
package block

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/govram/govram/internal/hostmem"
	"github.com/govram/govram/internal/tlsf"
	"github.com/govram/govram/internal/vk"
)

// Tier is a block's kind of memory: vmem.Tier's values, which this
// package cannot name (vmem imports it); convert between the two.
type Tier uint8

const (
	Mapped  Tier = iota // vmem.Mapped: VRAM the CPU maps (write-combining)
	Private             // vmem.Private: VRAM reached by DMA and kernels only
	Host                // vmem.Host: system memory outside the Go heap
)

func (t Tier) String() string {
	switch t {
	case Mapped:
		return "mapped"
	case Private:
		return "private"
	case Host:
		return "host"
	}
	return fmt.Sprintf("Tier(%d)", int(t))
}

// MinAlign is the smallest block alignment: one cache line, so a block
// never shares a line with another and whole-line I/O never touches a
// neighbour.
const MinAlign = 64

// ErrInvalid is returned for a Block that the device did not hand out, or
// that was freed.
var ErrInvalid = errors.New("vmem: invalid block")

// Chunk is one piece of memory taken from the driver (or from mmap) and
// carved into Blocks by its tier's allocator. Its fields are vmem's.
type Chunk struct {
	Dev    any // the device that took it (a *vmem.Device)
	Tier   Tier
	Region uint32 // the allocator's region id
	Size   uint64
	Ptr    unsafe.Pointer // CPU address: every tier on the host backend, mapped and host tiers on Vulkan
	Mem    *vk.Memory     // nil on the host backend
	// Clean: no byte at or above this offset has been handed out since the
	// chunk was zeroed, so an allocation need not zero it again.
	Clean uint64
}

// Block is a range of device memory handed out by a device's allocator.
// It is a small value; copies refer to the same memory. Free it exactly
// once. Its fields are vmem's.
type Block struct {
	C   *Chunk
	H   tlsf.Handle // the allocator's handle
	Off uint64      // offset in C
	N   uint64      // size the block was allocated with
}

// IsZero reports whether b is the zero Block (no memory).
func (b Block) IsZero() bool { return b.C == nil }

// Tier returns the block's tier.
func (b Block) Tier() Tier {
	if b.C == nil {
		return Host
	}
	return b.C.Tier
}

// Size returns the size the block was allocated with.
func (b Block) Size() uint64 { return b.N }

// Ptr returns the block's CPU address for mapped and host blocks, nil for
// private blocks (even on the host backend, so that code behaves the same on
// every backend). Mapped-tier memory is write-combining VRAM: load it with
// whole-line streaming loads (internal/lineio), never with plain loads on a
// hot path.
func (b Block) Ptr() unsafe.Pointer {
	if b.C == nil || b.C.Tier == Private || b.C.Ptr == nil {
		return nil
	}
	return hostmem.Add(b.C.Ptr, b.Off)
}

// Bytes returns the block's memory as a slice for mapped and host blocks, nil
// for private blocks. The slice is invalid after the block is freed or its
// device closed.
func (b Block) Bytes() []byte {
	p := b.Ptr()
	if p == nil {
		return nil
	}
	return hostmem.Bytes(p, b.N)
}

// CPU returns the CPU address of byte off of the block, whatever the tier,
// or nil where the CPU cannot reach it.
func (b Block) CPU(off uint64) unsafe.Pointer {
	if b.C.Ptr == nil {
		return nil
	}
	return hostmem.Add(b.C.Ptr, b.Off+off)
}
