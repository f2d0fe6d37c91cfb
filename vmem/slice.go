package vmem

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/waithook"
	"github.com/govram/govram/layout"
)

// Slice is a typed, growable array in device memory, the primitive
// container: like make([]T, n), with elements off the Go heap.
//
// Elements live in segments (blocks of at most 1 GiB on a GPU), each in the
// mapped tier while it has room and in the private tier after that, so one
// Slice can hold all of VRAM. How an element is reached depends on its
// segment:
//
//   - mapped VRAM: Get reads the element's line with one 64-byte streaming
//     load (about 0.1-0.25 µs; a plain load would take 1.5 µs); Set stores
//     and fences. Many Sets belong in a Writer, which batches, sorts and
//     writes whole lines.
//   - private VRAM: every single-element access is a DMA round trip (about
//     20 µs). Use CopyFrom, CopyTo, All and Chunks there.
//   - host backend: plain loads and stores, as fast as a []T.
//
// Records that fit in a line never straddle two (see layout.Record); on the
// host backend elements sit as in a Go array.
//
// Concurrency is that of a []T: any number of goroutines may call Get,
// CopyTo, All and Chunks at once; a goroutine that changes the Slice (Set,
// Append, Grow, CopyFrom, Fill, a Writer's Flush, Close) must not overlap
// with any other call.
type Slice[T any] struct {
	dev     *Device
	size    uintptr // unsafe.Sizeof(T)
	perLine int     // records per group (1 when dense)
	group   uintptr // bytes per group
	stride  uintptr // bytes between records of a group
	shift   uint    // a full segment holds 1<<shift elements
	segs    []segment
	n       int
	closed  bool
	err     stickyErr   // first DMA error of Get/Set on private segments
	held    *heldBlocks // what the leak backstop frees
	unreg   func()      // removes the Slice from the device's AtClose list
	tier    Tier        // tier new segments try first

	// inflight counts SliceWriter batches being written in the background:
	// waited for before a segment moves or is freed.
	inflight sync.WaitGroup

	// Fast path for host memory: the first segment's elements as a Go
	// slice, when they are in Go array layout. A variable shift and segment
	// lookup per Get cost more than the load itself when memory is ordinary
	// RAM.
	fast []T
	// wcN: elements [0, wcN) are at base0 in mapped VRAM, densely packed
	// and at most a line each, so a Get is one streaming load with no
	// segment lookup. Few instructions per Get matter: the CPU overlaps
	// the ~1 µs loads of successive Gets only as far as its reorder
	// window reaches.
	wcN   uint
	base0 unsafe.Pointer
}

type segKind uint8

const (
	segDirect segKind = iota // cacheable host memory: plain loads and stores
	segWC                    // mapped VRAM: streaming loads, fenced stores
	segDMA                   // private VRAM: DMA only
)

type segment struct {
	blk  Block
	base unsafe.Pointer // nil for segDMA
	kind segKind
	cap  int
}

// heldBlocks is shared with the cleanup that frees a Slice's memory if it
// is garbage collected without Close.
type heldBlocks struct {
	mu   sync.Mutex
	dev  *Device
	blks []Block
}

func (h *heldBlocks) free() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range h.blks {
		h.dev.Free(b)
	}
	h.blks = nil
}

// SliceOption configures NewSlice.
type SliceOption func(*sliceConfig)

type sliceConfig struct {
	capacity int
	tier     Tier
	segBytes uint64
}

// WithCapacity reserves room for c elements.
func WithCapacity(c int) SliceOption { return func(o *sliceConfig) { o.capacity = c } }

// InTier makes new segments go to tier t first (default Mapped; Private
// keeps the data away from the CPU's mapping, for DMA-only use).
func InTier(t Tier) SliceOption { return func(o *sliceConfig) { o.tier = t } }

// WithSegmentBytes caps a segment's size (default 1 GiB on a GPU). Smaller
// segments spill into the private tier in finer steps; tests use them to
// cover segment boundaries.
func WithSegmentBytes(n uint64) SliceOption { return func(o *sliceConfig) { o.segBytes = n } }

// maxSegment bounds a segment on a GPU: large enough that index arithmetic
// is a shift, small enough to fit in the driver's allocation limit and to
// spill over into the private tier in useful pieces.
const maxSegment = 1 << 30

