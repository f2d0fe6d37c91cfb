package vmem

// Sort and SortBy of a pool Slice: each device sorts its part (by the
// kernels of a Slice, all devices at once), then the CPU merges the
// sorted parts into the Slice's order. The parts are read a run at a
// time into host buffers and the merge goes into one host array of the
// pool Slice's size, which is copied back by every device at once: the
// merged order cannot be written in place, since an element may be due at
// a place whose old element has not been read yet.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/govram/govram/internal/buildconst"
)

// poolMergeRun is how many bytes of one part the merge reads at a time:
// one DMA long enough to run near the link's speed.
const poolMergeRun = 4 << 20

func poolSort[T Number](s *poolSlice[T]) error {
	if err := s.usable(); err != nil {
		return err
	}
	if s.n < 2 {
		return nil
	}
	ds := s.spans(0, s.n)
	err := s.fan(ds, func(d int) error {
		return devErr("Sort", d, partSort(s.parts[d], sortSlice[T], kernSortNumbers[T]))
	})
	if err != nil || len(ds) < 2 {
		// One part holds every element, in the Slice's order.
		return err
	}
	key := kernKeyFunc[T]()
	return s.sortMerge(ds, func(v *T) uint64 { return key(*v) }, "Sort")
}

func poolSortBy[T any, K Number](s *poolSlice[T], key func(*T) *K) error {
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
	mapKey := kernKeyFunc[K]()
	keyOf := func(v *T) uint64 { return mapKey(*(*K)(unsafe.Add(unsafe.Pointer(v), off))) }
	ds := s.spans(0, s.n)
	if len(ds) > 1 && s.place == Stripe {
		// A part's stripes interleave with the others': after the parts
		// are sorted, nothing tells which of two equal keys came first.
		return s.sortHost(keyOf)
	}
	err = s.fan(ds, func(d int) error {
		sortBy := func(p *Slice[T]) error { return sortSliceBy(p, key) }
		return devErr("SortBy", d, partSort(s.parts[d], sortBy, func(v []T) { sortStable(v, keyOf) }))
	})
	if err != nil || len(ds) < 2 {
		return err
	}
	// FillFirst parts follow each other in the Slice's order, so a
	// merge that takes equal keys from the earlier part first is stable.
	return s.sortMerge(ds, keyOf, "SortBy")
}

// partSort sorts one part with sort, or on the CPU with cpu when its
// device has no room for the kernels' scratch: a FillFirst part fills its
// device, and the merge needs the host memory anyway.
func partSort[T any](p *Slice[T], sort func(*Slice[T]) error, cpu func([]T)) error {
	err := sort(p)
	if errors.Is(err, ErrOutOfMemory) {
		err = p.kernSortCPU(cpu)
	}
	return err
}

func sortStable[T any](v []T, keyOf func(*T) uint64) {
	slices.SortStableFunc(v, func(a, b T) int { return cmp.Compare(keyOf(&a), keyOf(&b)) })
}

// sortHost sorts the elements stably by key on the CPU, through a copy.
func (s *poolSlice[T]) sortHost(keyOf func(*T) uint64) error {
	buf := make([]T, s.n)
	if err := s.CopyTo(buf, 0); err != nil {
		return err
	}
	sortStable(buf, keyOf)
	return s.CopyFrom(buf, 0)
}

// mergeRun is a sorted part being read by the merge.
type mergeRun[T any] struct {
	p    *Slice[T]
	d    int
	next int // the part's next element to read into buf
	buf  []T
	i    int // buf[i] is the run's head
	key  uint64
}

// fill reads the part's next elements into buf; it reports false at the
// part's end.
func (r *mergeRun[T]) fill(op string, keyOf func(*T) uint64) (bool, error) {
	k := min(cap(r.buf), r.p.Len()-r.next)
	if k == 0 {
		return false, nil
	}
	r.buf = r.buf[:k]
	if err := r.p.CopyTo(r.buf, r.next); err != nil {
		return false, devErr(op, r.d, err)
	}
	r.next += k
	r.i = 0
	r.key = keyOf(&r.buf[0])
	return true, nil
}

// sortMerge merges the sorted parts ds (in device order) by key and writes
// the result back. Equal keys come from the earlier part first.
func (s *poolSlice[T]) sortMerge(ds []int, keyOf func(*T) uint64, op string) error {
	out := make([]T, s.n)
	run := max(poolMergeRun/int(max(s.size, 1)), 1)
	live := make([]*mergeRun[T], 0, len(ds))
	for _, d := range ds {
		r := &mergeRun[T]{p: s.parts[d], d: d, buf: make([]T, 0, min(run, s.parts[d].Len()))}
		ok, err := r.fill(op, keyOf)
		if err != nil {
			return err
		}
		if ok {
			live = append(live, r)
		}
	}
	o := 0
	for len(live) > 1 {
		b := 0
		for j := 1; j < len(live); j++ {
			if live[j].key < live[b].key {
				b = j
			}
		}
		r := live[b]
		out[o] = r.buf[r.i]
		o++
		if r.i++; r.i < len(r.buf) {
			r.key = keyOf(&r.buf[r.i])
			continue
		}
		ok, err := r.fill(op, keyOf)
		if err != nil {
			return err
		}
		if !ok {
			live = slices.Delete(live, b, b+1)
		}
	}
	if len(live) == 1 {
		// The last run is copied as it stands.
		r := live[0]
		o += copy(out[o:], r.buf[r.i:])
		if err := r.p.CopyTo(out[o:], r.next); err != nil {
			return devErr(op, r.d, err)
		}
	}
	if buildconst.Invariants {
		for i := 1; i < len(out); i++ {
			if keyOf(&out[i]) < keyOf(&out[i-1]) {
				panic(fmt.Sprintf("vmem: invariant: pool Slice merge out of order at %d of %d", i, len(out)))
			}
		}
	}
	return s.CopyFrom(out, 0)
}
