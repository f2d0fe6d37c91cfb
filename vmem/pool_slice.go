package vmem

// A Slice on a Pool: one array over every device of the pool.
//
// Each device holds one ordinary Slice (its part), so everything a Slice
// does on one GPU (streaming-load Gets, NT-store writes, DMA, kernels,
// spilling from mapped to private VRAM) is what a part does on its GPU.
// The poolSlice behind it only maps a global index to (device, local index):
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
	"slices"
	"unsafe"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/layout"
)

// poolSlice is a Slice on a Pool (NewSlice on a *Pool): a typed, growable
// array spread over the pool's devices, with the methods of Slice, which
// forward to it. Placement (WithPlacement) decides which device holds
// which element.
//
// Save writes a snapshot in Slice.Save's format, the elements in order
// whatever the devices, so LoadSlice reads it into a pool of any size or
// onto one device. Sort, SortBy, Sum and SumAs work on each device's part
// at once, and Sort merges the sorted parts through host memory.
//
// Concurrency is that of a Slice on one device. It starts its own
// goroutines, one per device, inside a call and waits for them before it
// returns. It is invalid after Close, and after any of its devices is
// closed (which closes that device's part).
type poolSlice[T any] struct {
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

// WithPlacement sets how a Slice made on a Pool spreads its elements over
// the pool's devices (default Stripe). A Slice on a Device holds every
// element on that device, so there the option is ignored: code that takes
// a Memory may pass it whatever the Memory is.
func WithPlacement(p Placement) SliceOption {
	return func(c *sliceConfig) { c.placement = p }
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

// newPoolSlice is NewSlice on a pool: a Slice of n zero elements whose
// sh spreads them over the pool's devices. The options apply to every
// device's part (WithCapacity counts elements of the whole Slice).
func newPoolSlice[T any](pool *Pool, n int, opts []SliceOption) (*Slice[T], error) {
	if err := pool.usable(); err != nil {
		return nil, fmt.Errorf("vmem: NewSlice: %w", err)
	}
	if err := layout.Check[T](); err != nil {
		return nil, fmt.Errorf("vmem: NewSlice: %w", err)
	}
	if n < 0 {
		return nil, fmt.Errorf("vmem: NewSlice: negative length %d: %w", n, ErrRange)
	}
	cfg := sliceConfig{placement: Stripe}
	if pool.fillFirst.Load() {
		cfg.placement = FillFirst
	}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.placement != Stripe && cfg.placement != FillFirst {
		return nil, fmt.Errorf("vmem: NewSlice: unknown %v", cfg.placement)
	}
	var zero T
	s := &poolSlice[T]{nd: pool.len(), place: cfg.placement, size: unsafe.Sizeof(zero)}
	// The Slice handed out: its own fields stay those of an empty Slice
	// (no fast path, so Get goes to s), but for Len, mirrored from s after
	// every change, and Err, which s's errors reach.
	out := &Slice[T]{sh: s, size: s.size}
	s.err.up = &out.err
	stripe := cfg.stripe
	if stripe <= 0 {
		stripe = max(poolStripeBytes/int(max(s.size, 1)), 1)
		stripe = 1 << (bits.Len(uint(stripe)) - 1) // round down: at most 16 MiB
	}
	s.shift = uint(bits.Len(uint(stripe - 1))) // round up to a power of two
	s.mask = 1<<s.shift - 1
	s.ends = make([]int, s.nd)
	// Parts start empty: capacity is reserved below in the pool's terms.
	partOpts := append(slices.Clip(opts), WithCapacity(0))
	s.parts = make([]*Slice[T], s.nd)
	for d, dev := range pool.devs {
		p, err := newSlice[T](dev, 0, partOpts)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("vmem: NewSlice: device %d: %w", d, err)
		}
		p.err.up = &s.err
		s.parts[d] = p
	}
	if err := s.Resize(n); err != nil {
		s.Close()
		return nil, err
	}
	if cfg.capacity > n {
		if err := s.grow(cfg.capacity - n); err != nil {
			s.Close()
			return nil, err
		}
	}
	return out, out.synced(nil)
}

// DeviceLens returns how many elements each device of the pool holds.
func (s *poolSlice[T]) DeviceLens() []int {
	ls := make([]int, s.nd)
	for d, p := range s.parts {
		if p != nil {
			ls[d] = p.Len()
		}
	}
	return ls
}

// usable is the check of every method with an error result.
func (s *poolSlice[T]) usable() error {
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
func (s *poolSlice[T]) stripeLen(d, n int) int {
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
func (s *poolSlice[T]) global(d, l int) int {
	return ((l>>s.shift)*s.nd+d)<<s.shift | l&s.mask
}

// start is the first global index of parts[d] (FillFirst).
func (s *poolSlice[T]) start(d int) int {
	if d == 0 {
		return 0
	}
	return s.ends[d-1]
}

// locate maps global index i (in range) to its device and local index.
func (s *poolSlice[T]) locate(i int) (d, l int) {
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
func (s *poolSlice[T]) localRange(d, lo, hi int) (a, b int) {
	if s.place == Stripe {
		return s.stripeLen(d, lo), s.stripeLen(d, hi)
	}
	st := s.start(d)
	a = min(max(lo-st, 0), s.ends[d]-st)
	b = min(max(hi-st, 0), s.ends[d]-st)
	return a, b
}

func (s *poolSlice[T]) outOfRange(i int) {
	if s.closed {
		panic("vmem: Slice used after Close")
	}
	panic(fmt.Sprintf("vmem: Slice index %d out of range [0:%d]", i, s.n))
}

// Get returns element i. It panics if i is out of range, like a slice, and
// once the device holding i is lost (see Slice.Get).
func (s *poolSlice[T]) Get(i int) T {
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
func (s *poolSlice[T]) Set(i int, v T) {
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
func (s *poolSlice[T]) fan(ds []int, f func(d int) error) error {
	err := poolRun(ds, f)
	runtime.KeepAlive(s)
	return err
}

// devErr names the device in an error from its part.
func devErr(op string, d int, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("vmem: Slice.%s: device %d: %w", op, d, err)
}

// setLens records the parts' lengths after a change.
func (s *poolSlice[T]) setLens() {
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
func (s *poolSlice[T]) check() {
	for d, p := range s.parts {
		switch {
		case s.place == Stripe && p.Len() != s.stripeLen(d, s.n):
			panic(fmt.Sprintf("vmem: Slice: device %d holds %d of %d elements, its stripes %d", d, p.Len(), s.n, s.stripeLen(d, s.n)))
		case p.Len() > p.Cap():
			panic(fmt.Sprintf("vmem: Slice: device %d: length %d over capacity %d", d, p.Len(), p.Cap()))
		}
	}
}

// restore puts every part back to the lengths in old, after a failed
// change (shrinking zeroes what is cut off, so the elements read as before
// and a later growth shows zeros).
func (s *poolSlice[T]) restore(old []int) {
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
func (s *poolSlice[T]) Resize(n int) error {
	if n < 0 {
		return fmt.Errorf("vmem: Slice.Resize(%d): %w", n, ErrRange)
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

// resizeFill resizes a FillFirst pool Slice: shrinking cuts from the last
// parts; growing fills the last non-empty part's device, then the next.
func (s *poolSlice[T]) resizeFill(n int) error {
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
		return fmt.Errorf("vmem: Slice.Resize(%d): %d elements do not fit on the pool's %d devices: %w", n, need, s.nd, ErrOutOfMemory)
	}
	return nil
}

// grow makes room for n more elements without changing Len. On error the
// Slice is unchanged, apart from capacity reserved on the way.
func (s *poolSlice[T]) grow(n int) error {
	if n < 0 {
		return fmt.Errorf("vmem: Slice.Grow(%d): %w", n, ErrRange)
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
			return devErr("Grow", d, p.grow(s.stripeLen(d, s.n+n)-p.Len()))
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

// Cap returns the number of elements the Slice holds without
// allocating.
func (s *poolSlice[T]) Cap() int {
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

// Append adds vs at the end, growing the Slice as needed. On error it is
// unchanged.
func (s *poolSlice[T]) Append(vs ...T) error {
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

// Close frees the Slice's memory on every device. It is idempotent;
// the Slice is invalid afterwards.
func (s *poolSlice[T]) Close() error {
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
