package vmem

// Sort and SortBy on the GPU: an LSD radix sort.
//
// Keys are mapped to unsigned integers whose order is the wanted
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
// devices with less shared memory and for comparison: VMEM_SORT_OLD=1).
// Segments are read into one key array by sort_keys and written back by
// sort_store (Sort) or, for SortBy, the sort carries each record's index
// and sort_permute copies records from a copy of the segments taken
// first. So a Slice of many segments, in any tiers, sorts as one array;
// the scratch arrays must each fit one block (TierInfo.MaxBlock; docs/gpu.md
// says how many keys that is on the GPU it describes), and larger Slices
// are sorted on the CPU.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/buildconst"
)

// Sort sorts a Slice in increasing order.
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
//
// On a pool, each device's part is sorted so on its device, all at once (a
// part whose device has no room for the scratch sorts on the CPU), then the
// parts are merged on the CPU into host memory of the Slice's size and
// copied back.
func Sort[T Number](s *Slice[T]) error {
	if s.sh != nil {
		return poolSort(s.sh)
	}
	return sortSlice(s)
}

func sortSlice[T Number](s *Slice[T]) error {
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
	if err == nil && buildconst.Invariants {
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

// SortBy sorts a Slice by the key that key points to in
// each element, keeping elements with equal keys in their order (a stable
// sort). key must return the address of a field (or array element) of its
// argument, as in func(r *Rec) *uint64 { return &r.ID }: it is called
// once, on a probe value, to learn where the key lies, so that a GPU can
// read keys itself.
// Keys order as in Sort (floats by total order).
//
// On a GPU, elements whose size is a multiple of 4 bytes are sorted by
// kernels: the keys with each element's index, then the elements moved
// from a copy, which needs scratch VRAM of the Slice's size plus 16 bytes
// per element; other element types sort on the CPU (slices.SortStableFunc).
//
// On a pool, a Slice whose elements lie on one device, or whose placement
// is FillFirst, has its parts sorted so and merged as by Sort; a striped
// one over several devices is sorted on the CPU, as a merge of its parts
// would not keep equal keys in their order.
func SortBy[T any, K Number](s *Slice[T], key func(*T) *K) error {
	if s.sh != nil {
		return poolSortBy(s.sh, key)
	}
	return sortSliceBy(s, key)
}

func sortSliceBy[T any, K Number](s *Slice[T], key func(*T) *K) error {
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
	if err == nil && buildconst.Invariants {
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
	if len(s.segs) == 1 && s.segs[0].Kind == access.Direct && s.dense(0) {
		// The device stays open while its memory is sorted in place.
		if err := s.dev.enter(); err != nil {
			return err
		}
		defer s.dev.exit()
		f(unsafe.Slice((*T)(s.segs[0].Base), s.n))
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
// scans, replaces sort_scatter unless VMEM_SORT_OLD=1 (for comparisons)
// or the device has too little shared memory for it.
var (
	kernSortTileK = newKernel("sort_tile", kernSortTilePush{}, false)
	kernSortOld   = os.Getenv("VMEM_SORT_OLD") == "1"
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
	var spans []kernSortSpan
	for i := range s.segs {
		first := uint64(i) << s.shift
		if first >= n {
			break
		}
		spans = append(spans, kernSortSpan{&s.segs[i], first, min(n-first, uint64(s.segs[i].cap))})
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

	passes, err := s.kernSortCensus(k, sp, spans, segBytes, keysA, valsA, image)
	if err != nil || len(passes) == 0 {
		return err // len(passes) == 0: every key is the same, the order stands (the sort is stable)
	}

	b := s.dev.newKernBatch(k)
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
	s.kernSortWriteBack(b, k, sp, spans, segBytes, image, kin, vin)
	// Each pass reads the keys twice and writes them once (values alike),
	// in kernels that loop over tiles: their dispatch counts understate it.
	passBytes := n * kw * 4 * 3
	if sp.byKey {
		passBytes *= 3
	}
	b.work(satMul(passBytes, uint64(len(passes))))
	return s.dev.kernRun(b)
}

// kernSortSpan is one segment's share of a sort: the segment, the index of
// its first element, and how many of its elements the Slice holds.
type kernSortSpan struct {
	sg        *segment
	first, nn uint64
}

// kernSortCensus reads the keys into keys (and, sorting by key, their
// indices into vals, and the segments into image) and returns the passes
// the sort needs: none when every key is the same.
func (s *Slice[T]) kernSortCensus(k *kernState, sp kernSortSpec, spans []kernSortSpan, segBytes uint64, keys, vals, image kernPart) ([]uint32, error) {
	// The census: keys are read into the key array and, on the way, ORed
	// and ANDed together, so that passes over digits every key shares are
	// skipped (half of them for 64-bit keys below 2^32, say). It costs a
	// round trip of its own.
	if err := s.dev.enter(); err != nil {
		return nil, err
	}
	census, err := s.dev.kernTakeScratch(kernScratchHost, 16)
	if err != nil {
		s.dev.exit()
		return nil, err
	}
	defer s.dev.kernPutScratch(kernScratchHost, census)
	bits := unsafe.Slice((*uint32)(census.Ptr), 4)
	bits[0], bits[1], bits[2], bits[3] = 0, 0, ^uint32(0), ^uint32(0)

	b := s.dev.newKernBatch(k)
	perLine, group, stride := uint32(s.perLine), uint32(s.group), uint32(s.stride)
	if sp.byKey {
		for i, sn := range spans {
			b.copy(image.mem, image.off+uint64(i)*segBytes, sn.sg.blk.C.Mem, sn.sg.blk.Off, s.bytesFor(int(sn.nn)))
		}
	}
	for _, sn := range spans {
		p := kernSortKeysPush{src: kaddr(sn.sg.blk, 0), keys: keys.kaddr(0), n: uint32(sn.nn), first: uint32(sn.first),
			perLine: perLine, group: group, stride: stride, field: sp.field, kbytes: sp.kbytes, kind: sp.kind,
			bits: census.Addr}
		if sp.byKey {
			p.vals = vals.kaddr(0)
		}
		b.dispatch(kernSortKeys, k.groups(sn.nn), bytesOf(&p))
	}
	err = s.dev.kernRunHeld(b)
	s.dev.exit()
	if err != nil {
		return nil, err
	}
	differ := uint64(bits[0]^bits[2]) | uint64(bits[1]^bits[3])<<32
	var passes []uint32
	for pass := uint32(0); pass < sp.kbytes; pass++ {
		if differ>>(pass*8)&0xff != 0 {
			passes = append(passes, pass)
		}
	}
	return passes, nil
}

// kernSortWriteBack records the writing of the sorted keys (Sort) or of the
// records in their sorted order (SortBy: perm holds the indices) back into
// the segments.
func (s *Slice[T]) kernSortWriteBack(b *kernBatch, k *kernState, sp kernSortSpec, spans []kernSortSpan, segBytes uint64, image, keys, perm kernPart) {
	perLine, group, stride := uint32(s.perLine), uint32(s.group), uint32(s.stride)
	for _, sn := range spans {
		if sp.byKey {
			words := uint32(s.size / 4)
			p := kernSortPermutePush{src: image.kaddr(0), perm: perm.kaddr(0), dst: kaddr(sn.sg.blk, 0), segBytes: segBytes,
				n: uint32(sn.nn), first: uint32(sn.first), words: words, perLine: perLine, group: group, stride: stride,
				shift: uint32(s.shift)}
			b.dispatch(kernSortPermute, k.groups(sn.nn*uint64(words)), bytesOf(&p))
			continue
		}
		p := kernSortStorePush{keys: keys.kaddr(0), dst: kaddr(sn.sg.blk, 0), n: uint32(sn.nn), first: uint32(sn.first),
			esize: sp.kbytes, kind: sp.kind}
		items := sn.nn
		if sp.kbytes < 4 {
			items = (sn.nn*uint64(sp.kbytes) + 3) / 4
		}
		b.dispatch(kernSortStore, k.groups(items), bytesOf(&p))
	}
}
