package vmem

import (
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/hostmem"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/internal/vk"
)

// chunk is one piece of memory taken from the driver (or from mmap) and
// carved into blocks by its tier's allocator (internal/block).
type chunk = block.Chunk

// gpuZeroMin: zeroing this much or more is sent to the GPU (after one
// round trip a fill runs at the GPU's memory speed, far beyond CPU stores
// into VRAM: docs/physics.md).
const gpuZeroMin = 1 << 20

// newChunk takes size bytes of zeroed memory for tier t; touch says
// whether the CPU takes the first-touch faults of mapped pages now.
func (d *Device) newChunk(t Tier, size uint64, touch bool) (*chunk, error) {
	c := &chunk{Dev: d, Tier: block.Tier(t), Size: size}
	if d.vk == nil {
		p, err := hostmem.Map(size)
		if err != nil {
			return nil, &hostOOM{err}
		}
		c.Ptr = p // fresh anonymous pages read as zero
		return c, nil
	}
	ts := &d.tiers[t]
	m, err := d.vk.dev.Allocate(ts.memType, size, t != Private)
	if err != nil {
		return nil, wrapVk(err)
	}
	c.Mem, c.Ptr = m, m.Ptr
	// Vulkan does not promise zeroed memory.
	switch {
	case c.Ptr != nil && (t == Host || d.backendCPUType()):
		clear(hostmem.Bytes(c.Ptr, size))
	default:
		if err := d.run([]vk.Op{{Kind: vk.OpFill, Dst: m, Size: size}}, nil); err != nil {
			d.vkFree(m)
			return nil, err
		}
		if c.Ptr != nil && touch {
			// The first CPU touch of each mapped page faults (a cold pass
			// runs at a fraction of a warm one's speed: docs/physics.md):
			// take the faults now, not on the hot path.
			touchPages(c.Ptr, size)
		}
	}
	if c.Ptr != nil {
		d.vk.registerCPU(c)
	}
	return c, nil
}

// backendCPUType reports a device whose "VRAM" is system memory (software
// drivers): zeroing on the CPU is then as fast as anything.
func (d *Device) backendCPUType() bool {
	return d.vk != nil && d.vk.pd.Type == vk.TypeCPU
}

// hostOOM is an mmap failure: out of memory.
type hostOOM struct{ err error }

func (e *hostOOM) Error() string        { return "vmem: " + e.err.Error() }
func (e *hostOOM) Is(target error) bool { return target == ErrOutOfMemory }
func (e *hostOOM) Unwrap() error        { return e.err }

func (d *Device) releaseChunk(c *chunk) {
	if d.vk == nil {
		hostmem.Unmap(c.Ptr, c.Size)
	} else {
		if c.Ptr != nil {
			d.vk.unregisterCPU(c)
		}
		d.vkFree(c.Mem)
	}
	c.Ptr, c.Mem = nil, nil
}

// zero clears n bytes at off in c.
func (d *Device) zero(c *chunk, off, n uint64) error {
	switch {
	case c.Ptr != nil && (d.vk == nil || c.Tier == block.Host || d.backendCPUType()):
		clear(hostmem.Bytes(hostmem.Add(c.Ptr, off), n))
		return nil
	case c.Ptr != nil && n < gpuZeroMin:
		ntZero(hostmem.Add(c.Ptr, off), n)
		return nil
	}
	return d.run([]vk.Op{{Kind: vk.OpFill, Dst: c.Mem, DstOff: off, Size: roundUp(n, 4)}}, nil)
}

var zeroLines [4096]byte

// ntZero clears write-combining memory with full-line streaming stores.
func ntZero(p unsafe.Pointer, n uint64) {
	for n > 0 {
		k := min(n, uint64(len(zeroLines)))
		lineio.Copy(p, unsafe.Pointer(&zeroLines[0]), uintptr(k))
		p = hostmem.Add(p, k)
		n -= k
	}
	lineio.Fence()
}

// touchPages writes one zero word per page of freshly zeroed mapped memory.
func touchPages(p unsafe.Pointer, n uint64) {
	par.Lines(n, 64<<20, copyParts, func(off, size uint64) {
		for o := off; o < off+size; o += hostmem.PageSize {
			*(*uint64)(hostmem.Add(p, o)) = 0
		}
	})
}