// NewSlice makes a Slice of n zero elements. T must hold no pointers
// (ErrPointerType names the field that does).
func NewSlice[T any](dev *Device, n int, opts ...SliceOption) (*Slice[T], error) {
	if dev == nil {
		return nil, fmt.Errorf("vmem: NewSlice: nil Device: %w", ErrNoDevice)
	}
	if err := dev.Err(); err != nil {
		return nil, fmt.Errorf("vmem: NewSlice: %w", err)
	}
	if err := layout.Check[T](); err != nil {
		return nil, fmt.Errorf("vmem: NewSlice: %w", err)
	}
	if n < 0 {
		return nil, fmt.Errorf("vmem: NewSlice: negative length %d: %w", n, ErrRange)
	}
	cfg := sliceConfig{capacity: n, tier: Mapped}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.tier < 0 || cfg.tier >= NumTiers {
		return nil, fmt.Errorf("vmem: NewSlice: InTier(%d): no such tier: %w", int(cfg.tier), ErrRange)
	}
	if cfg.capacity < 0 {
		return nil, fmt.Errorf("vmem: NewSlice: WithCapacity(%d): %w", cfg.capacity, ErrRange)
	}
	cfg.capacity = max(cfg.capacity, n)
	if cfg.tier == Host {
		cfg.tier = Mapped // a Slice is device memory; Host is for indexes and staging
	}
	var zero T
	s := &Slice[T]{dev: dev, size: unsafe.Sizeof(zero), tier: cfg.tier}
	if dev.vk == nil {
		// Host memory has no lines to respect: the Go array layout.
		s.perLine, s.group = 1, max(s.size, 1)
	} else {
		r := layout.RecordOf[T]()
		s.perLine, s.stride = max(r.PerLine, 1), r.Stride
		s.group = uintptr(r.LinesPer) * layout.LineSize
		if r.Dense() {
			// Same bytes as a Go array: index arithmetic without a division,
			// and bulk copies without re-spacing.
			s.perLine, s.group = 1, max(r.Size, 1)
		}
	}
	segBytes := cfg.segBytes
	if segBytes == 0 {
		segBytes = dev.tiers[cfg.tier].maxChunk
		if dev.vk != nil {
			segBytes = min(segBytes, maxSegment)
		} else {
			segBytes = min(segBytes, 1<<40)
		}
	}
	// The largest power-of-two element count whose segment fits segBytes.
	s.shift = uint(bits.Len64(segBytes/uint64(s.group)*uint64(s.perLine))) - 1
	if segBytes < uint64(s.group) {
		s.shift = 0
	}
	s.held = &heldBlocks{dev: dev}
	runtime.AddCleanup(s, func(h *heldBlocks) { h.free() }, s.held)
	if err := s.reserve(cfg.capacity); err != nil {
		s.Close() // reserve may have taken some segments before it failed
		return nil, err
	}
	// Closing the device closes the Slice, so that later calls report
	// ErrClosed instead of touching freed memory.
	ws := weak.Make(s)
	s.unreg = dev.AtClose(func() {
		if s := ws.Value(); s != nil {
			s.Close()
		}
	})
	s.setLen(n)
	return s, nil
}

// off is the byte offset of element j inside its segment.
func (s *Slice[T]) off(j int) uintptr {
	if s.perLine == 1 {
		return uintptr(j) * s.group
	}
	return uintptr(j/s.perLine)*s.group + uintptr(j%s.perLine)*s.stride
}

// bytesFor is the memory k elements of one segment take.
func (s *Slice[T]) bytesFor(k int) uint64 {
	if k <= 0 {
		return 64
	}
	groups := (k + s.perLine - 1) / s.perLine
	return max(roundUp(uint64(groups)*uint64(s.group), 64), 64)
}

// Len returns the number of elements.
func (s *Slice[T]) Len() int { return s.n }

// Cap returns the number of elements the Slice holds without allocating.
func (s *Slice[T]) Cap() int {
	c := 0
	for _, sg := range s.segs {
		c += sg.cap
	}
	return c
}

// Err returns the first error met by a method without an error result
// (Get or Set on a private segment when the device is lost).
func (s *Slice[T]) Err() error { return s.err.get() }

func (s *Slice[T]) segCap() int { return 1 << s.shift }

// allocSegWith allocates a segment of k elements, in s.tier or, when a
// mapped segment does not fit, in the private tier; untouched: see
// Device.alloc.
func (s *Slice[T]) allocSegWith(k int, untouched bool) (segment, error) {
	size := s.bytesFor(k)
	b, err := s.dev.alloc(s.tier, size, 0, untouched)
	if err != nil && s.tier == Mapped && s.dev.vk != nil && errors.Is(err, ErrOutOfMemory) {
		b, err = s.dev.Alloc(Private, size, 0)
	}
	if err != nil {
		return segment{}, err
	}
	sg := segment{blk: b, cap: k}
	switch {
	case s.dev.vk == nil:
		sg.kind, sg.base = segDirect, b.cpu(0)
	case b.Tier() == Mapped:
		sg.kind, sg.base = segWC, b.cpu(0)
	default:
		sg.kind = segDMA
	}
	return sg, nil
}

