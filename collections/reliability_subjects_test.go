package collections

// The subjects of the reliability sweeps in reliability_test.go: each
// container with its Go model and script of mutating steps.

import (
	"errors"
	"fmt"
	"github.com/govram/govram/internal/vmemtest"
	"maps"
	"slices"
	"strings"

	"github.com/govram/govram/vmem"
)

// relSlice: a Slice of 24-byte records (three to a line on a GPU, so
// ragged groups are covered) grown from empty by Append, Grow and Resize,
// written through CopyFrom, a Writer, Set and Fill, and sorted.
func relSlice(private bool) func(d *vmem.Device) (*relSubject, error) {
	type rec struct{ A, B, C uint64 }
	return func(d *vmem.Device) (*relSubject, error) {
		opts := []vmem.SliceOption{vmemtest.WithSegmentBytes(4096)}
		if private {
			opts = append(opts, vmem.InTier(vmem.Private))
		}
		s, err := vmem.NewSlice[rec](d, 3, opts...)
		if err != nil {
			return nil, err
		}
		keys, err := vmem.NewSlice[uint32](d, 0, opts...)
		if err != nil {
			s.Close()
			return nil, err
		}
		model := make([]rec, 3)
		var kmodel []uint32
		r := func(i int) rec { return rec{uint64(i), uint64(i) * 3, ^uint64(i)} }
		var steps []relStep
		add := func(name string, do func() error, model func()) {
			steps = append(steps, relStep{name: name, do: do, model: model})
		}
		for i := range 12 {
			add(fmt.Sprintf("Append(%d)", i), func() error { return s.Append(r(i)) }, func() { model = append(model, r(i)) })
		}
		batch := make([]rec, 300)
		for i := range batch {
			batch[i] = r(1000 + i)
		}
		add("Append(300)", func() error { return s.Append(batch...) }, func() { model = append(model, batch...) })
		add("Resize(900)", func() error { return s.Resize(900) }, func() { model = append(model, make([]rec, 900-len(model))...) })
		add("CopyFrom", func() error { return s.CopyFrom(batch[:250], 401) }, func() { copy(model[401:], batch[:250]) })
		add("SetBatch", func() error {
			var idx []int
			var vals []rec
			for i := 0; i < min(900, s.Len()); i += 7 {
				idx, vals = append(idx, i), append(vals, r(-i))
			}
			return s.SetBatch(idx, vals)
		}, func() {
			for i := 0; i < 900; i += 7 {
				model[i] = r(-i)
			}
		})
		add("Resize(100)", func() error { return s.Resize(100) }, func() { model = model[:100] })
		add("Resize(700)", func() error { return s.Resize(700) }, func() { model = append(model, make([]rec, 600)...) })
		steps = append(steps, relStep{name: "Set", noErr: true, do: func() error {
			if s.Len() > 5 {
				s.Set(5, r(55))
			}
			return s.Err()
		}, model: func() { model[5] = r(55) }})
		add("Fill", func() error { return s.Fill(r(7)) }, func() {
			for i := range model {
				model[i] = r(7)
			}
		})
		kb := make([]uint32, 2000)
		for i := range kb {
			kb[i] = uint32(i*7919) % 1009
		}
		add("keys.Append", func() error { return keys.Append(kb...) }, func() { kmodel = append(kmodel, kb...) })
		add("Sort", func() error { return vmem.Sort(keys) }, func() { slices.Sort(kmodel) })
		add("SortBy", func() error {
			return vmem.SortBy(s, func(v *rec) *uint64 { return &v.B })
		}, func() {})
		return &relSubject{
			steps: steps,
			check: func() error {
				if err := relSliceEq(s, model); err != nil {
					return err
				}
				return relSliceEq(keys, kmodel)
			},
			close: func() error { return errors.Join(s.Close(), keys.Close()) },
		}, nil
	}
}

