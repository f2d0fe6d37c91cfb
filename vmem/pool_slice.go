package vmem

// PoolSlice: one array over every device of a pool.
//
// Each device holds one ordinary Slice (its part), so everything a Slice
// does on one GPU (streaming-load Gets, NT-store writes, DMA, kernels,
// spilling from mapped to private VRAM) is what a part does on its GPU.
// The PoolSlice only maps a global index to (device, local index):
//
//   - Stripe: element i lies in stripe i>>shift; stripes go to the devices
//     in turn, so device d's part is the concatenation of stripes d, d+D,
//     d+2D, ... A range of the array is a contiguous local range on every
//     device, which is what lets a bulk copy run as one transfer per device,
//     all devices at once. The default stripe is 16 MiB of elements: one
//     DMA of that size runs near the link's speed (docs/physics.md), and
//     an array of more than D x 16 MiB is spread evenly.
//   - FillFirst: the parts are concatenated; the last non-empty part grows
//     until its device is full (an allocation fails with ErrOutOfMemory),
//     then the next device's part takes over. Lookups compare i with at
//     most D boundaries.
//
// Work on several devices runs one goroutine per device: a GPU's DMA
// engine and kernels are its own, so D devices move data D times as fast
// as one. Single-element access (Get, Set) runs on the caller's goroutine.

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/layout"
)

// PoolSlice is a typed, growable array spread over the devices of a Pool,
// with the methods of Slice: switching a program from one GPU to all of
// them is a change of constructor (NewSlice(dev, ...) to
// NewPoolSlice(pool, ...)). Placement (WithPlacement, or the pool's)
// decides which device holds which element; DeviceLens says how many each
// holds.
//
// Save writes a snapshot in Slice.Save's format, the elements in order
// whatever the devices, so LoadPoolSlice reads it into a pool of any size
// and LoadSlice onto one device. Sort, SortBy, Sum and SumAs take a
// PoolSlice as they take a Slice: each device works on its part at once,
// and Sort merges the sorted parts through host memory.
//
// Concurrency is that of a Slice (and of a []T): any number of goroutines
// may read at once; a call that changes the PoolSlice must not overlap with
// any other call. The PoolSlice starts its own goroutines, one per device,
// inside a call and waits for them before it returns.
//
// Concurrency, as in the table of docs/guide.md:
//   - at the same time: Get, GetMany, CopyTo, Gather, All, Chunks, Len, Cap, Err, DeviceLens, Part, Placement, Pool, Save, Writer
//   - alone: Set, Append, Grow, Resize, CopyFrom, Fill, a Writer's Set and Flush, Close
//
// A PoolSlice is invalid after Close, and after any of its devices is
// closed (which closes that device's part): Get and Set panic, other
// methods return ErrClosed.
//
// Device loss: Get, GetMany, All and Chunks panic with an error matching
// ErrDeviceLost when a device they read is lost; CopyTo and Gather return
// the loss instead.
type PoolSlice[T any] struct {
	pool  *Pool
	parts []*Slice[T] // parts[d] on pool device d
	nd    int
	place Placement
	size  uintptr

	// Stripe: 1<<shift elements a stripe.
	shift uint
	mask  int
	// FillFirst: ends[d] is one past the last element of parts[d].
	ends []int

	n      int
	closed bool
	err    stickyErr // first error of a method without an error result
}

// PoolSliceOption configures NewPoolSlice: a SliceOption (InTier,
// WithSegmentBytes, WithCapacity), which applies to every device's part
// (WithCapacity counts elements of the whole PoolSlice), or WithPlacement or
// WithStripe.
type PoolSliceOption interface {
	applyPoolSlice(*poolSliceConfig)
}

type poolSliceConfig struct {
	slice     []SliceOption
	placement Placement
	placeSet  bool
	stripe    int
}

// applyPoolSlice makes every SliceOption a PoolSliceOption, so the options
// of NewSlice work unchanged with NewPoolSlice.
func (o SliceOption) applyPoolSlice(c *poolSliceConfig) {
	if o != nil {
		c.slice = append(c.slice, o)
	}
}

type poolSliceOpt func(*poolSliceConfig)

func (o poolSliceOpt) applyPoolSlice(c *poolSliceConfig) { o(c) }

// WithPlacement overrides the pool's placement for one PoolSlice.
func WithPlacement(p Placement) PoolSliceOption {
	return poolSliceOpt(func(c *poolSliceConfig) { c.placement, c.placeSet = p, true })
}

// WithStripe sets a striped PoolSlice's stripe to n elements (rounded up to
// a power of two). Default: 16 MiB of elements. Small stripes spread small
// arrays over every device (tests use them); large ones make bulk copies
// larger transfers.
func WithStripe(n int) PoolSliceOption {
	return poolSliceOpt(func(c *poolSliceConfig) { c.stripe = n })
}

