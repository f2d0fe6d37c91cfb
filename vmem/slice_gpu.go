package vmem

// Slice operations that run as GPU kernels on a Vulkan device: Sort and
// SortBy (LSD radix sort), Gather (scattered reads collected by a kernel
// and brought back by one copy), Fill (large ranges), and Sum. Each one
// records its steps into one command buffer, so it costs one round trip
// (22-35 µs on an H200; two for a sort) plus its passes over VRAM at TB/s,
// against 0.1-1.5 µs per element for the CPU reaching into VRAM. On the host
// backend, and on devices that cannot run kernels (see kernel.go), the same
// calls run on the CPU and give the same results.
//
// Sorting: keys are mapped to unsigned integers whose order is the wanted
// one (signed: flip the sign bit; floats: IEEE 754 total order, see Sort),
// widened to one 32-bit word (keys of 1 to 4 bytes) or two (8 bytes), and
// sorted 8 bits per pass: one pass per key byte (4 for 32-bit keys, 8 for
// 64-bit), less the bytes that every key shares, which a census finds
// while the keys are read (one round trip). A pass counts each tile's
// digits (sort_hist), scans the digit-major counts (scan, 3 dispatches),
// and moves each tile's keys to their places (sort_tile), stably:
// sort_tile loads a tile with coalesced loads into shared memory, sorts
// it there by the digit with subgroup scans, and writes each digit's run
// with coalesced stores (sort_scatter, the first version, stays for
// devices with less shared memory and for comparison: GOVRAM_SORT_OLD=1).
// Segments are read into one key array by sort_keys and written back by
// sort_store (Sort) or, for SortBy, the sort carries each record's index
// and sort_permute copies records from a copy of the segments taken
// first. So a Slice of many segments, in any tiers, sorts as one array;
// the scratch arrays must each fit one block (TierInfo.MaxBlock: 4 GiB on
// an H200, so up to 5e8 64-bit keys), and larger Slices are sorted on the
// CPU.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/hostmem"
	"github.com/govram/govram/internal/vk"
	"github.com/govram/govram/internal/waithook"
	"github.com/govram/govram/layout"
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
	// (22 GB/s of non-temporal stores beat a round trip below about 1 MiB).
	kernFillMin atomic.Uint64
	// kernGatherMin: a Gather of fewer elements, all in mapped segments,
	// uses streaming loads (0.1-0.25 µs each) instead of a kernel (one
	// round trip and a copy back): the planner's gather threshold.
	kernGatherMin atomic.Int64
)

// kernGatherDirect makes the gather kernel write straight into host-visible
// memory instead of VRAM followed by one copy; the benchmarks compare both.
var kernGatherDirect atomic.Bool

func init() {
	kernFillMin.Store(1 << 20)
	kernGatherMin.Store(int64(layout.DefaultPlanner().GatherMinLines))
}

// Sort sorts the Slice in increasing order.
//
// Floats are ordered by IEEE 754 total order: -NaN < -Inf < ... < -0 < +0
// < ... < +Inf < +NaN (NaNs by sign, then payload). This agrees with
// slices.Sort except that slices.Sort puts every NaN first and leaves -0
// and +0 in any order; every distinct bit pattern has its place, so the
// result is the same on every backend.
//
// On a GPU it is an LSD radix sort run as kernels in two submissions (see
// the file comment); it needs scratch VRAM of two key arrays (4 bytes an
// element, 8 for 64-bit types) and fails with ErrOutOfMemory, leaving the
// Slice unchanged, when there is none. Elsewhere, and for Slices too large
// for the kernels' scratch, it sorts on the CPU (slices.Sort).
func Sort[T Number](s *Slice[T]) error {
	if err := s.usable(); err != nil {
		return err
	}
	if s.n < 2 {
		return nil
	}
	size, kind := kernNumInfo[T]()
	err := errKernSortCPU
	if k := s.dev.kern(); k != nil {
		err = s.kernSortGPU(k, kernSortSpec{kbytes: size, kind: kind})
	}
	if errors.Is(err, errKernSortCPU) || errors.Is(err, errKernUnavailable) {
		err = s.kernSortCPU(kernSortNumbers[T])
	}
	if err == nil && kernInvariants {
		key := kernKeyFunc[T]()
		kernCheckSorted(s, func(v *T) uint64 { return key(*v) })
	}
	return err
}