func relSliceEq[T comparable](s *vmem.Slice[T], model []T) error {
	if s.Len() != len(model) {
		return fmt.Errorf("Len %d, model %d", s.Len(), len(model))
	}
	got := make([]T, len(model))
	if err := s.CopyTo(got, 0); err != nil {
		return fmt.Errorf("CopyTo: %w", err)
	}
	for i := range got {
		if got[i] != model[i] {
			return fmt.Errorf("element %d is %v, model %v", i, got[i], model[i])
		}
	}
	return nil
}

// relMapScript is the Map script: Puts that grow the table several times,
// overwrites, a PutMany that grows it again, Deletes, Clear and refill.
func relMapScript[K comparable, V comparable](m *Map[K, V], key func(int) K, val func(int) V) *relSubject {
	model := map[K]V{}
	var steps []relStep
	put := func(i, v int) {
		steps = append(steps, relStep{name: fmt.Sprintf("Put(%d)", i),
			do:    func() error { return m.Put(key(i), val(v)) },
			model: func() { model[key(i)] = val(v) }})
	}
	for i := range 40 {
		put(i, i)
	}
	for i := 0; i < 40; i += 5 {
		put(i, i+100)
	}
	ks := make([]K, 120)
	vs := make([]V, 120)
	for i := range ks {
		ks[i], vs[i] = key(20+i), val(1000+i)
	}
	steps = append(steps, relStep{name: "PutMany(120)",
		do: func() error { return m.putMany(ks, vs) },
		model: func() {
			for i := range ks {
				model[key(20+i)] = vs[i]
			}
		},
		// PutBatch's documented effect on vmem.ErrOutOfMemory: the keys before
		// the one that failed are stored, the rest are unchanged.
		partial: func() error {
			for j := 0; j <= len(ks); j++ {
				try := maps.Clone(model)
				for i := range j {
					try[ks[i]] = vs[i]
				}
				if relMapEq(m, try) == nil {
					model = try
					return nil
				}
			}
			return fmt.Errorf("not a prefix of the batch applied: %w", relMapEq(m, model))
		}})
	for i := 0; i < 140; i += 3 {
		steps = append(steps, relStep{name: fmt.Sprintf("Delete(%d)", i),
			do: func() error {
				_, _, err := m.Delete(key(i))
				return err
			},
			model: func() { delete(model, key(i)) }})
	}
	steps = append(steps, relStep{name: "Clear", do: m.Clear, model: func() { clear(model) }})
	for i := range 20 {
		put(500+i, i)
	}
	return &relSubject{
		steps: steps,
		check: func() error { return relMapEq(m, model) },
		close: m.Close,
	}
}

func relMapEq[K comparable, V comparable](m *Map[K, V], model map[K]V) error {
	if m.Len() != len(model) {
		return fmt.Errorf("Len %d, model %d", m.Len(), len(model))
	}
	for k, v := range model {
		if got, ok := m.Get(k); !ok || got != v {
			return fmt.Errorf("Get(%v) = %v, %v; model %v", k, got, ok, v)
		}
	}
	n := 0
	for k, v := range m.All() {
		if mv, ok := model[k]; !ok || mv != v {
			return fmt.Errorf("All yields %v: %v, model %v, %v", k, v, mv, ok)
		}
		n++
	}
	if n != len(model) {
		return fmt.Errorf("All yields %d entries, model %d (Err %v)", n, len(model), m.Err())
	}
	return nil
}

func relMapU64(d *vmem.Device) (*relSubject, error) {
	m, err := NewMap[uint64, [3]uint64](d, mapWithSegmentBuckets(16))
	if err != nil {
		return nil, err
	}
	return relMapScript(m, func(i int) uint64 { return uint64(i) * 0x9e3779b9 },
		func(i int) [3]uint64 { return [3]uint64{uint64(i), 1, 2} }), nil
}

