package vmem_test

// The differential test of PoolSlice: random operations on a PoolSlice and
// on a []T model.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/govram/govram/vmem"
)

// poolSliceDiff runs random operations on a PoolSlice and on a []T model.
func poolSliceDiff[T comparable](t *testing.T, p *vmem.Pool, gen func(uint64) T, steps int, opts ...vmem.SliceOption) {
	s, err := vmem.NewSlice[T](p, 5, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d := &poolDiff[T]{t: t, s: s, gen: gen}
	d.model = make([]T, 5)
	d.r = rand.New(rand.NewPCG(1, uint64(steps)))
	for step := range steps {
		op := d.r.IntN(11)
		if !d.apply(step, op) {
			continue
		}
		d.check(step, fmt.Sprint("op ", op))
		if step%50 == 49 {
			d.full(step)
		}
	}
	d.full(steps)
	// Chunks cover the elements in order.
	next0 := 0
	for at, run := range s.Chunks() {
		if at != next0 {
			t.Fatalf("Chunks: run at %d, want %d", at, next0)
		}
		next0 += len(run)
	}
	if next0 != len(d.model) {
		t.Fatalf("Chunks covered %d of %d", next0, len(d.model))
	}
}

// poolDiff is the state of poolSliceDiff: the PoolSlice, its model, the
// random source and the counter behind the generated values.
type poolDiff[T comparable] struct {
	t     *testing.T
	s     *vmem.Slice[T]
	model []T
	r     *rand.Rand
	ctr   uint64
	gen   func(uint64) T
}

// next returns the next generated value.
func (d *poolDiff[T]) next() T { d.ctr++; return d.gen(d.ctr) }

// check compares the lengths and capacity of the PoolSlice with the model.
func (d *poolDiff[T]) check(step int, what string) {
	t, s, model := d.t, d.s, d.model
	t.Helper()
	if s.Len() != len(model) {
		t.Fatalf("step %d (%s): Len %d, model %d", step, what, s.Len(), len(model))
	}
	sum := 0
	for _, l := range vmem.DeviceLens(s) {
		sum += l
	}
	if sum != len(model) {
		t.Fatalf("step %d (%s): DeviceLens %v sum to %d, want %d", step, what, vmem.DeviceLens(s), sum, len(model))
	}
	if s.Cap() < s.Len() {
		t.Fatalf("step %d: Cap %d < Len %d", step, s.Cap(), s.Len())
	}
}

// full compares every element of the PoolSlice, through All, with the model.
func (d *poolDiff[T]) full(step int) {
	t, s, model := d.t, d.s, d.model
	t.Helper()
	got := make([]T, 0, len(model))
	for i, v := range s.All() {
		if i != len(got) {
			t.Fatalf("step %d: All gave index %d after %d elements", step, i, len(got))
		}
		got = append(got, v)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, model) {
		t.Fatalf("step %d: All differs from the model (len %d vs %d)", step, len(got), len(model))
	}
}

// apply runs operation op on the PoolSlice and the model; it reports false
// where the step was skipped.
func (d *poolDiff[T]) apply(step, op int) bool {
	t, s, r := d.t, d.s, d.r
	switch op {
	case 0: // append a few
		d.appendN(r.IntN(4))
	case 1: // append many
		d.appendN(r.IntN(300))
	case 2: // set and get
		if len(d.model) == 0 {
			return false
		}
		i := r.IntN(len(d.model))
		v := d.next()
		s.Set(i, v)
		d.model[i] = v
		j := r.IntN(len(d.model))
		if got := s.Get(j); got != d.model[j] {
			t.Fatalf("step %d: Get(%d) = %v, want %v", step, j, got, d.model[j])
		}
	case 3: // CopyFrom a range
		if len(d.model) == 0 {
			return false
		}
		at := r.IntN(len(d.model))
		vs := make([]T, r.IntN(len(d.model)-at+1))
		for i := range vs {
			vs[i] = d.next()
		}
		if err := s.CopyFrom(vs, at); err != nil {
			t.Fatal(err)
		}
		copy(d.model[at:], vs)
	case 4: // CopyTo a range
		if len(d.model) == 0 {
			return false
		}
		at := r.IntN(len(d.model))
		dst := make([]T, r.IntN(len(d.model)-at+1))
		if err := s.CopyTo(dst, at); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(dst, d.model[at:at+len(dst)]) {
			t.Fatalf("step %d: CopyTo(%d, %d) differs", step, at, len(dst))
		}
	case 5, 6: // GetMany and Gather, small or large batches
		if len(d.model) == 0 {
			return false
		}
		d.getMany(step, op)
	case 7: // resize
		n := max(len(d.model)+r.IntN(200)-120, 0)
		if err := s.Resize(n); err != nil {
			t.Fatal(err)
		}
		var zero T
		for len(d.model) < n {
			d.model = append(d.model, zero)
		}
		d.model = d.model[:n]
	case 8: // batched writes
		if len(d.model) == 0 {
			return false
		}
		if r.IntN(2) == 0 { // SetBatch, repeated indices included
			var idx []int
			var vals []T
			for range r.IntN(100) {
				i, v := r.IntN(len(d.model)), d.next()
				idx, vals = append(idx, i), append(vals, v)
				d.model[i] = v
			}
			if err := s.SetBatch(idx, vals); err != nil {
				t.Fatal(err)
			}
			return true
		}
		w := s.Writer(4) // the streaming writer behind it, with small batches
		for range r.IntN(100) {
			i, v := r.IntN(len(d.model)), d.next()
			w.Set(i, v)
			d.model[i] = v
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	case 9: // fill, rarely
		if r.IntN(8) != 0 {
			return false
		}
		v := d.next()
		if err := s.Fill(v); err != nil {
			t.Fatal(err)
		}
		for i := range d.model {
			d.model[i] = v
		}
	case 10:
		if err := s.Grow(r.IntN(100)); err != nil {
			t.Fatal(err)
		}
	}
	return true
}

// appendN appends n generated values to the PoolSlice and the model.
func (d *poolDiff[T]) appendN(n int) {
	vs := make([]T, n)
	for i := range vs {
		vs[i] = d.next()
	}
	if err := d.s.Append(vs...); err != nil {
		d.t.Fatal(err)
	}
	d.model = append(d.model, vs...)
}

// getMany reads random indices with GetMany and Gather, a small batch or
// (op 6) a large one, and checks them against the model.
func (d *poolDiff[T]) getMany(step, op int) {
	t, s, r, model := d.t, d.s, d.r, d.model
	n := r.IntN(40)
	if op == 6 {
		n = 1000 + r.IntN(2000)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = r.IntN(len(model))
	}
	dst := make([]T, n)
	s.GetManyCPU(idx, dst)
	for k, i := range idx {
		if dst[k] != model[i] {
			t.Fatalf("step %d: GetMany[%d] (index %d) = %v, want %v", step, k, i, dst[k], model[i])
		}
	}
	clear(dst)
	if err := s.GetBatch(idx, dst); err != nil {
		t.Fatal(err)
	}
	for k, i := range idx {
		if dst[k] != model[i] {
			t.Fatalf("step %d: Gather[%d] (index %d) = %v, want %v", step, k, i, dst[k], model[i])
		}
	}
}
