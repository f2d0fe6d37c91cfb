package vmem

// Slice operations that run as GPU kernels on a Vulkan device: Sort and
// SortBy (LSD radix sort, slice_sort.go), GetBatch (scattered reads collected
// by a kernel and brought back by one copy, slice_gather.go), Fill (large
// ranges), and Sum. Each one records its steps into one command buffer, so
// it costs one GPU round trip (two for a sort) plus its passes over VRAM,
// against a CPU access into VRAM per element (docs/gpu.md has the
// figures). On the host backend, and on devices that cannot run kernels
// (see kernel.go), the same calls run on the CPU and give the same results.

import (
	"errors"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/lines"
	"github.com/govram/govram/internal/vk"
)

// Number is the element types that Sort and Sum take: Go's integer and
// floating-point types and types defined on them.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64
}

// Key kinds, as the sort and reduce kernels name them.
const (
	kernUnsigned = 0
	kernSigned   = 1
	kernFloat    = 2
)

// kernNumInfo returns the size and kind of a Number type.
func kernNumInfo[T Number]() (size, kind uint32) {
	var zero T
	size = uint32(unsafe.Sizeof(zero))
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return size, kernSigned
	case reflect.Float32, reflect.Float64:
		return size, kernFloat
	}
	return size, kernUnsigned
}

// Thresholds below which operations stay on the CPU. Atomic so that tests
// can lower them (to run kernels on small data) while others read them.
var (
	// kernFillMin: a Fill of fewer bytes per segment is written by the CPU
	// (below about 1 MiB, its non-temporal stores finish before a GPU
	// round trip would: docs/physics.md).
	kernFillMin atomic.Uint64
	// kernGatherMin: a Gather of fewer elements, all in mapped segments,
	// uses streaming loads (no fixed cost) instead of a kernel (one
	// round trip and a copy back): the planner's gather threshold.
	kernGatherMin atomic.Int64
)

// kernGatherDirect makes the gather kernel write straight into host-visible
// memory instead of VRAM followed by one copy; the benchmarks compare both.
var kernGatherDirect atomic.Bool

func init() {
	kernFillMin.Store(1 << 20)
	kernGatherMin.Store(int64(lines.DefaultPlanner().GatherMinLines))
}

// kernPart is a piece of kernel scratch: memory and the piece's offset in
// it.
type kernPart struct {
	mem *vk.Memory
	off uint64
}

func (p kernPart) kaddr(o uint64) uint64 { return p.mem.Addr + p.off + o }

// kernAllocAll allocates scratch for kernels: a part of each size (aligned
// to 256 bytes). It takes one kept scratch buffer of the device when one
// fits or can be made (a sort of 10^8 keys needs 1.6 GB, whose allocation
// and release cost the driver several times the sort itself, as
// BenchmarkSortScratch against BenchmarkSliceSort shows, so the buffer is
// kept for the next sort and given back whenever an allocation finds VRAM
// full, see kernDropScratch). Otherwise it takes blocks of the
// private tier or else the mapped one, all parts in one block when they
// fit. On failure it frees what it took. A part too large for either
// tier's blocks gives errKernSortCPU.
func (d *Device) kernAllocAll(sizes []uint64) ([]kernPart, func(), error) {
	total := uint64(0)
	for _, sz := range sizes {
		total += roundUp(max(sz, 64), 256)
	}
	layout := func(mem *vk.Memory, base uint64) []kernPart {
		parts := make([]kernPart, len(sizes))
		off := base
		for i, sz := range sizes {
			parts[i] = kernPart{mem, off}
			off += roundUp(max(sz, 64), 256)
		}
		return parts
	}
	// Kept scratch lies outside the tiers' accounting: not where a tier
	// limit (Options.Limits) bounds what the device may take.
	if d.tiers[Private].memType >= 0 && d.tiers[Private].limit == 0 && total <= d.tiers[Private].maxChunk {
		// Injected allocation faults apply here as to Alloc.
		if err := d.faults.alloc(); err != nil {
			return nil, nil, err
		}
		if m, err := d.kernTakeScratch(kernScratchDevice, total); err == nil {
			return layout(m, 0), func() { d.kernPutScratch(kernScratchDevice, m) }, nil
		}
	}
	maxBlock := max(d.tiers[Private].maxChunk, d.tiers[Mapped].maxChunk)
	for _, sz := range sizes {
		if sz > maxBlock {
			return nil, nil, errKernSortCPU
		}
	}
	alloc := func(sz uint64) (block.Block, error) {
		b, err := d.alloc(Private, sz, 256, false)
		if err != nil && (errors.Is(err, ErrOutOfMemory) || errors.Is(err, ErrTooLarge)) {
			b, err = d.alloc(Mapped, sz, 256, false)
		}
		return b, err
	}
	var blks []block.Block
	free := func() {
		for _, b := range blks {
			d.freeBlock(b)
		}
	}
	parts := make([]kernPart, len(sizes))
	if total <= d.tiers[Private].maxChunk || total <= d.tiers[Mapped].maxChunk {
		b, err := alloc(total)
		if err == nil {
			blks = append(blks, b)
			return layout(b.C.Mem, b.Off), free, nil
		}
		if !errors.Is(err, ErrOutOfMemory) && !errors.Is(err, ErrTooLarge) {
			return nil, nil, err
		}
	}
	// Separately: smaller blocks may still fit where one large one did not.
	for i, sz := range sizes {
		b, err := alloc(max(sz, 64))
		if err != nil {
			free()
			return nil, nil, err
		}
		blks = append(blks, b)
		parts[i] = kernPart{b.C.Mem, b.Off}
	}
	return parts, free, nil
}