func relMapStr(d *vmem.Device) (*relSubject, error) {
	m, err := NewMap[string, string](d)
	if err != nil {
		return nil, err
	}
	return relMapScript(m, func(i int) string { return fmt.Sprintf("key-%d-%s", i, strings.Repeat("k", i%50)) },
		func(i int) string { return strings.Repeat(fmt.Sprint(i), i%40) }), nil
}

// relBTreeScript: inserts in an order that splits leaves and extents,
// replaces, a BulkLoad at the right edge, deletes that merge leaves,
// DeleteMin/Max, Clear and refill.
func relBTreeScript[V comparable](t *BTree[uint64, V], val func(int) V) *relSubject {
	model := map[uint64]V{}
	var steps []relStep
	ins := func(k uint64, v int) {
		steps = append(steps, relStep{name: fmt.Sprintf("ReplaceOrInsert(%d)", k),
			do: func() error {
				_, _, err := t.ReplaceOrInsert(k, val(v))
				return err
			},
			model: func() { model[k] = val(v) }})
	}
	for i := range 150 {
		ins(uint64(i*37%151), i)
	}
	for i := 0; i < 150; i += 10 {
		ins(uint64(i), i+1000)
	}
	bk := make([]uint64, 200)
	bv := make([]V, 200)
	for i := range bk {
		bk[i], bv[i] = uint64(1000+i), val(i)
	}
	steps = append(steps, relStep{name: "BulkLoad(200)",
		do: func() error { return t.BulkLoad(bk, bv) },
		model: func() {
			for i := range bk {
				model[bk[i]] = bv[i]
			}
		}})
	for i := 0; i < 150; i += 2 {
		steps = append(steps, relStep{name: fmt.Sprintf("Delete(%d)", i),
			do: func() error {
				_, _, err := t.Delete(uint64(i))
				return err
			},
			model: func() { delete(model, uint64(i)) }})
	}
	for _, right := range []bool{false, true, false} {
		steps = append(steps, relStep{name: fmt.Sprintf("DeleteEdge(%v)", right),
			do: func() error {
				var err error
				if right {
					_, _, _, err = t.DeleteMax()
				} else {
					_, _, _, err = t.DeleteMin()
				}
				return err
			},
			model: func() {
				ks := slices.Sorted(maps.Keys(model))
				if right {
					delete(model, ks[len(ks)-1])
				} else {
					delete(model, ks[0])
				}
			}})
	}
	steps = append(steps, relStep{name: "Clear", do: t.Clear, model: func() { clear(model) }})
	for i := range 40 {
		ins(uint64(5000-i), i)
	}
	return &relSubject{
		steps: steps,
		check: func() error { return relBTreeEq(t, model) },
		close: t.Close,
	}
}

func relBTreeEq[V comparable](t *BTree[uint64, V], model map[uint64]V) error {
	if t.Len() != len(model) {
		return fmt.Errorf("Len %d, model %d", t.Len(), len(model))
	}
	want := slices.Sorted(maps.Keys(model))
	i := 0
	var bad error
	for k, v := range t.All() {
		if i >= len(want) || k != want[i] || v != model[k] {
			bad = fmt.Errorf("All entry %d is %d: %v, model %v", i, k, v, model[k])
			break
		}
		i++
	}
	if bad != nil {
		return bad
	}
	if i != len(want) {
		return fmt.Errorf("All yields %d entries, model %d (Err %v)", i, len(want), t.Err())
	}
	for _, k := range want[:min(len(want), 20)] {
		if v, ok := t.Get(k); !ok || v != model[k] {
			return fmt.Errorf("Get(%d) = %v, %v; model %v", k, v, ok, model[k])
		}
	}
	return nil
}

func relBTree(tier vmem.Tier) func(d *vmem.Device) (*relSubject, error) {
	return func(d *vmem.Device) (*relSubject, error) {
		t, err := NewBTreeOrdered[uint64, uint64](d, btWithLeafEntries(4), btWithExtentLeaves(2), WithBTreeTier(tier))
		if err != nil {
			return nil, err
		}
		return relBTreeScript(t, func(i int) uint64 { return uint64(i) * 11 }), nil
	}
}

