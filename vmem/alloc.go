package vmem

import (
	"errors"
	"fmt"
	"sync"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/hostmem"
	"github.com/govram/govram/internal/tlsf"
)

// tierState is one tier's allocator: chunks from the driver, carved by a
// TLSF allocator (constant-time, bounded waste) whose regions are the chunks.
type tierState struct {
	tier      Tier
	available bool
	memType   int // Vulkan memory type, -1 on the host backend
	heap      int
	capacity  uint64
	maxChunk  uint64
	limit     uint64

	mu       sync.Mutex
	a        *tlsf.Allocator
	chunks   []*chunk // by region id
	reserved uint64
	inUse    uint64
	blocks   int
	spare    int // region id of the one empty chunk kept, -1 if none
	// traces: allocation stacks of live blocks, once tracing is on
	// (kern.Device.TraceBlocks).
	traces map[tlsf.Handle]blockTrace
}

// minAlign is the smallest block alignment (block.MinAlign).
const minAlign = block.MinAlign

// maxAlign is the largest alignment Alloc takes: a chunk granule, more than
// any buffer or kernel needs, and small enough that padding for it never
// decides whether a block fits.
const maxAlign = chunkGranule

// alloc returns a zeroed block of size bytes in tier t, aligned to align
// (0 or a power of two up to 64 KiB, else ErrRange; values under 64 mean
// 64): kern.Device.Alloc, whose doc says how it fails.
//
// untouched is for a block the caller is about to write whole from
// several goroutines (LoadSlice): a fresh chunk of its own is not touched
// page by page first, so the page faults are taken by the writers, in
// parallel, rather than by the allocation, serially. The caller touches
// whatever it leaves unwritten (touchPages).
func (d *Device) alloc(t Tier, size, align uint64, untouched bool) (block.Block, error) {
	if err := d.enter(); err != nil {
		return block.Block{}, err
	}
	defer d.exit()
	if t < 0 || t >= numTiers {
		return block.Block{}, fmt.Errorf("vmem: Alloc: unknown tier %d", int(t))
	}
	ts := &d.tiers[t]
	if !ts.available {
		return block.Block{}, fmt.Errorf("%w: %s", errNoTier, t)
	}
	if size == 0 {
		return block.Block{}, fmt.Errorf("vmem: Alloc: size 0: %w", ErrRange)
	}
	if align&(align-1) != 0 || align > maxAlign {
		return block.Block{}, fmt.Errorf("vmem: Alloc: alignment %d (want 0 or a power of two up to %d): %w", align, maxAlign, ErrRange)
	}
	align = max(align, minAlign)
	rounded := roundUp(size, tlsf.Granule)
	if rounded+align-minAlign > ts.maxChunk || rounded < size {
		return block.Block{}, fmt.Errorf("%w: %d bytes in the %s tier (largest block %d)", ErrTooLarge, size, t, ts.maxChunk)
	}
	if err := d.faults.alloc(); err != nil {
		return block.Block{}, err
	}

	ts.mu.Lock()
	h, region, off, ok := ts.a.Alloc(rounded, align)
	if ok && int(region) == ts.spare {
		ts.spare = -1
	}
	if !ok {
		if err := d.grow(ts, rounded+align-minAlign, untouched); err != nil {
			ts.mu.Unlock()
			return block.Block{}, d.noteErr(err)
		}
		h, region, off, ok = ts.a.Alloc(rounded, align)
		if !ok {
			ts.mu.Unlock()
			panic("vmem: a fresh chunk did not fit the block it was made for")
		}
	}
	c := ts.chunks[region]
	end := off + rounded
	dirtyEnd := min(end, c.Clean)
	c.Clean = max(c.Clean, end)
	ts.inUse += rounded
	ts.blocks++
	if d.tracing.Load() {
		ts.trace(h, size)
	}
	ts.mu.Unlock()

	b := block.Block{C: c, H: h, Off: off, N: size}
	if off < dirtyEnd {
		// Reused memory: zero it so no block ever shows another's bytes.
		if err := d.zero(c, off, dirtyEnd-off); err != nil {
			d.free(b)
			return block.Block{}, d.noteErr(err)
		}
	}
	return b, nil
}

