package vmem

// pool Slice's bulk operations: copies in and out (one transfer per device,
// all devices at once), Fill and GetBatch (indices grouped by
// device), the iterators, and the batched writer.

import (
	"fmt"
	"iter"
)

func (s *poolSlice[T]) checkSpan(op string, at, n int) error {
	if err := s.usable(); err != nil {
		return err
	}
	if at < 0 || n < 0 || at > s.n || n > s.n-at {
		return fmt.Errorf("vmem: Slice.%s: [%d, %d) outside [0, %d): %w", op, at, at+n, s.n, ErrRange)
	}
	return nil
}

// spans returns the devices holding part of the global range [lo, hi).
func (s *poolSlice[T]) spans(lo, hi int) []int {
	var ds []int
	for d := range s.parts {
		if a, b := s.localRange(d, lo, hi); b > a {
			ds = append(ds, d)
		}
	}
	return ds
}

// direct reports whether device runs are copied straight between the
// caller's memory and the part (else they are packed first).
func (s *poolSlice[T]) direct() bool {
	return s.place == FillFirst || s.nd == 1 || uintptr(s.mask+1)*s.size >= poolDirectBytes
}

// CopyFrom copies src into the Slice starting at element at (which
// must leave room: at+len(src) <= Len). Each device's share is written by
// its own goroutine, as one contiguous range of its part, so the devices'
// transfers (NT stores into mapped VRAM, DMA into private VRAM) run at
// once.
func (s *poolSlice[T]) CopyFrom(src []T, at int) error {
	if err := s.checkSpan("CopyFrom", at, len(src)); err != nil {
		return err
	}
	hi := at + len(src)
	return s.fan(s.spans(at, hi), func(d int) error {
		a, b := s.localRange(d, at, hi)
		p := s.parts[d]
		if s.place == FillFirst {
			st := s.start(d)
			return devErr("CopyFrom", d, p.CopyFrom(src[st+a-at:st+b-at], a))
		}
		if s.direct() {
			for l := a; l < b; {
				k := min(s.mask+1-l&s.mask, b-l)
				g := s.global(d, l) - at
				if err := p.CopyFrom(src[g:g+k], l); err != nil {
					return devErr("CopyFrom", d, err)
				}
				l += k
			}
			return nil
		}
		buf := make([]T, min(b-a, max(poolStageBytes/int(max(s.size, 1)), 1)))
		for w := a; w < b; w += len(buf) {
			run := buf[:min(len(buf), b-w)]
			for l := w; l < w+len(run); {
				k := min(s.mask+1-l&s.mask, w+len(run)-l)
				g := s.global(d, l) - at
				copy(run[l-w:l-w+k], src[g:g+k])
				l += k
			}
			if err := p.CopyFrom(run, w); err != nil {
				return devErr("CopyFrom", d, err)
			}
		}
		return nil
	})
}

// CopyTo copies len(dst) elements starting at element at into dst, each
// device's share by its own goroutine (DMA on every GPU at once).
func (s *poolSlice[T]) CopyTo(dst []T, at int) error {
	if err := s.checkSpan("CopyTo", at, len(dst)); err != nil {
		return err
	}
	hi := at + len(dst)
	return s.fan(s.spans(at, hi), func(d int) error {
		a, b := s.localRange(d, at, hi)
		p := s.parts[d]
		if s.place == FillFirst {
			st := s.start(d)
			return devErr("CopyTo", d, p.CopyTo(dst[st+a-at:st+b-at], a))
		}
		if s.direct() {
			for l := a; l < b; {
				k := min(s.mask+1-l&s.mask, b-l)
				g := s.global(d, l) - at
				if err := p.CopyTo(dst[g:g+k], l); err != nil {
					return devErr("CopyTo", d, err)
				}
				l += k
			}
			return nil
		}
		buf := make([]T, min(b-a, max(poolStageBytes/int(max(s.size, 1)), 1)))
		for w := a; w < b; w += len(buf) {
			run := buf[:min(len(buf), b-w)]
			if err := p.CopyTo(run, w); err != nil {
				return devErr("CopyTo", d, err)
			}
			for l := w; l < w+len(run); {
				k := min(s.mask+1-l&s.mask, w+len(run)-l)
				g := s.global(d, l) - at
				copy(dst[g:g+k], run[l-w:l-w+k])
				l += k
			}
		}
		return nil
	})
}

// Fill sets every element to v, on every device at once.
func (s *poolSlice[T]) Fill(v T) error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.fan(s.spans(0, s.n), func(d int) error {
		return devErr("Fill", d, s.parts[d].Fill(v))
	})
}