func relBTreeStr(d *vmem.Device) (*relSubject, error) {
	t, err := NewBTreeOrdered[uint64, string](d, btWithLeafEntries(4), btWithExtentLeaves(2))
	if err != nil {
		return nil, err
	}
	return relBTreeScript(t, func(i int) string { return strings.Repeat("v", i%70) }), nil
}

// relRing: pushes and pops around the ring several times, single and in
// batches, with a Reset in the middle; size is the element size in bytes.
func relRing(size int) func(d *vmem.Device) (*relSubject, error) {
	return func(d *vmem.Device) (*relSubject, error) {
		if size == 8 {
			r, err := NewRing[uint64](d, 50)
			if err != nil {
				return nil, err
			}
			return relRingScript(r, func(i int) uint64 { return uint64(i) }), nil
		}
		type big [25]uint32
		r, err := NewRing[big](d, 50)
		if err != nil {
			return nil, err
		}
		return relRingScript(r, func(i int) big { var b big; b[0], b[24] = uint32(i), ^uint32(i); return b }), nil
	}
}

func relRingScript[T comparable](r *Ring[T], val func(int) T) *relSubject {
	var model []T
	var steps []relStep
	next := 0
	push := func() {
		v := next
		next++
		steps = append(steps, relStep{name: fmt.Sprintf("Push(%d)", v),
			do: func() error { return r.Push(val(v)) }, model: func() { model = append(model, val(v)) }})
	}
	pushBatch := func(n int) {
		vs := make([]T, n)
		for i := range vs {
			vs[i] = val(next + i)
		}
		next += n
		steps = append(steps, relStep{name: fmt.Sprintf("PushBatch(%d)", n),
			do: func() error {
				k, err := r.PushBatch(vs)
				if err == nil && k != n {
					err = fmt.Errorf("PushBatch pushed %d of %d", k, n)
				}
				return err
			},
			model: func() { model = append(model, vs...) }})
	}
	pop := func() {
		var got T
		var ok bool
		steps = append(steps, relStep{name: "Pop", noErr: true,
			do: func() error {
				got, ok = r.Pop()
				if !ok {
					return errors.New("Pop found the ring empty")
				}
				return r.Err()
			},
			model: func() {
				if got != model[0] {
					panic(fmt.Sprintf("Pop = %v, model %v", got, model[0]))
				}
				model = model[1:]
			}})
	}
	popBatch := func(n int) {
		dst := make([]T, n)
		var k int
		steps = append(steps, relStep{name: fmt.Sprintf("PopBatch(%d)", n),
			do: func() error {
				var err error
				k, err = r.PopBatch(dst)
				return err
			},
			model: func() {
				if k != min(n, len(model)) || !slices.Equal(dst[:k], model[:k]) {
					panic(fmt.Sprintf("PopBatch got %d: %v, model %v", k, dst[:k], model[:min(n, len(model))]))
				}
				model = model[k:]
			}})
	}
	for range 3 {
		for range 10 {
			push()
		}
		pushBatch(30)
		pop()
		pop()
		popBatch(25)
		pushBatch(7)
		popBatch(40)
	}
	steps = append(steps, relStep{name: "Clear", do: r.Clear, model: func() { model = nil }})
	pushBatch(45)
	popBatch(20)
	return &relSubject{
		steps: steps,
		check: func() error {
			if r.Len() != len(model) {
				return fmt.Errorf("Len %d, model %d", r.Len(), len(model))
			}
			i := 0
			for _, v := range r.All() {
				if i >= len(model) || v != model[i] {
					return fmt.Errorf("All element %d differs", i)
				}
				i++
			}
			if i != len(model) {
				return fmt.Errorf("All yields %d, model %d (Err %v)", i, len(model), r.Err())
			}
			return nil
		},
		close: r.Close,
	}
}
