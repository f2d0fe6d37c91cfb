package vmem

import (
	"errors"
	"fmt"
	"github.com/govram/govram/internal/kern"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/held"
	"github.com/govram/govram/internal/recs"
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
//     load (a plain load would take an order of magnitude longer:
//     docs/physics.md); Set stores and fences. Many Sets belong in one
//     SetBatch, which sorts the stores and writes whole lines.
//   - private VRAM: every single-element access is a DMA round trip, far
//     dearer than a streaming load (docs/physics.md). Use CopyFrom, CopyTo,
//     All and Chunks there.
//   - host backend: plain loads and stores, as fast as a []T.
//
// Records that fit in a line never straddle two (see layout.Record); on the
// host backend elements sit as in a Go array.
//
// Concurrency is that of a []T: any number of goroutines may read at once;
// a goroutine that changes the Slice must not overlap with any other call.
//
// Concurrency, as in the table of docs/guide.md:
//   - at the same time: Get, CopyTo, GetBatch, All, Chunks, Len, Cap, Stats, Err, Save, Sum
//   - alone: Set, SetBatch, Append, Resize, CopyFrom, Fill, Sort, SortBy, Close
//
// Device loss: Get, All and Chunks panic with an error matching
// ErrDeviceLost rather than return zeros (Get on the host backend's first
// segment, plain memory, still answers); CopyTo, GetBatch and Save return
// the loss instead.
//
// On a Pool (NewSlice(pool, ...)) the elements are spread over the pool's
// devices as WithPlacement says (by default in stripes, so that every
// device holds about the same share). Each device holds an ordinary Slice
// of its elements, so everything above holds on each device; bulk work
// (copies, Fill, GetBatch, Sort, Sum, Save) runs on every device at once,
// one goroutine per device, and Get and Set run on the caller's
// goroutine. A Slice on a pool is invalid once any of its devices is
// closed.
type Slice[T any] struct {
	// sh is the implementation on a pool, nil on one device: every
	// exported method forwards to it. Its Slice keeps no segments, so Get
	// and Set never take their fast paths there. shCap mirrors sh's
	// capacity as n mirrors its length (synced), so that Len and Cap stay
	// small enough to inline.
	sh    *poolSlice[T]
	shCap int

	dev     *Device
	size    uintptr // unsafe.Sizeof(T)
	perLine int     // records per group (1 when dense)
	group   uintptr // bytes per group
	stride  uintptr // bytes between records of a group
	shift   uint    // a full segment holds 1<<shift elements
	segs    []segment
	n       int
	closed  bool
	err     stickyErr                          // first DMA error of Get/Set on private segments
	held    *held.Set[block.Block, block.Tier] // what the leak backstop frees
	unreg   func()                             // removes the Slice from the device's close list
	tier    Tier                               // tier new segments try first

	// inflight counts sliceWriter batches being written in the background:
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
	// the long loads of successive Gets only as far as its reorder
	// window reaches.
	wcN   uint
	base0 unsafe.Pointer
}

// segment is one block of elements; its View says how the CPU reaches it
// (cacheable memory, mapped VRAM, or DMA only: internal/access).
type segment struct {
	blk block.Block
	access.View
	cap int
}

// SliceOption configures NewSlice and LoadSlice.
type SliceOption func(*sliceConfig)

type sliceConfig struct {
	capacity int
	tier     Tier
	segBytes uint64

	// On a pool only.
	placement Placement
	stripe    int
}

// WithCapacity reserves room for c elements.
func WithCapacity(c int) SliceOption { return func(o *sliceConfig) { o.capacity = c } }

// InTier makes new segments go to tier t first (default Mapped; Private
// keeps the data away from the CPU's mapping, for DMA-only use).
func InTier(t Tier) SliceOption { return func(o *sliceConfig) { o.tier = t } }

// withSegmentBytes caps a segment's size (default 1 GiB on a GPU). Smaller
// segments spill into the private tier in finer steps; tests use them to
// cover segment boundaries.
func withSegmentBytes(n uint64) SliceOption { return func(o *sliceConfig) { o.segBytes = n } }

// maxSegment bounds a segment on a GPU: large enough that index arithmetic
// is a shift, small enough to fit in the driver's allocation limit and to
// spill over into the private tier in useful pieces.
const maxSegment = 1 << 30

// NewSlice makes a Slice of n zero elements on mem: one Device, or a Pool
// whose devices it spreads the elements over. T must hold no pointers
// (ErrPointerType names the field that does). It fails with
// ErrOutOfMemory when mem has no room for n elements (nothing is left
// allocated then). On a pool the options apply to each device's part, but
// WithCapacity, which counts elements of the whole Slice.
func NewSlice[T any](mem Memory, n int, opts ...SliceOption) (*Slice[T], error) {
	dev, pool, err := sliceMemory("NewSlice", mem)
	if err != nil {
		return nil, err
	}
	if pool != nil {
		return newPoolSlice[T](pool, n, opts)
	}
	return newSlice[T](dev, n, opts)
}

// sliceMemory checks the Memory of a Slice's constructor or loader and
// returns the device or the pool it is.
func sliceMemory(op string, mem Memory) (*Device, *Pool, error) {
	switch m := mem.(type) {
	case *Device:
		if m == nil {
			break
		}
		if err := m.Err(); err != nil {
			return nil, nil, fmt.Errorf("vmem: %s: %w", op, err)
		}
		return m, nil, nil
	case *Pool:
		if m == nil {
			break
		}
		if err := m.usable(); err != nil {
			return nil, nil, fmt.Errorf("vmem: %s: %w", op, err)
		}
		return nil, m, nil
	}
	return nil, nil, fmt.Errorf("vmem: %s: nil Memory: %w", op, ErrNoDevice)
}

// newSlice is NewSlice on one device (also each device's part of a Slice
// on a pool).
func newSlice[T any](dev *Device, n int, opts []SliceOption) (*Slice[T], error) {
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
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.tier < 0 || cfg.tier >= numTiers {
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
		r := recs.Of[T]()
		s.perLine, s.stride = max(r.PerLine, 1), r.Stride
		s.group = uintptr(r.LinesPer) * recs.LineSize
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
	s.held = held.New[block.Block, block.Tier](&dev.plumb)
	held.Attach(s, s.held)
	if err := s.reserve(cfg.capacity); err != nil {
		s.Close() // reserve may have taken some segments before it failed
		return nil, err
	}
	// Closing the device closes the Slice, so that later calls report
	// ErrClosed instead of touching freed memory.
	ws := weak.Make(s)
	s.unreg = dev.atClose(func() {
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
	if s.sh != nil {
		return s.shCap
	}
	c := 0
	for _, sg := range s.segs {
		c += sg.cap
	}
	return c
}

// Err returns the first error met by a method without an error result
// (Get or Set on a private segment when the device is lost). On a pool,
// the errors of every device reach it (stickyErr.up).
func (s *Slice[T]) Err() error { return s.err.get() }

// synced ends a call forwarded to sh that may have changed the length or
// the capacity, which Len and Cap read from the Slice itself.
func (s *Slice[T]) synced(err error) error {
	s.n, s.shCap = s.sh.n, s.sh.Cap()
	return err
}

func (s *Slice[T]) segCap() int { return 1 << s.shift }

// allocSegWith allocates a segment of k elements, in s.tier or, when a
// mapped segment does not fit, in the private tier; untouched: see
// Device.alloc.
func (s *Slice[T]) allocSegWith(k int, untouched bool) (segment, error) {
	size := s.bytesFor(k)
	b, err := s.dev.alloc(s.tier, size, 0, untouched)
	if err != nil && s.tier == Mapped && s.dev.vk != nil && errors.Is(err, ErrOutOfMemory) {
		b, err = s.dev.alloc(Private, size, 0, false)
	}
	if err != nil {
		return segment{}, err
	}
	v := s.dev.view(b)
	if s.dev.vk == nil {
		// The host backend keeps every tier in host memory, and a Slice
		// there reads its private segments in place too: its iterators,
		// Sort and Sum hand out or walk runs of host memory (Map, BTree
		// and the string arena reach such blocks as DMA, like on a GPU).
		v = access.New(b.CPU(0), access.Direct, blockMover{s.dev, b})
	}
	return segment{blk: b, View: v, cap: k}, nil
}

// setLen sets n and recomputes the fast path; every change of n or of the
// segments goes through here.
func (s *Slice[T]) setLen(n int) {
	s.n = n
	s.wcN, s.base0, s.fast = 0, nil, nil
	if len(s.segs) > 0 && s.perLine == 1 && s.group == s.size && s.size > 0 {
		sg := &s.segs[0]
		switch {
		case sg.Kind == access.Direct:
			// Its capacity is the segment's: Append of one element
			// stores into it while there is room.
			s.fast = unsafe.Slice((*T)(sg.Base), sg.cap)[:min(n, sg.cap)]
		case sg.Kind == access.WC && s.size <= recs.LineSize:
			s.wcN, s.base0 = uint(min(n, sg.cap)), sg.Base
		}
	}
}

func (s *Slice[T]) syncHeld() {
	bs := make([]block.Block, len(s.segs))
	for i, sg := range s.segs {
		bs[i] = sg.blk
	}
	s.held.Exactly(bs...)
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
					if err := s.dev.copyBlock(ns.blk, 0, old.blk, 0, s.bytesFor(min(s.n, old.cap))); err != nil {
						s.dev.freeBlock(ns.blk)
						return err
					}
				}
				s.segs[0] = ns
				s.dev.freeBlock(old.blk)
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

// grow makes room for n more elements without changing Len.
func (s *Slice[T]) grow(n int) error {
	if s.sh != nil {
		return s.synced(s.sh.grow(n))
	}
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
	if s.sh != nil {
		return s.synced(s.sh.Resize(n))
	}
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

// bytesOf views a value's memory.
func bytesOf[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
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

// Close frees the Slice's memory. It is idempotent; the Slice is invalid
// afterwards (Get and Set panic, other methods return ErrClosed).
func (s *Slice[T]) Close() error {
	if s.sh != nil {
		s.closed = true
		return s.synced(s.sh.Close())
	}
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
		if err := s.dev.freeBlock(sg.blk); err != nil && first == nil && !errors.Is(err, ErrClosed) {
			first = err
		}
	}
	s.segs = nil
	s.setLen(0)
	s.held.Exactly()
	return first
}

// stickyErr keeps the first error of a container's calls without an
// error result (Get, Set, All on private VRAM), which concurrent
// readers may meet at once.
type stickyErr struct {
	p atomic.Pointer[error]
	// up, where set, keeps the error too: the parts of a Slice on a pool
	// report to it, and it to the Slice handed out, so that Err stays
	// one load.
	up *stickyErr
}

func (e *stickyErr) set(err error) {
	if err != nil {
		p := new(error) // only on an error: err itself does not escape
		*p = err
		e.p.CompareAndSwap(nil, p)
		if e.up != nil {
			e.up.set(err)
		}
	}
}

func (e *stickyErr) get() error {
	if p := e.p.Load(); p != nil {
		return *p
	}
	return nil
}

func init() {
	kern.SegmentBytes = func(n uint64) any { return withSegmentBytes(n) }
}
