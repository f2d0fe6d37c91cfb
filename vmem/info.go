package vmem

import (
	"fmt"
	"github.com/govram/govram/internal/human"
	"strings"
)

// Info describes an open device.
type Info struct {
	Backend    Backend
	Name       string // device name
	Type       string // discrete, integrated, cpu, host
	Driver     string // driver name and version
	APIVersion string // Vulkan version the device supports
	// Fallback says why BackendAuto fell back to host memory ("" if it did not).
	Fallback string
	// TransferQueue describes the queue DMA runs on.
	TransferQueue string
	Tiers         [3]TierInfo // indexed by Tier
}

// TierInfo describes one tier.
type TierInfo struct {
	Tier      Tier
	Available bool
	// MemoryType is the Vulkan memory type index (-1 on the host backend).
	MemoryType int
	// Capacity is the size of the heap behind the tier; tiers may share a
	// heap (mapped and private share VRAM).
	Capacity uint64
	// Budget is how much of that heap the driver says this process may use
	// (VK_EXT_memory_budget), 0 if unknown.
	Budget uint64
	// HeapUsage is the driver's figure for this process's use of the heap.
	HeapUsage uint64
	// Limit is Options.Limits for the tier (0: none).
	Limit uint64
	// MaxBlock is the largest single block.
	MaxBlock uint64
	// What the device holds in the tier now: Reserved bytes taken from
	// the driver in chunks (Chunks of them), InUse bytes of them handed
	// out to containers (rounded to 64 bytes) in Blocks pieces, and the
	// LargestFree range left inside the chunks held.
	Reserved, InUse uint64
	Blocks, Chunks  int
	LargestFree     uint64
}

// tierStats counts a tier's memory (TierInfo).
type tierStats struct {
	Reserved    uint64 // taken from the driver in chunks
	InUse       uint64 // handed out in blocks (rounded to 64 bytes)
	Blocks      int    // live blocks
	Chunks      int    // chunks held
	LargestFree uint64 // largest free range inside the chunks held
}

// Info returns the device description with current usage.
func (d *Device) Info() Info {
	in := d.info
	var budget, usage []uint64
	if d.vk != nil && !d.closed.Load() {
		budget, usage, _ = d.vk.inst.Budget(&d.vk.pd)
	}
	for t := range d.tiers {
		ts := &d.tiers[t]
		ti := TierInfo{Tier: Tier(t), Available: ts.available, MemoryType: ts.memType,
			Capacity: ts.capacity, Limit: ts.limit, MaxBlock: ts.maxChunk}
		st := d.stats(Tier(t))
		ti.Reserved, ti.InUse, ti.Blocks, ti.Chunks, ti.LargestFree = st.Reserved, st.InUse, st.Blocks, st.Chunks, st.LargestFree
		if ts.heap >= 0 && ts.heap < len(budget) {
			ti.Budget, ti.HeapUsage = budget[ts.heap], usage[ts.heap]
		}
		in.Tiers[t] = ti
	}
	return in
}

// stats returns the tier's counters.
func (d *Device) stats(t Tier) tierStats {
	if t < 0 || t >= numTiers {
		return tierStats{}
	}
	ts := &d.tiers[t]
	ts.mu.Lock()
	defer ts.mu.Unlock()
	st := ts.a.Stats()
	return tierStats{Reserved: ts.reserved, InUse: ts.inUse, Blocks: ts.blocks, Chunks: st.Regions, LargestFree: st.LargestFree}
}

// String formats Info for people.
func (in Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "backend %s: %s (%s)", in.Backend, in.Name, in.Type)
	if in.Driver != "" {
		fmt.Fprintf(&b, ", driver %s", in.Driver)
	}
	if in.APIVersion != "" {
		fmt.Fprintf(&b, ", Vulkan %s", in.APIVersion)
	}
	b.WriteByte('\n')
	if in.Fallback != "" {
		fmt.Fprintf(&b, "  (no GPU used: %s)\n", in.Fallback)
	}
	if in.TransferQueue != "" {
		fmt.Fprintf(&b, "  transfers: %s\n", in.TransferQueue)
	}
	for _, t := range in.Tiers {
		if !t.Available {
			fmt.Fprintf(&b, "  %-8s not available\n", t.Tier)
			continue
		}
		fmt.Fprintf(&b, "  %-8s capacity %s", t.Tier, human.Bytes(t.Capacity))
		if t.Budget > 0 {
			fmt.Fprintf(&b, ", budget %s", human.Bytes(t.Budget))
		}
		if t.Limit > 0 {
			fmt.Fprintf(&b, ", limit %s", human.Bytes(t.Limit))
		}
		fmt.Fprintf(&b, ", max block %s, in use %s in %d blocks, reserved %s",
			human.Bytes(t.MaxBlock), human.Bytes(t.InUse), t.Blocks, human.Bytes(t.Reserved))
		if t.MemoryType >= 0 {
			fmt.Fprintf(&b, " (memory type %d)", t.MemoryType)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