// poolGroups is a batch of indices grouped by device: the indices of
// device d are local[base[d]:base[d+1]], in the batch's order.
type poolGroups struct {
	dev   []uint8 // device of each index of the batch
	local []int
	base  []int
}

// group sorts a batch of (in-range) indices by device, stably.
func (s *poolSlice[T]) group(idx []int) *poolGroups {
	g := &poolGroups{dev: make([]uint8, len(idx)), local: make([]int, len(idx)), base: make([]int, s.nd+1)}
	cnt := make([]int, s.nd)
	for k, i := range idx {
		d, _ := s.locate(i)
		g.dev[k] = uint8(d)
		cnt[d]++
	}
	for d := range s.nd {
		g.base[d+1] = g.base[d] + cnt[d]
	}
	cur := append([]int(nil), g.base[:s.nd]...)
	for k, i := range idx {
		d := int(g.dev[k])
		_, l := s.locate(i)
		g.local[cur[d]] = l
		cur[d]++
	}
	return g
}

// active lists the devices with indices in the batch.
func (g *poolGroups) active() []int {
	var ds []int
	for d := 0; d+1 < len(g.base); d++ {
		if g.base[d+1] > g.base[d] {
			ds = append(ds, d)
		}
	}
	return ds
}

// poolScatter puts grouped results back in the batch's order: the batch is
// replayed with a cursor per device.
func poolScatter[T any](g *poolGroups, grouped, dst []T) {
	cur := append([]int(nil), g.base[:len(g.base)-1]...)
	for k, d := range g.dev {
		dst[k] = grouped[cur[d]]
		cur[d]++
	}
}

// poolGetManyPar: smaller batches are read device after device on the
// caller's goroutine, larger ones one goroutine per device.
const poolGetManyPar = 1024

// getMany reads the elements at idx into dst (len(dst) >= len(idx)). The
// indices are grouped by device and each device's group is read with its
// part's getMany (streaming loads interleaved); large batches read every
// device's group at once, one goroutine each. It panics on an index out of
// range and when dst is shorter than idx (it has no error result; GetBatch
// returns an error matching ErrRange).
func (s *poolSlice[T]) getMany(idx []int, dst []T) {
	if len(dst) < len(idx) {
		panic("vmem: Slice.GetBatch: dst shorter than idx")
	}
	for _, i := range idx {
		if uint(i) >= uint(s.n) {
			s.outOfRange(i)
		}
	}
	s.readCheck("GetBatch")
	defer s.readCheck("GetBatch") // a loss met on the way, by any part
	if s.nd == 1 {
		s.parts[0].getManyAny(idx, dst)
		return
	}
	g := s.group(idx)
	out := make([]T, len(idx))
	read := func(d int) error {
		lo, hi := g.base[d], g.base[d+1]
		s.parts[d].getManyAny(g.local[lo:hi], out[lo:hi])
		return nil
	}
	if len(idx) < poolGetManyPar {
		for _, d := range g.active() {
			read(d)
		}
	} else {
		s.fan(g.active(), read)
	}
	poolScatter(g, out, dst[:len(idx)])
}

// GetBatch reads the elements at indices into dst (dst[k] = element
// indices[k]); len(dst) must equal len(indices). The indices are grouped by
// device and every device gathers its group at once (on a GPU, a kernel
// per device and one copy back each). An index out of range gives
// ErrRange; dst's contents are then unspecified. Like Get, it may run
// concurrently with other readers.
func (s *poolSlice[T]) GetBatch(indices []int, dst []T) error {
	if err := s.usable(); err != nil {
		return err
	}
	if len(dst) != len(indices) {
		return fmt.Errorf("vmem: Slice.GetBatch: %d indices for %d elements of dst: %w", len(indices), len(dst), ErrRange)
	}
	for _, i := range indices {
		if uint(i) >= uint(s.n) {
			return fmt.Errorf("vmem: Slice.GetBatch: index %d outside [0, %d): %w", i, s.n, ErrRange)
		}
	}
	if s.nd == 1 {
		return s.parts[0].GetBatch(indices, dst)
	}
	g := s.group(indices)
	out := make([]T, len(indices))
	err := s.fan(g.active(), func(d int) error {
		lo, hi := g.base[d], g.base[d+1]
		return devErr("GetBatch", d, s.parts[d].GetBatch(g.local[lo:hi], out[lo:hi]))
	})
	if err != nil {
		return err
	}
	poolScatter(g, out, dst)
	return nil
}