// kernCheckSorted panics unless the Slice is in increasing order of key
// (the invariants build's check after every sort).
func kernCheckSorted[T any](s *Slice[T], key func(*T) uint64) {
	var last uint64
	for i, v := range s.All() {
		k := key(&v)
		if i > 0 && k < last {
			panic(fmt.Sprintf("vmem: invariant: Slice not sorted at element %d of %d", i, s.n))
		}
		last = k
	}
	// A lost device (or an injected fault) stops the read-back: the order
	// cannot be checked, and the error reaches the caller through Err.
	if err := s.err.get(); err != nil && !errors.Is(err, ErrDeviceLost) && !errors.Is(err, ErrClosed) {
		panic(fmt.Sprintf("vmem: invariant: reading back the sorted Slice: %v", err))
	}
}

// SortBy sorts the Slice by the key that key points to in each element,
// keeping elements with equal keys in their order (a stable sort). key must
// return the address of a field (or array element) of its argument, as in
// func(r *Rec) *uint64 { return &r.ID }: it is called once, on a probe
// value, to learn where the key lies, so that a GPU can read keys itself.
// Keys order as in Sort (floats by total order).
//
// On a GPU, elements whose size is a multiple of 4 bytes are sorted by
// kernels: the keys with each element's index, then the elements moved
// from a copy, which needs scratch VRAM of the Slice's size plus 16 bytes
// per element; other element types sort on the CPU (slices.SortStableFunc).
func SortBy[T any, K Number](s *Slice[T], key func(*T) *K) error {
	if err := s.usable(); err != nil {
		return err
	}
	off, err := kernKeyOffset(key)
	if err != nil {
		return err
	}
	if s.n < 2 || s.size == 0 {
		return nil
	}
	kbytes, kind := kernNumInfo[K]()
	mapKey := kernKeyFunc[K]()
	keyOf := func(v *T) uint64 { return mapKey(*(*K)(unsafe.Add(unsafe.Pointer(v), off))) }
	err = errKernSortCPU
	if k := s.dev.kern(); k != nil && s.size%4 == 0 {
		err = s.kernSortGPU(k, kernSortSpec{field: uint32(off), kbytes: kbytes, kind: kind, byKey: true})
	}
	if errors.Is(err, errKernSortCPU) || errors.Is(err, errKernUnavailable) {
		err = s.kernSortCPU(func(v []T) {
			slices.SortStableFunc(v, func(a, b T) int {
				return cmp.Compare(mapKey(*(*K)(unsafe.Add(unsafe.Pointer(&a), off))),
					mapKey(*(*K)(unsafe.Add(unsafe.Pointer(&b), off))))
			})
		})
	}
	if err == nil && kernInvariants {
		kernCheckSorted(s, keyOf)
	}
	return err
}

// kernKeyOffset finds where key's result lies in a T.
func kernKeyOffset[T any, K Number](key func(*T) *K) (uintptr, error) {
	probe := new(T)
	kp := key(probe)
	var zk K
	base, at := uintptr(unsafe.Pointer(probe)), uintptr(unsafe.Pointer(kp))
	if kp == nil || at < base || at-base+unsafe.Sizeof(zk) > unsafe.Sizeof(*probe) {
		return 0, fmt.Errorf("vmem: SortBy: the key function must return the address of a field of its argument")
	}
	return at - base, nil
}

// kernKeyFunc returns the map of keys of type K to unsigned integers of
// the same order: the CPU twin of sort_keys' mapping.
func kernKeyFunc[K Number]() func(K) uint64 {
	size, kind := kernNumInfo[K]()
	switch {
	case kind == kernFloat && size == 4:
		return func(k K) uint64 { return uint64(kernMapF32(math.Float32bits(float32(k)))) }
	case kind == kernFloat:
		return func(k K) uint64 { return kernMapF64(math.Float64bits(float64(k))) }
	case kind == kernSigned:
		return func(k K) uint64 { return uint64(int64(k)) ^ 1<<63 }
	}
	return func(k K) uint64 { return uint64(k) }
}

func kernMapF32(b uint32) uint32 {
	if b>>31 != 0 {
		return ^b
	}
	return b | 1<<31
}