// setLen sets n and recomputes the fast path; every change of n or of the
// segments goes through here.
func (s *Slice[T]) setLen(n int) {
	s.n = n
	s.wcN, s.base0, s.fast = 0, nil, nil
	if len(s.segs) > 0 && s.perLine == 1 && s.group == s.size && s.size > 0 {
		sg := &s.segs[0]
		switch {
		case sg.kind == segDirect:
			s.fast = unsafe.Slice((*T)(sg.base), min(n, sg.cap))
		case sg.kind == segWC && s.size <= layout.LineSize:
			s.wcN, s.base0 = uint(min(n, sg.cap)), sg.base
		}
	}
}

func (s *Slice[T]) syncHeld() {
	s.held.mu.Lock()
	s.held.blks = s.held.blks[:0]
	for _, sg := range s.segs {
		s.held.blks = append(s.held.blks, sg.blk)
	}
	s.held.mu.Unlock()
}

// usable is the check at the start of every method with an error result:
// ErrClosed after Close, and ErrDeviceLost for good once the device was
// lost, even where the method would only touch memory the CPU maps.
func (s *Slice[T]) usable() error {
	if s.closed {
		return ErrClosed
	}
	return s.dev.Err()
}

// reserve makes room for c elements in all. On error nothing changes.
func (s *Slice[T]) reserve(c int) error { return s.reserveWith(c, false) }

// reserveWith is reserve; untouched: see Device.alloc.
func (s *Slice[T]) reserveWith(c int, untouched bool) error {
	if err := s.usable(); err != nil {
		return err
	}
	if cur := s.Cap(); c > cur {
		// Refuse at once what the device could never hold, before a
		// segment is taken (and before the segment list itself grows).
		need := satMul((uint64(c-cur)+uint64(s.perLine)-1)/uint64(s.perLine), uint64(s.group))
		if !s.dev.canHold(s.tier, need) {
			return fmt.Errorf("vmem: Slice: room for %d more elements (%d bytes): %w", c-cur, need, ErrOutOfMemory)
		}
	}
	s.inflight.Wait() // the first segment may move
	full := s.segCap()
	for cur := s.Cap(); cur < c; cur = s.Cap() {
		if len(s.segs) == 0 || (len(s.segs) == 1 && s.segs[0].cap < full) {
			// Grow the first segment geometrically up to a full segment;
			// the old contents move on the GPU.
			k := min(full, max(c, 2*cur, 64/int(max(s.size, 1))+1))
			ns, err := s.allocSegWith(k, untouched)
			if err != nil {
				return err
			}
			if len(s.segs) == 1 {
				old := s.segs[0]
				if s.n > 0 {
					if err := s.dev.Copy(ns.blk, 0, old.blk, 0, s.bytesFor(min(s.n, old.cap))); err != nil {
						s.dev.Free(ns.blk)
						return err
					}
				}
				s.segs[0] = ns
				s.dev.Free(old.blk)
			} else {
				s.segs = append(s.segs, ns)
			}
		} else {
			ns, err := s.allocSegWith(full, untouched)
			if err != nil {
				return err
			}
			s.segs = append(s.segs, ns)
		}
		s.syncHeld()
		s.setLen(s.n)
	}
	return nil
}

// Grow makes room for n more elements without changing Len.
func (s *Slice[T]) Grow(n int) error {
	if n < 0 {
		return fmt.Errorf("vmem: Slice.Grow(%d): %w", n, ErrRange)
	}
	if n > math.MaxInt-s.n {
		return fmt.Errorf("vmem: Slice.Grow(%d): Len %d + %d overflows: %w", n, s.n, n, ErrTooLarge)
	}
	return s.reserve(s.n + n)
}

// Resize sets Len to n, growing the capacity if needed. New elements are
// zero.
func (s *Slice[T]) Resize(n int) error {
	if n < 0 {
		return fmt.Errorf("vmem: Slice.Resize(%d): %w", n, ErrRange)
	}
	if err := s.reserve(n); err != nil {
		return err
	}
	if n < s.n {
		// Zero what is cut off so a later Resize shows zeros, as make does.
		var zero T
		if err := s.fillRange(n, s.n, zero); err != nil {
			return err
		}
	}
	s.setLen(n)
	return nil
}