// fillKernel fills [lo, hi) on the GPU where that pays: ranges of at least
// kernFillMin bytes in a segment. The middle of each such range, in whole
// record groups starting and ending on 16-byte boundaries, is written by
// one inline update of a pattern (the least whole number of groups that
// is a whole number of 16-byte units) and the fill kernel replicating it;
// the ragged ends, and small ranges, go through CopyFrom. It reports false
// when the GPU takes no part, leaving the whole fill to the caller.
func (s *Slice[T]) fillKernel(lo, hi int, v T) (bool, error) {
	if s.dev.vk == nil || s.size == 0 || hi <= lo {
		return false, nil
	}
	g := uint64(s.group)
	per := uint64(s.perLine)
	minBytes := kernFillMin.Load()
	if uint64(hi-lo)*g/per < minBytes {
		return false, nil
	}
	pat := kernLCM(g, 16)
	if pat > vk.MaxUpdate {
		return false, nil
	}
	k := s.dev.kern()
	if k == nil {
		return false, nil
	}
	if err := s.dev.enter(); err != nil {
		return true, err
	}
	pattern := make([]byte, pat)
	for gi := uint64(0); gi < pat/g; gi++ {
		for r := uint64(0); r < per; r++ {
			*(*T)(unsafe.Pointer(&pattern[gi*g+r*uint64(s.stride)])) = v
		}
	}
	b := s.dev.newKernBatch(k)
	var cpu [][2]int
	type run struct {
		blk          block.Block
		start, bytes uint64
	}
	var runs []run
	s.pieces(lo, hi-lo, func(sg *segment, j, from, cnt int) error {
		base := lo + from - j // global index of the segment's first element
		j0, j1 := uint64(j), uint64(j+cnt)
		if (j1-j0)*g/per < minBytes {
			cpu = append(cpu, [2]int{lo + from, lo + from + cnt})
			return nil
		}
		ga := (j0 + per - 1) / per
		for ga*g%16 != 0 {
			ga++
		}
		gb := j1 / per
		for gb > ga && gb*g%16 != 0 {
			gb--
		}
		if gb <= ga {
			cpu = append(cpu, [2]int{lo + from, lo + from + cnt})
			return nil
		}
		if e := int(ga * per); e > int(j0) {
			cpu = append(cpu, [2]int{base + int(j0), base + e})
		}
		if e := int(gb * per); e < int(j1) {
			cpu = append(cpu, [2]int{base + e, base + int(j1)})
		}
		runs = append(runs, run{sg.blk, ga * g, (gb - ga) * g})
		return nil
	})
	for _, r := range runs {
		b.update(r.blk.C.Mem, r.blk.Off+r.start, pattern[:min(pat, r.bytes)])
	}
	if len(runs) > 0 {
		b.barrier()
	}
	for _, r := range runs {
		if r.bytes > pat {
			p := kernFillPush{dst: kaddr(r.blk, r.start), n: uint32(r.bytes / 16), period: uint32(pat / 16)}
			b.dispatch(kernFill, k.groups(r.bytes/16-pat/16), bytesOf(&p))
		}
	}
	err := s.dev.kernRunHeld(b)
	s.dev.exit()
	if err != nil {
		// No kernel pipeline: nothing was written; the CPU does it all.
		return !errors.Is(err, errKernUnavailable), err
	}
	for _, c := range cpu {
		if err := s.kernFillCopy(c[0], c[1], v); err != nil {
			return true, err
		}
	}
	return true, nil
}

// kernFillCopy fills [lo, hi) by copying a pattern from the Go heap.
func (s *Slice[T]) kernFillCopy(lo, hi int, v T) error {
	chunk := min(hi-lo, 1<<20/int(max(s.size, 1))+s.perLine)
	pat := make([]T, chunk)
	for i := range pat {
		pat[i] = v
	}
	for at := lo; at < hi; at += chunk {
		if err := s.CopyFrom(pat[:min(chunk, hi-at)], at); err != nil {
			return err
		}
	}
	return nil
}

func kernLCM(a, b uint64) uint64 {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}