// Chunks returns the elements in order as consecutive runs: yield gets the
// index of each run's first element and the run, which is valid only until
// yield returns. A FillFirst pool Slice hands out its parts' Chunks in turn;
// a striped one reads rounds of stripes from every device at once (CopyTo),
// the next round while yield works on this one. The Slice must not
// change length while Chunks or All runs; an error stops the iteration and
// is reported by Err.
func (s *poolSlice[T]) Chunks() iter.Seq2[int, []T] {
	return func(yield func(int, []T) bool) {
		if s.closed {
			return
		}
		s.readCheck("Chunks")
		if s.n == 0 {
			return
		}
		if s.place == FillFirst || s.nd == 1 {
			st := 0
			for _, p := range s.parts {
				before := p.Err()
				for at, run := range p.chunks {
					if !yield(st+at, run) {
						return
					}
				}
				if err := p.Err(); err != nil && before == nil {
					return
				}
				st += p.Len()
			}
			return
		}
		k := s.roundRun()
		var bufs [2][]T
		for i := range bufs {
			bufs[i] = make([]T, k)
		}
		readAhead(s.n, k, bufs, s.CopyTo, s.iterFail("Chunks"), yield)
	}
}

// chunks runs Chunks for Slice.Chunks, whose function stays one.
//
//go:noinline
func (s *poolSlice[T]) chunks(yield func(int, []T) bool) { s.Chunks()(yield) }

// roundRun is the elements a striped pool Slice reads at a time: whole
// rounds of stripes, about poolStageBytes from each device.
func (s *poolSlice[T]) roundRun() int {
	round := (s.mask + 1) * s.nd
	per := max(poolStageBytes*s.nd/int(max(s.size, 1))/round, 1) * round
	return min(per, s.n)
}

// allStart begins Slice.All on a pool: it panics if a device is lost and
// reports whether runs are read by DMA (CopyTo, allRun elements at a time,
// every device at once) rather than in place (hostRun).
func (s *poolSlice[T]) allStart() bool {
	if !s.closed {
		s.readCheck("All")
	}
	return !s.onHost()
}

// onHost reports whether every part is on the host backend, where All
// reads the parts' memory in place.
func (s *poolSlice[T]) onHost() bool {
	for _, p := range s.parts {
		if p.dev.vk != nil {
			return false
		}
	}
	return true
}

// hostRun is the run of elements from at that lie together in one part's
// memory, in place (nil at the end). Every part is on the host backend.
func (s *poolSlice[T]) hostRun(at int) []T {
	if s.closed || at >= s.n {
		return nil
	}
	d, l := s.locate(at)
	run := s.parts[d].hostRun(l)
	if s.place == Stripe {
		run = run[:min(len(run), s.mask+1-at&s.mask)]
	}
	return run
}

// allRun is the elements All reads at a time: whole rounds of stripes
// when striped (every device reads at once), else as Slice.All.
func (s *poolSlice[T]) allRun() int {
	if s.place == FillFirst || s.nd == 1 {
		return min(max(allRunBytes/int(max(s.size, 1)), 1), s.n)
	}
	return s.roundRun()
}

// poolSliceWriter is a sliceWriter on a pool: one sliceWriter per device
// (stores logged, sorted by address and written as whole lines at Flush).
// Its rules are sliceWriter's; Flush writes every device's batch at once.
type poolSliceWriter[T any] struct {
	s     *poolSlice[T]
	lines int
	ws    []*sliceWriter[T]
}

// Writer returns a batch writer with room for lines pending lines per
// segment of each device's part (0: 65536 stores).
func (s *poolSlice[T]) writer(lines int) *poolSliceWriter[T] {
	return &poolSliceWriter[T]{s: s, lines: lines, ws: make([]*sliceWriter[T], s.nd)}
}

// Set records a store of v at i; it panics if i is out of range.
func (w *poolSliceWriter[T]) Set(i int, v T) {
	s := w.s
	if uint(i) >= uint(s.n) {
		s.outOfRange(i)
	}
	d, l := s.locate(i)
	if w.ws[d] == nil {
		w.ws[d] = s.parts[d].writer(w.lines)
	}
	w.ws[d].Set(l, v)
}

// Flush writes every pending store, every device's at once.
func (w *poolSliceWriter[T]) Flush() error {
	var ds []int
	for d, sw := range w.ws {
		if sw != nil {
			ds = append(ds, d)
		}
	}
	return poolRun(ds, func(d int) error { return devErr("Flush", d, w.ws[d].Flush()) })
}