func (s *Slice[T]) outOfRange(i int) {
	if s.closed {
		panic("vmem: Slice used after Close")
	}
	panic(fmt.Sprintf("vmem: Slice index %d out of range [0:%d]", i, s.n))
}

// Get returns element i. It panics if i is out of range, like a slice.
func (s *Slice[T]) Get(i int) T {
	// Small enough to inline: on host memory a Get is then one load in the
	// caller's loop, and loads of successive Gets overlap.
	if uint(i) < uint(len(s.fast)) {
		return s.fast[i]
	}
	return s.get(i)
}

func (s *Slice[T]) get(i int) T {
	if uint(i) < s.wcN {
		return loadWCSmall[T](unsafe.Add(s.base0, uintptr(i)*unsafe.Sizeof(*(*T)(nil))))
	}
	if uint(i) >= uint(s.n) {
		s.outOfRange(i)
	}
	sg := &s.segs[i>>s.shift]
	j := i & (1<<s.shift - 1)
	switch sg.kind {
	case segDirect:
		return *(*T)(unsafe.Add(sg.base, s.off(j)))
	case segWC:
		if s.size <= layout.LineSize {
			return loadWCSmall[T](unsafe.Add(sg.base, s.off(j)))
		}
		return loadWC[T](unsafe.Add(sg.base, s.off(j)), s.size)
	}
	var v T
	s.err.set(s.dev.Read(bytesOf(&v), sg.blk, uint64(s.off(j))))
	return v
}

// loadWCSmall reads a T of at most 64 bytes at p, which lies inside one
// line (layout.Record guarantees it). Words come back in registers where
// the record fits in one aligned 16-byte chunk: staging a whole line
// through a stack buffer would make the CPU wait on that buffer and stop
// successive reads from overlapping.
func loadWCSmall[T any](p unsafe.Pointer) T {
	size := unsafe.Sizeof(*(*T)(nil))
	a := uintptr(p)
	switch {
	case size <= 8 && a&7+size <= 8:
		w := lineio.LoadWord(unsafe.Add(p, -int(a&7))) >> ((a & 7) * 8)
		return *(*T)(unsafe.Pointer(&w))
	case size <= 16 && a&15+size <= 16:
		var pair [2]uint64
		pair[0], pair[1] = lineio.LoadPair(unsafe.Add(p, -int(a&15)))
		return *(*T)(unsafe.Add(unsafe.Pointer(&pair), a&15))
	}
	var line [8]uint64 // word-aligned, so the record read from it is aligned
	lineio.LoadContaining((*[64]byte)(unsafe.Pointer(&line)), p)
	return *(*T)(unsafe.Add(unsafe.Pointer(&line), a&63))
}

// loadWC reads a T at p in write-combining memory with streaming loads only.
func loadWC[T any](p unsafe.Pointer, size uintptr) T {
	if size <= layout.LineSize {
		// The record lies within one line (layout.Record guarantees it):
		// one streaming load of that line, then pick the record out. The
		// buffer is word-aligned, and so is the record's offset in it.
		var line [8]uint64
		lineio.Load((*[64]byte)(unsafe.Pointer(&line)), unsafe.Pointer(uintptr(p)&^63))
		return *(*T)(unsafe.Add(unsafe.Pointer(&line), uintptr(p)&63))
	}
	var v T
	lineio.Copy(unsafe.Pointer(&v), p, size)
	return v
}

// Set stores v at i. It panics if i is out of range.
func (s *Slice[T]) Set(i int, v T) {
	// Small enough to inline, as Get: on host memory a Set is one store in
	// the caller's loop.
	if uint(i) < uint(len(s.fast)) {
		s.fast[i] = v
		return
	}
	s.setChecked(i, v)
}

func (s *Slice[T]) setChecked(i int, v T) {
	if uint(i) >= uint(s.n) {
		s.outOfRange(i)
	}
	s.set(i, v)
}

func (s *Slice[T]) set(i int, v T) {
	sg := &s.segs[i>>s.shift]
	j := i & (1<<s.shift - 1)
	switch sg.kind {
	case segDirect:
		*(*T)(unsafe.Add(sg.base, s.off(j))) = v
	case segWC:
		// Stores never read their target, so a plain store is right for
		// write-combining memory; the fence makes it visible to the next
		// streaming load.
		*(*T)(unsafe.Add(sg.base, s.off(j))) = v
		lineio.Fence()
	default:
		s.err.set(s.dev.Write(sg.blk, uint64(s.off(j)), bytesOf(&v)))
	}
}