// grow adds a chunk that can hold need bytes; a chunk made for that block
// alone is left untouched if asked (see alloc). ts.mu is held.
func (d *Device) grow(ts *tierState, need uint64, untouched bool) error {
	size := min(d.opts.ChunkSize, ts.maxChunk)
	dedicated := need > size/dedicatedShare
	if dedicated {
		size = roundUp(need, chunkGranule)
		if size > ts.maxChunk {
			size = need
		}
	}
	for {
		if room := d.room(ts); size > room {
			// The driver or the kernel would hand out what it cannot back
			// (lavapipe and anonymous mmap both overcommit): refuse here,
			// where nothing is taken yet.
			if need > room {
				return fmt.Errorf("%w: %d bytes more in the %s tier, %d left to take", ErrOutOfMemory, need, ts.tier, room)
			}
			size = roundUp(need, minAlign)
		}
		if ts.limit > 0 && ts.reserved+size > ts.limit && ts.spare >= 0 {
			d.dropChunk(ts, uint32(ts.spare))
			ts.spare = -1
		}
		if ts.limit > 0 && ts.reserved+size > ts.limit {
			if ts.reserved+need > ts.limit {
				return fmt.Errorf("%w: %s tier limit %d reached (%d reserved, %d more needed)",
					ErrOutOfMemory, ts.tier, ts.limit, ts.reserved, need)
			}
			size = roundUp(need, minAlign)
		}
		c, err := d.newChunk(ts.tier, size, !(untouched && dedicated))
		if err == nil {
			c.Region = ts.a.AddRegion(size)
			for int(c.Region) >= len(ts.chunks) {
				ts.chunks = append(ts.chunks, nil)
			}
			ts.chunks[c.Region] = c
			ts.reserved += size
			d.heapReserved[ts.heap].Add(size)
			return nil
		}
		if errors.Is(err, ErrOutOfMemory) && ts.spare >= 0 {
			// The kept empty chunk was too small for this block: give it back
			// and try again.
			d.dropChunk(ts, uint32(ts.spare))
			ts.spare = -1
			continue
		}
		if errors.Is(err, ErrOutOfMemory) && d.kernDropScratch() {
			continue // kernels' kept scratch gave VRAM back
		}
		// Near the end of VRAM a smaller chunk may still fit.
		if !errors.Is(err, ErrOutOfMemory) || size <= need || size <= chunkGranule {
			return err
		}
		size = max(roundUp(size/2, chunkGranule), roundUp(need, chunkGranule))
		if size > ts.maxChunk {
			size = need
		}
	}
}

// freeBlock returns b to its tier (kern.Device.Free). It fails with
// block.ErrInvalid when b was not allocated by this device or was already
// freed; nothing changes then.
func (d *Device) freeBlock(b block.Block) error {
	if b.C == nil || b.C.Dev != d {
		return fmt.Errorf("%w: not a block of this device", block.ErrInvalid)
	}
	if err := d.enterClosedOnly(); err != nil {
		return err
	}
	defer d.exit()
	return d.free(b)
}

func (d *Device) free(b block.Block) error {
	ts := &d.tiers[b.C.Tier]
	ts.mu.Lock()
	defer ts.mu.Unlock()
	size, region, empty, ok := ts.a.Free(b.H)
	if !ok {
		return fmt.Errorf("%w: already freed", block.ErrInvalid)
	}
	ts.inUse -= size
	ts.blocks--
	if ts.traces != nil {
		delete(ts.traces, b.H)
	}
	if empty {
		// Keep one empty standard-size chunk so that a free/alloc cycle at a
		// chunk boundary does not go back to the driver each time; any other
		// empty chunk goes back at once.
		c := ts.chunks[region]
		if c.Size == min(d.opts.ChunkSize, ts.maxChunk) && ts.spare < 0 {
			ts.spare = int(region)
			return nil
		}
		d.dropChunk(ts, region)
	}
	return nil
}