func kernUnmapF32(k uint32) uint32 {
	if k>>31 != 0 {
		return k &^ (1 << 31)
	}
	return ^k
}

func kernMapF64(b uint64) uint64 {
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

func kernUnmapF64(k uint64) uint64 {
	if k>>63 != 0 {
		return k &^ (1 << 63)
	}
	return ^k
}

// kernSortNumbers sorts v in Sort's order: slices.Sort for integers; floats
// are mapped to unsigned keys in place, sorted, and mapped back.
func kernSortNumbers[T Number](v []T) {
	size, kind := kernNumInfo[T]()
	if kind != kernFloat {
		slices.Sort(v)
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(v))
	if size == 4 {
		u := unsafe.Slice((*uint32)(p), len(v))
		for i := range u {
			u[i] = kernMapF32(u[i])
		}
		slices.Sort(u)
		for i := range u {
			u[i] = kernUnmapF32(u[i])
		}
		return
	}
	u := unsafe.Slice((*uint64)(p), len(v))
	for i := range u {
		u[i] = kernMapF64(u[i])
	}
	slices.Sort(u)
	for i := range u {
		u[i] = kernUnmapF64(u[i])
	}
}

// kernSortCPU sorts with f: in place when the Slice is one run of host memory,
// else through a copy on the Go heap.
func (s *Slice[T]) kernSortCPU(f func([]T)) error {
	if len(s.segs) == 1 && s.segs[0].kind == segDirect && s.dense(0) {
		// The device stays open while its memory is sorted in place.
		if err := s.dev.enter(); err != nil {
			return err
		}
		defer s.dev.exit()
		f(unsafe.Slice((*T)(s.segs[0].base), s.n))
		return nil
	}
	buf := make([]T, s.n)
	if err := s.CopyTo(buf, 0); err != nil {
		return err
	}
	f(buf)
	return s.CopyFrom(buf, 0)
}

// kernSortSpec says what kernSortGPU sorts by and what it writes back.
type kernSortSpec struct {
	field, kbytes, kind uint32
	byKey               bool // move whole elements by their sorted indices (SortBy); else write the keys back (Sort)
}

// errKernSortCPU: the GPU sort does not take this Slice (too large for its
// scratch blocks); nothing was changed.
var errKernSortCPU = errors.New("vmem: sort runs on the CPU")

// The sort's tiles and the scan's blocks (sort.glsl, scan.comp).
const (
	kernSortTile  = kernWG * 8
	kernScanBlock = kernWG * 8
)

// kernSortTilePush mirrors sort_tile's push constants.
type kernSortTilePush struct {
	kin, kout, vin, vout, hist uint64
	n, tiles, shift, kw, flags uint32
	_                          uint32
}

// sort_tile, the scatter pass with coalesced loads and stores and subgroup
// scans, replaces sort_scatter unless GOVRAM_SORT_OLD=1 (for comparisons)
// or the device has too little shared memory for it.
var (
	kernSortTileK = newKernel("sort_tile", kernSortTilePush{}, false)
	kernSortOld   = os.Getenv("GOVRAM_SORT_OLD") == "1"
	kernSortFlags atomic.Uint32 // tests: sort_tile's flags, and kernSortFlagOld
)

// Test settings of the sort (kernSortFlags): sort_tile's scan in shared
// memory only (its fallback when subgroups do not hold consecutive
// invocations), and sort_scatter in place of sort_tile.
const (
	kernSortFlagSharedScan = 1
	kernSortFlagOld        = 1 << 31
)

// kernSortTileShared is sort_tile's shared memory in bytes: padded keys
// and items of a tile, run starts, destinations, subgroup sums, one flag.
const kernSortTileShared = (kernSortTile+kernSortTile/16)*8 + (kernSortTile+kernSortTile/32)*4 + 256*4*2 + kernWG*8 + 4

// kernSortGPU sorts the Slice with kernels: one submission reads the keys
// (the census), a second sorts them and writes the Slice.
func (s *Slice[T]) kernSortGPU(k *kernState, sp kernSortSpec) error {
	n := uint64(s.n)
	if n >= 1<<31 {
		return errKernSortCPU
	}
	kw := uint64(1)
	if sp.kbytes == 8 {
		kw = 2
	}
	tiles := (n + kernSortTile - 1) / kernSortTile
	hlen := 256 * tiles
	parts := (hlen + kernScanBlock - 1) / kernScanBlock
	segBytes := uint64(0)
	if len(s.segs) > 1 {
		segBytes = s.bytesFor(s.segCap())
	}
	type span struct {
		sg        *segment
		first, nn uint64
	}
	var spans []span
	for i := range s.segs {
		first := uint64(i) << s.shift
		if first >= n {
			break
		}
		spans = append(spans, span{&s.segs[i], first, min(n-first, uint64(s.segs[i].cap))})
	}
	sizes := []uint64{n * kw * 4, n * kw * 4, hlen * 4, parts * 4}
	if sp.byKey {
		last := spans[len(spans)-1]
		image := uint64(len(spans)-1)*segBytes + s.bytesFor(int(last.nn))
		sizes = append(sizes, n*4, n*4, image)
	}
	blks, free, err := s.dev.kernAllocAll(sizes)
	if err != nil {
		return err
	}
	defer free()
	keysA, keysB, hist, part := blks[0], blks[1], blks[2], blks[3]
	var valsA, valsB, image kernPart
	if sp.byKey {
		valsA, valsB, image = blks[4], blks[5], blks[6]
	}

	// The census: keys are read into the key array and, on the way, ORed
	// and ANDed together, so that passes over digits every key shares are
	// skipped (half of them for 64-bit keys below 2^32, say). It costs a
	// round trip of its own.
	if err := s.dev.enter(); err != nil {
		return err
	}
	census, err := s.dev.kernTakeScratch(kernScratchHost, 16)
	if err != nil {
		s.dev.exit()
		return err
	}
	defer s.dev.kernPutScratch(kernScratchHost, census)
	bits := unsafe.Slice((*uint32)(census.Ptr), 4)
	bits[0], bits[1], bits[2], bits[3] = 0, 0, ^uint32(0), ^uint32(0)

	b := s.dev.newKernBatch(k)
	perLine, group, stride := uint32(s.perLine), uint32(s.group), uint32(s.stride)
	if sp.byKey {
		for i, sn := range spans {
			b.copy(image.mem, image.off+uint64(i)*segBytes, sn.sg.blk.c.mem, sn.sg.blk.off, s.bytesFor(int(sn.nn)))
		}
	}
	for _, sn := range spans {
		p := kernSortKeysPush{src: sn.sg.blk.kaddr(0), keys: keysA.kaddr(0), n: uint32(sn.nn), first: uint32(sn.first),
			perLine: perLine, group: group, stride: stride, field: sp.field, kbytes: sp.kbytes, kind: sp.kind,
			bits: census.Addr}
		if sp.byKey {
			p.vals = valsA.kaddr(0)
		}
		b.dispatch(kernSortKeys, k.groups(sn.nn), bytesOf(&p))
	}
	err = s.dev.kernRunHeld(b)
	s.dev.exit()
	if err != nil {
		return err
	}
	differ := uint64(bits[0]^bits[2]) | uint64(bits[1]^bits[3])<<32
	var passes []uint32
	for pass := uint32(0); pass < sp.kbytes; pass++ {
		if differ>>(pass*8)&0xff != 0 {
			passes = append(passes, pass)
		}
	}
	if len(passes) == 0 {
		return nil // every key is the same: the order stands (the sort is stable)
	}

	b = s.dev.newKernBatch(k)
	kin, kout, vin, vout := keysA, keysB, valsA, valsB
	tileGroups := uint32(min(tiles, uint64(k.maxGroups)))
	scanGroups := uint32(min(parts, uint64(k.maxGroups)))
	flags := kernSortFlags.Load()
	useTile := !kernSortOld && flags&kernSortFlagOld == 0 && s.dev.vk.pd.Compute.MaxSharedMemory >= kernSortTileShared
	for _, pass := range passes {
		shift := pass * 8
		hp := kernSortHistPush{keys: kin.kaddr(0), hist: hist.kaddr(0), n: uint32(n), tiles: uint32(tiles), shift: shift, kw: uint32(kw)}
		b.dispatch(kernSortHist, tileGroups, bytesOf(&hp))
		b.barrier()
		for phase := uint32(0); phase < 3; phase++ {
			sc := kernScanPush{data: hist.kaddr(0), part: part.kaddr(0), n: uint32(hlen), phase: phase}
			g := scanGroups
			if phase == 1 {
				sc.n, g = uint32(parts), 1
			}
			b.dispatch(kernScan, g, bytesOf(&sc))
			b.barrier()
		}
		if useTile {
			tp := kernSortTilePush{kin: kin.kaddr(0), kout: kout.kaddr(0), hist: hist.kaddr(0),
				n: uint32(n), tiles: uint32(tiles), shift: shift, kw: uint32(kw), flags: flags & kernSortFlagSharedScan}
			if sp.byKey {
				tp.vin, tp.vout = vin.kaddr(0), vout.kaddr(0)
			}
			b.dispatch(kernSortTileK, tileGroups, bytesOf(&tp))
		} else {
			sp2 := kernSortScatterPush{kin: kin.kaddr(0), kout: kout.kaddr(0), hist: hist.kaddr(0),
				n: uint32(n), tiles: uint32(tiles), shift: shift, kw: uint32(kw)}
			if sp.byKey {
				sp2.vin, sp2.vout = vin.kaddr(0), vout.kaddr(0)
			}
			b.dispatch(kernSortScatter, tileGroups, bytesOf(&sp2))
		}
		b.barrier()
		kin, kout, vin, vout = kout, kin, vout, vin
	}
	for _, sn := range spans {
		if sp.byKey {
			words := uint32(s.size / 4)
			p := kernSortPermutePush{src: image.kaddr(0), perm: vin.kaddr(0), dst: sn.sg.blk.kaddr(0), segBytes: segBytes,
				n: uint32(sn.nn), first: uint32(sn.first), words: words, perLine: perLine, group: group, stride: stride,
				shift: uint32(s.shift)}
			b.dispatch(kernSortPermute, k.groups(sn.nn*uint64(words)), bytesOf(&p))
			continue
		}
		p := kernSortStorePush{keys: kin.kaddr(0), dst: sn.sg.blk.kaddr(0), n: uint32(sn.nn), first: uint32(sn.first),
			esize: sp.kbytes, kind: sp.kind}
		items := sn.nn
		if sp.kbytes < 4 {
			items = (sn.nn*uint64(sp.kbytes) + 3) / 4
		}
		b.dispatch(kernSortStore, k.groups(items), bytesOf(&p))
	}
	return s.dev.kernRun(b)
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
// and release cost the driver 90 ms, four times the sort itself, so the
// buffer is kept for the next sort and given back whenever an allocation
// finds VRAM full, see kernDropScratch). Otherwise it takes blocks of the
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
	alloc := func(sz uint64) (Block, error) {
		b, err := d.Alloc(Private, sz, 256)
		if err != nil && (errors.Is(err, ErrOutOfMemory) || errors.Is(err, ErrNoTier) || errors.Is(err, ErrTooLarge)) {
			b, err = d.Alloc(Mapped, sz, 256)
		}
		return b, err
	}
	var blks []Block
	free := func() {
		for _, b := range blks {
			d.Free(b)
		}
	}
	parts := make([]kernPart, len(sizes))
	if total <= d.tiers[Private].maxChunk || total <= d.tiers[Mapped].maxChunk {
		b, err := alloc(total)
		if err == nil {
			blks = append(blks, b)
			return layout(b.c.mem, b.off), free, nil
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
		parts[i] = kernPart{b.c.mem, b.off}
	}
	return parts, free, nil
}

// Gather reads the elements at indices into dst (dst[k] = element
// indices[k]); len(dst) must equal len(indices). An index out of range
// gives ErrRange; dst's contents are then unspecified.
//
// On a GPU a kernel collects the elements into one contiguous buffer,
// which one copy brings back (directly into dst when dst lies in a Host
// block of the device): one round trip per 16 MiB of elements, the
// batches pipelined so that the GPU gathers one while the CPU copies the
// last one out. Few indices into mapped segments are read with streaming
// loads instead (GetMany). On the host backend it is a plain loop.
//
// Gather only reads: like Get, it may run concurrently with other readers.
func (s *Slice[T]) Gather(indices []int, dst []T) error {
	if err := s.usable(); err != nil {
		return err
	}
	if len(dst) != len(indices) {
		return fmt.Errorf("vmem: Slice.Gather: %d indices for %d elements of dst: %w", len(indices), len(dst), ErrRange)
	}
	if len(indices) == 0 || s.size == 0 {
		return s.kernGatherCPU(indices, dst)
	}
	if k := s.dev.kern(); k != nil {
		if len(indices) >= int(kernGatherMin.Load()) || !s.kernAllMapped() {
			err := s.kernGatherGPU(k, indices, dst)
			if !errors.Is(err, errKernUnavailable) {
				return err
			}
		}
	}
	return s.kernGatherCPU(indices, dst)
}

func (s *Slice[T]) kernAllMapped() bool {
	for _, sg := range s.segs {
		if sg.kind == segDMA {
			return false
		}
	}
	return true
}

func (s *Slice[T]) kernBadIndex(x int) error {
	return fmt.Errorf("vmem: Slice.Gather: index %d out of range [0:%d]: %w", x, s.n, ErrRange)
}

// kernGatherCPU reads element by element: plain loads on host memory,
// interleaved streaming loads on mapped VRAM (GetMany), DMA on private
// VRAM. Indices are checked first, so dst is untouched on ErrRange.
func (s *Slice[T]) kernGatherCPU(indices []int, dst []T) error {
	for _, x := range indices {
		if uint(x) >= uint(s.n) {
			return s.kernBadIndex(x)
		}
	}
	if err := s.dev.enter(); err != nil {
		return err
	}
	if !s.kernAllMapped() {
		// Private segments are read by DMA, which enters the device itself.
		s.dev.exit()
	} else {
		// The device stays open while its memory is read directly.
		defer s.dev.exit()
	}
	if s.dev.vk != nil && s.kernAllMapped() {
		s.GetMany(indices, dst)
		return nil
	}
	for k, x := range indices {
		sg := &s.segs[x>>s.shift]
		j := x & (1<<s.shift - 1)
		switch sg.kind {
		case segDirect:
			dst[k] = *(*T)(unsafe.Add(sg.base, s.off(j)))
		case segWC:
			dst[k] = loadWC[T](unsafe.Add(sg.base, s.off(j)), s.size)
		default:
			if err := s.dev.Read(bytesOf(&dst[k]), sg.blk, uint64(s.off(j))); err != nil {
				return err
			}
		}
	}
	return nil
}

// kernGatherBatch bounds the bytes one gather submission brings back (16
// MiB; tests make it small). The batches are pipelined: while the GPU
// gathers one, the CPU copies the previous one out and computes the
// addresses of the next.
var kernGatherBatch atomic.Uint64

func init() { kernGatherBatch.Store(16 << 20) }

// kernGatherSlot is one stage of the gather pipeline: host scratch for the
// addresses and the elements brought back, VRAM scratch for the kernel's
// output, and the batch in flight.
type kernGatherSlot struct {
	host, dev *vk.Memory
	flight    *kernFlight
	out       []byte // where the batch's elements go, when the CPU copies them
}

func (s *Slice[T]) kernGatherGPU(k *kernState, indices []int, dst []T) (err error) {
	d := s.dev
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	// The kernels read s's segments until the last flight is waited for
	// (deferred below, and so run before this).
	defer runtime.KeepAlive(s)
	esize := uint64(s.size)
	g, st := uint64(s.group), uint64(s.stride)
	mode := uint32(2)
	switch {
	case esize%16 == 0 && g%16 == 0 && (s.perLine == 1 || st%16 == 0):
		mode = 0
	case esize%4 == 0 && g%4 == 0 && (s.perLine == 1 || st%4 == 0):
		mode = 1
	}
	segAddr := make([]uint64, len(s.segs))
	for i := range s.segs {
		segAddr[i] = s.segs[i].blk.kaddr(0)
	}
	total := uint64(len(indices))
	per := max(kernGatherBatch.Load()/esize, 1)
	m0 := min(total, per)
	outBytes := roundUp(m0*esize, 16)
	addrBytes := roundUp(m0*8, 256)
	direct := kernGatherDirect.Load()

	var slots [2]kernGatherSlot
	nslots := 1
	if total > per {
		nslots = 2
	}
	defer func() {
		for i := range slots {
			sl := &slots[i]
			if sl.flight != nil {
				if werr := sl.flight.wait(); err == nil {
					err = werr
				}
			}
			d.kernPutScratch(kernScratchHost, sl.host)
			d.kernPutScratch(kernScratchDevice, sl.dev)
		}
	}()
	for i := 0; i < nslots; i++ {
		if slots[i].host, err = d.kernTakeScratch(kernScratchHost, addrBytes+outBytes); err != nil {
			return err
		}
		if !direct {
			if slots[i].dev, err = d.kernTakeScratch(kernScratchDevice, outBytes); err != nil {
				return err
			}
		}
	}
	// finish waits for a slot's batch and copies its elements out.
	finish := func(sl *kernGatherSlot) error {
		f := sl.flight
		sl.flight = nil
		if err := f.wait(); err != nil {
			return err
		}
		if sl.out != nil {
			memcpy(unsafe.Pointer(unsafe.SliceData(sl.out)), hostmem.Add(sl.host.Ptr, addrBytes), uint64(len(sl.out)))
		}
		return nil
	}
	var prev *kernGatherSlot
	for i, at := 0, uint64(0); at < total; i, at = i+1, at+per {
		sl := &slots[i%nslots]
		m := min(total-at, per)
		addrs := unsafe.Slice((*uint64)(sl.host.Ptr), m)
		if bad := s.kernGatherAddrs(indices[at:at+m], addrs, segAddr); bad >= 0 {
			return s.kernBadIndex(indices[at+uint64(bad)])
		}
		n := m * esize
		out := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst[at:]))), n)
		b := d.newKernBatch(k)
		p := kernGatherPush{addrs: sl.host.Addr, n: uint32(m), esize: uint32(esize), mode: mode}
		items := (n + 3) / 4
		switch mode {
		case 0:
			items = n / 16
		case 1:
			items = n / 4
		}
		sl.out = out
		if direct {
			p.dst = sl.host.Addr + addrBytes
			b.dispatch(kernGather, k.groups(items), bytesOf(&p))
		} else {
			p.dst = sl.dev.Addr
			b.dispatch(kernGather, k.groups(items), bytesOf(&p))
			b.barrier()
			if c, coff := d.vk.chunkOf(unsafe.Pointer(unsafe.SliceData(out)), n); c != nil {
				// dst is pinned memory of this device: the copy lands there.
				b.copy(c.mem, coff, sl.dev, 0, n)
				sl.out = nil
			} else {
				b.copy(sl.host, addrBytes, sl.dev, 0, n)
			}
		}
		if sl.flight, err = d.kernSubmit(b); err != nil {
			return err
		}
		if prev != nil {
			if err := finish(prev); err != nil {
				return err
			}
		}
		prev = sl
	}
	return finish(prev)
}