// bytesOf views a value's memory.
func bytesOf[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// Append adds vs at the end, growing the Slice as needed. On error the
// Slice is unchanged.
func (s *Slice[T]) Append(vs ...T) error {
	if len(vs) > math.MaxInt-s.n {
		return fmt.Errorf("vmem: Slice.Append of %d: %w", len(vs), ErrTooLarge)
	}
	if err := s.reserve(s.n + len(vs)); err != nil {
		return err
	}
	at := s.n
	s.setLen(at + len(vs))
	// A few elements are stored one by one, except into private segments,
	// where a single store has no error result to report a failed DMA.
	if len(vs) > 16 || (len(vs) > 0 && (s.segs[at>>s.shift].kind == segDMA || s.segs[(at+len(vs)-1)>>s.shift].kind == segDMA)) {
		if err := s.CopyFrom(vs, at); err != nil {
			s.setLen(at)
			return err
		}
		return nil
	}
	for k, v := range vs {
		s.set(at+k, v)
	}
	return nil
}

// pieces calls f for each run of [at, at+n) that lies in one segment.
func (s *Slice[T]) pieces(at, n int, f func(sg *segment, j, from, k int) error) error {
	done := 0
	for done < n {
		i := at + done
		sg := &s.segs[i>>s.shift]
		j := i & (1<<s.shift - 1)
		k := min(n-done, sg.cap-j)
		if err := f(sg, j, done, k); err != nil {
			return err
		}
		done += k
	}
	return nil
}

func (s *Slice[T]) checkSpan(op string, at, n int) error {
	if err := s.usable(); err != nil {
		return err
	}
	if at < 0 || n < 0 || at > s.n || n > s.n-at {
		return fmt.Errorf("vmem: Slice.%s: [%d, %d) outside [0, %d): %w", op, at, at+n, s.n, ErrRange)
	}
	return nil
}

// dense reports whether elements sit exactly as in a Go array, so runs of
// them move in one piece.
func (s *Slice[T]) dense(int) bool {
	return s.perLine == 1 && s.group == s.size || s.size == 0
}

// stagePool holds scratch buffers for re-spacing records.
var stagePool = sync.Pool{New: func() any { b := make([]byte, 4<<20); return &b }}

// CopyFrom copies src into the Slice starting at element at (which must
// leave room: at+len(src) <= Len). Mapped segments are written with
// non-temporal full-line stores, private ones by DMA.
func (s *Slice[T]) CopyFrom(src []T, at int) error {
	if err := s.checkSpan("CopyFrom", at, len(src)); err != nil {
		return err
	}
	return s.pieces(at, len(src), func(sg *segment, j, from, k int) error {
		part := src[from : from+k]
		if s.dense(j) {
			return s.dev.Write(sg.blk, uint64(s.off(j)), unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(part))), uintptr(k)*s.size))
		}
		// Ragged groups at either end go element by element so their
		// neighbours are not rewritten; whole groups go packed.
		for len(part) > 0 && j%s.perLine != 0 {
			s.setSeg(sg, j, part[0])
			j, part = j+1, part[1:]
		}
		bp := stagePool.Get().(*[]byte)
		defer stagePool.Put(bp)
		buf := *bp
		per := len(buf) / int(s.group) * s.perLine
		for len(part) >= s.perLine {
			m := min(len(part)/s.perLine*s.perLine, per)
			img := buf[:uintptr(m/s.perLine)*s.group]
			clear(img)
			for e := 0; e < m; e++ {
				o := uintptr(e/s.perLine)*s.group + uintptr(e%s.perLine)*s.stride
				*(*T)(unsafe.Pointer(&img[o])) = part[e]
			}
			if err := s.dev.Write(sg.blk, uint64(s.off(j)), img); err != nil {
				return err
			}
			j, part = j+m, part[m:]
		}
		for _, v := range part {
			s.setSeg(sg, j, v)
			j++
		}
		return s.err.get()
	})
}

func (s *Slice[T]) setSeg(sg *segment, j int, v T) {
	switch sg.kind {
	case segDirect, segWC:
		*(*T)(unsafe.Add(sg.base, s.off(j))) = v
		lineio.Fence()
	default:
		s.err.set(s.dev.Write(sg.blk, uint64(s.off(j)), bytesOf(&v)))
	}
}

