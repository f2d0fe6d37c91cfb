package vmem

import (
	"time"

	"github.com/govram/govram/layout"
)

// Options configure Open. The zero value picks the best device.
type Options struct {
	// Backend: BackendAuto (default), BackendVulkan or BackendHost. The
	// environment variable VMEM_BACKEND overrides it.
	Backend Backend
	// Device picks a Vulkan device: "" chooses (discrete GPUs first), a
	// number is an index in the driver's order, anything else matches a
	// substring of the device name. VMEM_DEVICE overrides it.
	Device string
	// ChunkSize is how much memory the allocator takes from the driver at a
	// time (rounded to 64 KiB; default 256 MiB, never more than the device's
	// maxMemoryAllocationSize). Blocks over half of it get a chunk of their own.
	ChunkSize uint64
	// Limits caps the bytes reserved per tier, indexed by Tier (0: only
	// the device limits).
	Limits [3]uint64
	// Timeout bounds one wait for the GPU (default 60 s), plus an allowance
	// that grows with the bytes the waited-for work goes through, so that a
	// large sort on a slow device is not cut short. A wait that still runs
	// out returns ErrTimeout; the device is not lost: calls return
	// ErrTimeout until the work ends, then work as before.
	Timeout time.Duration
	// Costs are the prices the device's access planner derives its
	// thresholds from (when a read of mapped VRAM goes by streaming loads,
	// by DMA or by a GPU gather). The zero value is layout.H200Costs, the
	// costs measured in docs/physics.md; set them for other hardware.
	Costs layout.Costs
}

const (
	defaultChunk   = 256 << 20
	chunkGranule   = 64 << 10
	defaultTimeout = 60 * time.Second
	// dedicatedShare: a block larger than ChunkSize/dedicatedShare gets its own chunk.
	dedicatedShare = 2
)