// kernGatherAddrs writes the device address of each index's element into
// out, on several goroutines for large batches. It returns the position of
// an index out of range, or -1.
func (s *Slice[T]) kernGatherAddrs(idx []int, out []uint64, segAddr []uint64) int {
	bad := atomic.Int64{}
	bad.Store(-1)
	work := func(lo, hi int) {
		mask := 1<<s.shift - 1
		n := uint(s.n)
		for i := lo; i < hi; i++ {
			x := idx[i]
			if uint(x) >= n {
				bad.CompareAndSwap(-1, int64(i))
				return
			}
			out[i] = segAddr[x>>s.shift] + uint64(s.off(x&mask))
		}
	}
	const part = 1 << 16
	if len(idx) < 2*part {
		work(0, len(idx))
		return int(bad.Load())
	}
	var wg sync.WaitGroup
	step := max(part, (len(idx)+7)/8)
	for lo := 0; lo < len(idx); lo += step {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			work(lo, hi)
		}(lo, min(lo+step, len(idx)))
	}
	waithook.Run()
	wg.Wait()
	runtime.KeepAlive(s)
	return int(bad.Load())
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
		blk          Block
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
		b.update(r.blk.c.mem, r.blk.off+r.start, pattern[:min(pat, r.bytes)])
	}
	if len(runs) > 0 {
		b.barrier()
	}
	for _, r := range runs {
		if r.bytes > pat {
			p := kernFillPush{dst: r.blk.kaddr(r.start), n: uint32(r.bytes / 16), period: uint32(pat / 16)}
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