// CopyTo copies len(dst) elements starting at element at into dst. Large
// copies run by DMA (about 50 GB/s on an H200).
func (s *Slice[T]) CopyTo(dst []T, at int) error {
	if err := s.checkSpan("CopyTo", at, len(dst)); err != nil {
		return err
	}
	return s.pieces(at, len(dst), func(sg *segment, j, from, k int) error {
		part := dst[from : from+k]
		if s.dense(j) {
			return s.dev.Read(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(part))), uintptr(k)*s.size), sg.blk, uint64(s.off(j)))
		}
		bp := stagePool.Get().(*[]byte)
		defer stagePool.Put(bp)
		buf := *bp
		// Whole lines covering the range, read in pieces and unpacked.
		per := len(buf) / int(s.group) * s.perLine
		for len(part) > 0 {
			g0 := j / s.perLine
			m := min(len(part), per-(j%s.perLine))
			g1 := (j + m + s.perLine - 1) / s.perLine
			img := buf[:uintptr(g1-g0)*s.group]
			if err := s.dev.Read(img, sg.blk, uint64(uintptr(g0)*s.group)); err != nil {
				return err
			}
			base := uintptr(g0) * s.group
			for e := 0; e < m; e++ {
				part[e] = *(*T)(unsafe.Pointer(&img[s.off(j+e)-base]))
			}
			j, part = j+m, part[m:]
		}
		return nil
	})
}

// Fill sets every element to v.
func (s *Slice[T]) Fill(v T) error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.fillRange(0, s.n, v)
}