// poolStripeBytes is the default stripe: one DMA of 16 MiB runs at more
// than half the link's best speed (docs/physics.md), and a copy of several
// stripes pipelines them.
const poolStripeBytes = 16 << 20

// poolDirectBytes: stripes at least this large are copied straight from
// the caller's memory, one transfer a stripe; smaller ones are first
// packed into one contiguous buffer per device, so that each device still
// gets one large transfer.
const poolDirectBytes = 1 << 20

// poolStageBytes bounds the packing buffer of one device.
const poolStageBytes = 16 << 20

// NewPoolSlice makes a PoolSlice of n zero elements on the pool's devices.
// T must hold no pointers (ErrPointerType names the field that does). It
// fails with ErrOutOfMemory when the pool has no room for n elements
// (nothing is left allocated then).
func NewPoolSlice[T any](pool *Pool, n int, opts ...PoolSliceOption) (*PoolSlice[T], error) {
	if err := pool.usable(); err != nil {
		return nil, fmt.Errorf("vmem: NewPoolSlice: %w", err)
	}
	if err := layout.Check[T](); err != nil {
		return nil, fmt.Errorf("vmem: NewPoolSlice: %w", err)
	}
	if n < 0 {
		return nil, fmt.Errorf("vmem: NewPoolSlice: negative length %d: %w", n, ErrRange)
	}
	cfg := poolSliceConfig{placement: pool.Placement()}
	for _, o := range opts {
		if o != nil {
			o.applyPoolSlice(&cfg)
		}
	}
	if cfg.placement != Stripe && cfg.placement != FillFirst {
		return nil, fmt.Errorf("vmem: NewPoolSlice: unknown %v", cfg.placement)
	}
	var sc sliceConfig
	for _, o := range cfg.slice {
		o(&sc)
	}
	var zero T
	s := &PoolSlice[T]{pool: pool, nd: pool.Len(), place: cfg.placement, size: unsafe.Sizeof(zero)}
	stripe := cfg.stripe
	if stripe <= 0 {
		stripe = max(poolStripeBytes/int(max(s.size, 1)), 1)
		stripe = 1 << (bits.Len(uint(stripe)) - 1) // round down: at most 16 MiB
	}
	s.shift = uint(bits.Len(uint(stripe - 1))) // round up to a power of two
	s.mask = 1<<s.shift - 1
	s.ends = make([]int, s.nd)
	// Parts start empty: capacity is reserved below in the pool's terms.
	partOpts := append(append([]SliceOption(nil), cfg.slice...), WithCapacity(0))
	s.parts = make([]*Slice[T], s.nd)
	for d, dev := range pool.devs {
		p, err := NewSlice[T](dev, 0, partOpts...)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("vmem: NewPoolSlice: device %d: %w", d, err)
		}
		s.parts[d] = p
	}
	if err := s.Resize(n); err != nil {
		s.Close()
		return nil, err
	}
	if sc.capacity > n {
		if err := s.Grow(sc.capacity - n); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Len returns the number of elements.
func (s *PoolSlice[T]) Len() int { return s.n }

// Placement returns how the elements are spread over the devices.
func (s *PoolSlice[T]) Placement() Placement { return s.place }

// Pool returns the pool the PoolSlice lives on.
func (s *PoolSlice[T]) Pool() *Pool { return s.pool }

// DeviceLens returns how many elements each device of the pool holds.
func (s *PoolSlice[T]) DeviceLens() []int {
	ls := make([]int, s.nd)
	for d, p := range s.parts {
		if p != nil {
			ls[d] = p.Len()
		}
	}
	return ls
}

// Part returns device d's part: an ordinary Slice holding the elements
// that device d holds (DeviceLens()[d] of them), in the PoolSlice's order.
// It is for running one-device operations on every device (Sum, Sort of
// each part, kernels); the part's elements may be read and written through
// it, but its length must not be changed except through the PoolSlice.
func (s *PoolSlice[T]) Part(d int) *Slice[T] { return s.parts[d] }

// Err returns the first error met by a method without an error result
// (Get or Set on private VRAM of a lost device, an iteration stopped by an
// error), on any device.
func (s *PoolSlice[T]) Err() error {
	if err := s.err.get(); err != nil {
		return err
	}
	for _, p := range s.parts {
		if p != nil {
			if err := p.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// usable is the check of every method with an error result.
func (s *PoolSlice[T]) usable() error {
	if s.closed {
		return ErrClosed
	}
	for _, p := range s.parts {
		if err := p.usable(); err != nil {
			return err
		}
	}
	return nil
}

// stripeLen is how many of the first n elements device d holds (Stripe).
func (s *PoolSlice[T]) stripeLen(d, n int) int {
	full, rem := n>>s.shift, n&s.mask
	q, r := full/s.nd, full%s.nd
	l := q << s.shift
	if d < r {
		l += s.mask + 1
	} else if d == r {
		l += rem
	}
	return l
}

// global is the index of device d's local element l (Stripe).
func (s *PoolSlice[T]) global(d, l int) int {
	return ((l>>s.shift)*s.nd+d)<<s.shift | l&s.mask
}

// start is the first global index of parts[d] (FillFirst).
func (s *PoolSlice[T]) start(d int) int {
	if d == 0 {
		return 0
	}
	return s.ends[d-1]
}

// locate maps global index i (in range) to its device and local index.
func (s *PoolSlice[T]) locate(i int) (d, l int) {
	if s.place == Stripe {
		k := i >> s.shift
		return k % s.nd, (k/s.nd)<<s.shift | i&s.mask
	}
	for i >= s.ends[d] {
		d++
	}
	return d, i - s.start(d)
}

// localRange is device d's part of the global range [lo, hi): the local
// elements [a, b).
func (s *PoolSlice[T]) localRange(d, lo, hi int) (a, b int) {
	if s.place == Stripe {
		return s.stripeLen(d, lo), s.stripeLen(d, hi)
	}
	st := s.start(d)
	a = min(max(lo-st, 0), s.ends[d]-st)
	b = min(max(hi-st, 0), s.ends[d]-st)
	return a, b
}

func (s *PoolSlice[T]) outOfRange(i int) {
	if s.closed {
		panic("vmem: PoolSlice used after Close")
	}
	panic(fmt.Sprintf("vmem: PoolSlice index %d out of range [0:%d]", i, s.n))
}

// Get returns element i. It panics if i is out of range, like a slice, and
// once the device holding i is lost (see Slice.Get).
func (s *PoolSlice[T]) Get(i int) T {
	if uint(i) >= uint(s.n) {
		s.outOfRange(i)
	}
	d, l := s.locate(i)
	p := s.parts[d]
	if p.dev.isLost() {
		s.readLost("Get")
	}
	return p.Get(l)
}

// Set stores v at i. It panics if i is out of range.
func (s *PoolSlice[T]) Set(i int, v T) {
	if uint(i) >= uint(s.n) {
		s.outOfRange(i)
	}
	d, l := s.locate(i)
	s.parts[d].Set(l, v)
}

// poolRun runs f for each device in ds, one goroutine per device when
// there are several, and joins their errors.
func poolRun(ds []int, f func(d int) error) error {
	switch len(ds) {
	case 0:
		return nil
	case 1:
		return f(ds[0])
	}
	errs := make([]error, len(ds))
	par.Go(len(ds), func(k int) { errs[k] = f(ds[k]) })
	return errors.Join(errs...)
}

// fan is poolRun for a call of s: s stays reachable until every part is
// done (its parts are s's to free; see vmemtest.KeptAlive).
func (s *PoolSlice[T]) fan(ds []int, f func(d int) error) error {
	err := poolRun(ds, f)
	runtime.KeepAlive(s)
	return err
}

// devErr names the device in an error from its part.
func devErr(op string, d int, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("vmem: PoolSlice.%s: device %d: %w", op, d, err)
}

// setLens records the parts' lengths after a change.
func (s *PoolSlice[T]) setLens() {
	end := 0
	for d, p := range s.parts {
		end += p.Len()
		s.ends[d] = end
	}
	s.n = end
	if buildconst.Invariants {
		s.check()
	}
}

// check panics if the parts' lengths do not follow the placement (each
// device holds exactly its stripes) or exceed their capacity. (FillFirst
// parts may be empty before a full one: a device that had no room at all.)
func (s *PoolSlice[T]) check() {
	for d, p := range s.parts {
		switch {
		case s.place == Stripe && p.Len() != s.stripeLen(d, s.n):
			panic(fmt.Sprintf("vmem: PoolSlice: device %d holds %d of %d elements, its stripes %d", d, p.Len(), s.n, s.stripeLen(d, s.n)))
		case p.Len() > p.Cap():
			panic(fmt.Sprintf("vmem: PoolSlice: device %d: length %d over capacity %d", d, p.Len(), p.Cap()))
		}
	}
}

// restore puts every part back to the lengths in old, after a failed
// change (shrinking zeroes what is cut off, so the elements read as before
// and a later growth shows zeros).
func (s *PoolSlice[T]) restore(old []int) {
	for d, p := range s.parts {
		if p.Len() != old[d] {
			p.Resize(old[d])
		}
	}
	s.setLens()
}

// Resize sets Len to n, growing the parts as needed. New elements are zero.
// On error (ErrOutOfMemory when the pool has no room) the length and the
// elements are unchanged; memory the parts reserved on the way stays with
// them as capacity, as with Slice.Grow.
func (s *PoolSlice[T]) Resize(n int) error {
	if n < 0 {
		return fmt.Errorf("vmem: PoolSlice.Resize(%d): %w", n, ErrRange)
	}
	if err := s.usable(); err != nil {
		return err
	}
	old := s.DeviceLens()
	var err error
	if s.place == Stripe {
		var ds []int
		for d := range s.parts {
			if s.stripeLen(d, n) != old[d] {
				ds = append(ds, d)
			}
		}
		err = s.fan(ds, func(d int) error {
			return devErr("Resize", d, s.parts[d].Resize(s.stripeLen(d, n)))
		})
	} else {
		err = s.resizeFill(n)
	}
	if err != nil {
		s.restore(old)
		return err
	}
	s.setLens()
	return nil
}

// resizeFill resizes a FillFirst PoolSlice: shrinking cuts from the last
// parts; growing fills the last non-empty part's device, then the next.
func (s *PoolSlice[T]) resizeFill(n int) error {
	if n <= s.n {
		for d := s.nd - 1; d >= 0; d-- {
			st := s.start(d)
			want := min(max(n-st, 0), s.parts[d].Len())
			if want != s.parts[d].Len() {
				if err := s.parts[d].Resize(want); err != nil {
					return devErr("Resize", d, err)
				}
			}
		}
		return nil
	}
	need := n - s.n
	t := 0
	for d := range s.parts {
		if s.parts[d].Len() > 0 {
			t = d
		}
	}
	for d := t; d < s.nd && need > 0; d++ {
		p := s.parts[d]
		old := p.Len()
		err := p.Resize(old + need)
		if err == nil {
			need = 0
			break
		}
		if !errors.Is(err, ErrOutOfMemory) {
			return devErr("Resize", d, err)
		}
		// The device is full: keep what it could reserve, go on with the
		// next device.
		if k := min(need, p.Cap()-old); k > 0 {
			if err := p.Resize(old + k); err != nil {
				return devErr("Resize", d, err)
			}
			need -= k
		}
	}
	if need > 0 {
		return fmt.Errorf("vmem: PoolSlice.Resize(%d): %d elements do not fit on the pool's %d devices: %w", n, need, s.nd, ErrOutOfMemory)
	}
	return nil
}

// Grow makes room for n more elements without changing Len. On error the
// PoolSlice is unchanged, apart from capacity reserved on the way.
func (s *PoolSlice[T]) Grow(n int) error {
	if n < 0 {
		return fmt.Errorf("vmem: PoolSlice.Grow(%d): %w", n, ErrRange)
	}
	if err := s.usable(); err != nil {
		return err
	}
	if s.place == Stripe {
		var ds []int
		for d, p := range s.parts {
			if s.stripeLen(d, s.n+n) > p.Cap() {
				ds = append(ds, d)
			}
		}
		return s.fan(ds, func(d int) error {
			p := s.parts[d]
			return devErr("Grow", d, p.Grow(s.stripeLen(d, s.n+n)-p.Len()))
		})
	}
	// FillFirst: which device takes the new elements is only known by
	// trying, so grow and give the length back (the capacity stays).
	at := s.n
	if err := s.Resize(at + n); err != nil {
		return err
	}
	return s.Resize(at)
}

// Cap returns the number of elements the PoolSlice holds without
// allocating.
func (s *PoolSlice[T]) Cap() int {
	if s.closed {
		return 0
	}
	if s.place == FillFirst {
		t := 0
		for d, p := range s.parts {
			if p.Len() > 0 {
				t = d
			}
		}
		c := s.start(t)
		for _, p := range s.parts[t:] {
			c += p.Cap()
		}
		return c
	}
	// The largest n whose share fits every device's capacity.
	fits := func(n int) bool {
		for d, p := range s.parts {
			if s.stripeLen(d, n) > p.Cap() {
				return false
			}
		}
		return true
	}
	lo, hi := s.n, 0
	for _, p := range s.parts {
		hi += p.Cap()
	}
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// Append adds vs at the end, growing the PoolSlice as needed. On error it is
// unchanged.
func (s *PoolSlice[T]) Append(vs ...T) error {
	at := s.n
	if err := s.Resize(at + len(vs)); err != nil {
		return err
	}
	if err := s.CopyFrom(vs, at); err != nil {
		s.Resize(at)
		return err
	}
	return nil
}

// Close frees the PoolSlice's memory on every device. It is idempotent;
// the PoolSlice is invalid afterwards.
func (s *PoolSlice[T]) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for d, p := range s.parts {
		if p != nil {
			if err := p.Close(); err != nil {
				errs = append(errs, devErr("Close", d, err))
			}
		}
	}
	s.n = 0
	clear(s.ends)
	return errors.Join(errs...)
}