// live reports whether b is still allocated: its handle names a live
// allocation (generations differ once it was freed) at b's place.
func (d *Device) live(b block.Block) bool {
	ts := &d.tiers[b.C.Tier]
	ts.mu.Lock()
	defer ts.mu.Unlock()
	region, off, _, ok := ts.a.Lookup(b.H)
	return ok && int(region) < len(ts.chunks) && ts.chunks[region] == b.C && off == b.Off
}

// dropChunk returns an empty chunk to the driver. ts.mu is held.
func (d *Device) dropChunk(ts *tierState, region uint32) {
	c := ts.chunks[region]
	if !ts.a.RemoveRegion(region) {
		panic("vmem: allocator refused to remove an empty region")
	}
	ts.chunks[region] = nil
	ts.reserved -= c.Size
	d.heapReserved[ts.heap].Add(-c.Size)
	d.releaseChunk(c)
}

// trim returns every empty chunk, and the kernels' kept scratch, to the
// driver.
func (d *Device) trim() {
	d.kernDropScratch()
	for t := range d.tiers {
		ts := &d.tiers[t]
		ts.mu.Lock()
		if ts.spare >= 0 {
			d.dropChunk(ts, uint32(ts.spare))
			ts.spare = -1
		}
		ts.mu.Unlock()
	}
}

// enterClosedOnly is enter for freeBlock: freeing still works after
// device loss, so containers can release what they hold.
func (d *Device) enterClosedOnly() error {
	d.mu.RLock()
	if d.closed.Load() {
		d.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// room is how many more bytes tier ts may take from the driver or the
// kernel in new chunks: on the host backend what the machine can still
// back (hostmem.Room), on Vulkan what the tier's heap holds less what every
// tier on that heap has already taken.
func (d *Device) room(ts *tierState) uint64 {
	used := d.heapReserved[ts.heap].Load()
	if d.vk == nil {
		if r, ok := hostmem.Room(); ok {
			return r
		}
	}
	if ts.capacity == 0 {
		return ^uint64(0) // the heap did not say: the driver decides
	}
	return ts.capacity - min(ts.capacity, used)
}

// canHold reports whether tier t (and, for a mapped request on a GPU, the
// private tier it spills into) could hold need more bytes: free space
// inside its chunks plus room for new ones, within its limit. It is an
// upper bound, for refusing at once what could never fit before anything
// is taken; the allocation itself may still fail.
func (d *Device) canHold(t Tier, need uint64) bool {
	free := func(t Tier) (inChunks, fresh uint64) {
		ts := &d.tiers[t]
		if !ts.available {
			return 0, 0
		}
		ts.mu.Lock()
		defer ts.mu.Unlock()
		inChunks = ts.reserved - ts.inUse
		fresh = d.room(ts)
		if ts.limit > 0 {
			fresh = min(fresh, ts.limit-min(ts.limit, ts.reserved))
		}
		return inChunks, fresh
	}
	in, fresh := free(t)
	total := satAdd(in, fresh)
	if t == Mapped && d.vk != nil && d.tiers[Private].available {
		pin, pfresh := free(Private)
		// Both tiers may draw on one heap: counting its room twice keeps
		// this an upper bound, which is all it must be.
		total = satAdd(satAdd(total, pin), pfresh)
	}
	return need <= total
}

// satAdd and satMul: hostmem's saturating size arithmetic.
func satAdd(a, b uint64) uint64 { return hostmem.SatAdd(a, b) }
func satMul(a, b uint64) uint64 { return hostmem.SatMul(a, b) }