func (s *Slice[T]) fillRange(lo, hi int, v T) error {
	if hi <= lo {
		return nil
	}
	if gpu, err := s.fillKernel(lo, hi, v); gpu {
		return err // large ranges on a GPU (slice_gpu.go)
	}
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

// chunkBytes is how much All and Chunks read per DMA: large enough that
// the ~20 µs round trip costs little against 50 GB/s.
const chunkBytes = 16 << 20

// Chunks returns the elements in order as consecutive runs: yield gets the
// index of each run's first element and the run, which is valid only until
// yield returns. Runs are read by DMA in large pieces, the next one while
// yield works on the current one, so this is the fast way to scan a Slice.
// The Slice must not change length while Chunks or All runs.
func (s *Slice[T]) Chunks() iter.Seq2[int, []T] {
	return func(yield func(int, []T) bool) {
		if s.closed || s.n == 0 {
			return
		}
		// yield may read a run in place (host memory): s stays reachable
		// until the scan ends, so that its backstop frees nothing.
		defer runtime.KeepAlive(s)
		per := max(chunkBytes/int(max(s.size, 1)), 1)
		if s.dev.vk == nil {
			// Host memory: the segments are Go-array shaped; hand them out.
			for at := 0; at < s.n; {
				sg := &s.segs[at>>s.shift]
				j := at & (1<<s.shift - 1)
				k := min(s.n-at, sg.cap-j, per)
				run := unsafe.Slice((*T)(unsafe.Add(sg.base, s.off(j))), k)
				if !yield(at, run) {
					return
				}
				at += k
			}
			return
		}
		// Runs land in pinned host memory when the layout is dense, so the
		// DMA needs no staging copy. Two runs alternate: the DMA of the next
		// one runs while yield works on this one, so a scan moves at the
		// link's speed rather than at half of it.
		k := min(per, s.n)
		var bufs [2][]T
		for i := range bufs {
			if s.dense(0) && s.size > 0 {
				if b, err := s.dev.Alloc(Host, uint64(k)*uint64(s.size), 0); err == nil {
					defer s.dev.Free(b)
					bufs[i] = unsafe.Slice((*T)(b.Ptr()), k)
				}
			}
			if len(bufs[i]) == 0 {
				bufs[i] = make([]T, k)
			}
		}
		readAhead(s.n, k, bufs, s.CopyTo, s.err.set, yield)
	}
}

// readAhead yields [0, n) in runs of k elements read by copyTo into the two
// buffers in turn (see runReader); an error stops it and goes to fail.
func readAhead[T any](n, k int, bufs [2][]T, copyTo func(dst []T, at int) error, fail func(error), yield func(int, []T) bool) {
	r := runReader[T]{n: n, k: k, bufs: bufs, copyTo: copyTo}
	defer r.stop()
	for {
		run, at, err := r.run()
		if err != nil {
			fail(err)
			return
		}
		if run == nil || !yield(at, run) {
			return
		}
	}
}

// runReader reads [0, n) in runs of k elements by copyTo into two buffers
// in turn (made on first use where nil): each run returned, the next is
// already being read, so a scan moves at the link's speed rather than at
// half of it. A run is valid until the next call of run; stop waits for a
// read in flight when the caller ends early.
type runReader[T any] struct {
	n, k, at, i int
	bufs        [2][]T
	copyTo      func(dst []T, at int) error
	next        chan error // the read of the run at at, in flight
	started     bool
}

// run returns the next run and the index of its first element (nil at
// the end) and starts reading the one after it.
func (r *runReader[T]) run() ([]T, int, error) {
	if !r.started {
		r.started = true
		if r.n > 0 {
			r.next = r.fetch(0, 0)
		}
	}
	if r.next == nil {
		return nil, 0, nil
	}
	err := <-r.next
	r.next = nil
	if err != nil {
		return nil, 0, err
	}
	at, i := r.at, r.i
	run := r.bufs[i][:min(r.k, r.n-at)]
	r.at, r.i = at+r.k, i^1
	if r.at < r.n {
		r.next = r.fetch(r.i, r.at)
	}
	return run, at, nil
}

// fetch starts reading the run at at into buffer i.
func (r *runReader[T]) fetch(i, at int) chan error {
	if r.bufs[i] == nil {
		r.bufs[i] = make([]T, r.k)
	}
	run := r.bufs[i][:min(r.k, r.n-at)]
	done := make(chan error, 1)
	go func() { done <- r.copyTo(run, at) }()
	return done
}

// stop waits for a read in flight.
func (r *runReader[T]) stop() {
	if r.next != nil {
		<-r.next
		r.next = nil
	}
}

// All returns every element with its index, in order (read in bulk, see
// Chunks). An error stops the iteration and is reported by Err.
func (s *Slice[T]) All() iter.Seq2[int, T] {
	// Small enough for the compiler to inline into the caller's loop, with
	// the loop body: the elements of each run are then read by a plain
	// loop, where a sequence built on Chunks called the body through a
	// function value for every element (2.4 ns against 0.6 on the host).
	return func(yield func(int, T) bool) {
		if s.dev.vk != nil {
			if s.closed || s.n == 0 {
				return
			}
			r := runReader[T]{n: s.n, k: min(max(allRunBytes/int(max(s.size, 1)), 1), s.n), copyTo: s.CopyTo}
			for {
				run, at, err := r.run()
				if err != nil {
					s.err.set(err)
					return
				}
				if run == nil {
					return
				}
				for k, v := range run {
					if !yield(at+k, v) {
						r.stop()
						return
					}
				}
			}
		}
		for at := 0; ; {
			run := s.hostRun(at)
			if len(run) == 0 {
				return
			}
			for k, v := range run {
				if !yield(at+k, v) {
					return
				}
			}
			at += len(run)
		}
	}
}

// allRunBytes is how much All reads per DMA on a GPU: into buffers of the
// Go heap (a panic in the loop body leaves nothing to free), so smaller
// than Chunks' pinned runs; 4 MiB still costs the round trip little.
const allRunBytes = 4 << 20

// hostRun returns, on the host backend, the run of elements from index at
// to the end of its segment or chunkBytes, in place, or nil at the end.
func (s *Slice[T]) hostRun(at int) []T {
	if s.closed || at >= s.n {
		return nil
	}
	sg := &s.segs[at>>s.shift]
	j := at & (1<<s.shift - 1)
	k := min(s.n-at, sg.cap-j, max(chunkBytes/int(max(s.size, 1)), 1))
	return unsafe.Slice((*T)(unsafe.Add(sg.base, s.off(j))), k)
}

// Close frees the Slice's memory. It is idempotent; the Slice is invalid
// afterwards (Get and Set panic, other methods return ErrClosed).
func (s *Slice[T]) Close() error {
	if s.closed {
		return nil
	}
	s.inflight.Wait()
	s.closed = true
	if s.unreg != nil {
		s.unreg()
	}
	var first error
	for _, sg := range s.segs {
		if err := s.dev.Free(sg.blk); err != nil && first == nil && !errors.Is(err, ErrClosed) {
			first = err
		}
	}
	s.segs = nil
	s.setLen(0)
	s.held.mu.Lock()
	s.held.blks = nil
	s.held.mu.Unlock()
	return first
}

// stickyErr keeps the first error of a container's calls without an
// error result (Get, Set, GetMany, All on private VRAM), which concurrent
// readers may meet at once.
type stickyErr struct{ p atomic.Pointer[error] }

func (e *stickyErr) set(err error) {
	if err != nil {
		p := new(error) // only on an error: err itself does not escape
		*p = err
		e.p.CompareAndSwap(nil, p)
	}
}

func (e *stickyErr) get() error {
	if p := e.p.Load(); p != nil {
		return *p
	}
	return nil
}

// getManyBatch is how many lines GetMany loads per call into lineio.
const getManyBatch = 64

// GetMany reads the elements at idx into dst (len(dst) >= len(idx)). On
// mapped VRAM the lines of many elements are loaded with their streaming
// loads interleaved, so their latencies overlap: the way to read many
// scattered elements. A large batch is spread over goroutines (one core's
// streaming loads keep only a few lines in flight; the link serves about
// three times more from several cores). A Slice with segments in private
// VRAM is read by a kernel that gathers the batch in one round trip (as
// Gather); a device error is then kept for Err. It panics on an index out
// of range and when dst is shorter than idx (it has no error result;
// Gather returns an error matching ErrRange).
func (s *Slice[T]) GetMany(idx []int, dst []T) {
	if len(dst) < len(idx) {
		panic("vmem: GetMany: dst shorter than idx")
	}
	if !s.kernAllMapped() && len(idx) >= getManyKernelMin && s.getManyKernel(idx, dst) {
		return
	}
	w := min(runtime.GOMAXPROCS(0), getManyWorkers, len(idx)/getManyPerWorker)
	if w <= 1 || s.dev.vk == nil || !s.kernAllMapped() {
		s.getMany(idx, dst)
		return
	}
	// Indices are checked here, where a panic reaches the caller.
	for _, i := range idx {
		if uint(i) >= uint(s.n) {
			s.outOfRange(i)
		}
	}
	var wg sync.WaitGroup
	per := (len(idx) + w - 1) / w
	for lo := 0; lo < len(idx); lo += per {
		hi := min(lo+per, len(idx))
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.getMany(idx[lo:hi], dst[lo:hi])
		}()
	}
	waithook.Run()
	wg.Wait()
	runtime.KeepAlive(s)
}

// getManyKernelMin is the batch from which GetMany reads a Slice with
// private segments by the gather kernel, one round trip for the batch,
// instead of one DMA round trip per element of those segments.
const getManyKernelMin = 16

// getManyKernel is GetMany by the gather kernel. It reports false where
// kernels cannot run (the caller then reads element by element); an error
// of the device is kept for Err, as Get keeps it.
func (s *Slice[T]) getManyKernel(idx []int, dst []T) bool {
	k := s.dev.kern()
	if k == nil || s.size == 0 {
		return false
	}
	for _, i := range idx {
		if uint(i) >= uint(s.n) {
			s.outOfRange(i)
		}
	}
	err := s.kernGatherGPU(k, idx, dst[:len(idx)])
	if errors.Is(err, errKernUnavailable) {
		return false
	}
	s.err.set(err)
	return true
}

// GetMany spreads a batch over up to getManyWorkers goroutines, each with
// at least getManyPerWorker elements.
const (
	getManyWorkers   = 16
	getManyPerWorker = 512
)

func (s *Slice[T]) getMany(idx []int, dst []T) {
	if s.size > layout.LineSize || s.dev.vk == nil {
		for k, i := range idx {
			dst[k] = s.Get(i)
		}
		return
	}
	var srcs [getManyBatch]unsafe.Pointer
	var lines [getManyBatch * 8]uint64
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&lines[0])), len(lines)*8)
	for len(idx) > 0 {
		m := 0
		var pos [getManyBatch]uintptr
		for ; m < len(idx) && m < getManyBatch; m++ {
			i := idx[m]
			if uint(i) >= uint(s.n) {
				s.outOfRange(i)
			}
			sg := &s.segs[i>>s.shift]
			if sg.kind != segWC {
				break
			}
			p := unsafe.Add(sg.base, s.off(i&(1<<s.shift-1)))
			srcs[m] = unsafe.Pointer(uintptr(p) &^ 63)
			pos[m] = uintptr(p) & 63
		}
		if m == 0 {
			// A private segment: one element the slow way.
			dst[0] = s.Get(idx[0])
			idx, dst = idx[1:], dst[1:]
			continue
		}
		lineio.Gather(buf[:m*64], srcs[:m])
		for k := 0; k < m; k++ {
			dst[k] = *(*T)(unsafe.Pointer(&buf[k*64+int(pos[k])]))
		}
		idx, dst = idx[m:], dst[m:]
	}
}
