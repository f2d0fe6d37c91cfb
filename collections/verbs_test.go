package collections

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestVerbs: the verbs added so that every container has them (Has,
// Keys/Values, Ring.Clear, BulkLoad's length
// error) behave as on the containers that had them, on every backend.
func TestVerbs(t *testing.T) {
	want := map[int]int{}
	for i := range 500 {
		want[i*7] = i
	}
	keys := slices.Sorted(maps.Keys(want))
	vals := make([]int, len(keys))
	for i, k := range keys {
		vals[i] = want[k]
	}
	checkHas := func(t *testing.T, has func(int) bool) {
		t.Helper()
		verbsCheckHas(t, want, has)
	}
	checkOrdered := func(t *testing.T, ks func(func(int) bool), vs func(func(int) bool)) {
		t.Helper()
		verbsCheckOrdered(t, keys, vals, ks, vs)
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[int, int](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if err := m.putMany(keys, vals); err != nil {
			t.Fatal(err)
		}
		checkHas(t, m.Has)
		m.Delete(7)
		if m.Has(7) {
			t.Fatal("Has after Delete")
		}

		bt, err := NewBTreeOrdered[int, int](d)
		if err != nil {
			t.Fatal(err)
		}
		defer bt.Close()
		if err := bt.BulkLoad(keys, vals[:10]); !errors.Is(err, vmem.ErrRange) {
			t.Fatalf("BulkLoad of %d keys and 10 values: %v, want vmem.ErrRange", len(keys), err)
		}
		if bt.Len() != 0 {
			t.Fatal("a failed BulkLoad changed the tree")
		}
		if err := bt.BulkLoad(keys, vals); err != nil {
			t.Fatal(err)
		}
		checkOrdered(t, bt.Keys(), bt.Values())

		r, err := NewRing[int](d, 100)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := r.PushBatch(vals[:50]); err != nil {
			t.Fatal(err)
		}
		r.Clear()
		if r.Len() != 0 {
			t.Fatalf("Len after Clear: %d", r.Len())
		}
		if v, ok := r.Pop(); ok {
			t.Fatalf("Pop after Clear: %d", v)
		}
		if err := r.Push(42); err != nil {
			t.Fatal(err)
		}
		if v, ok := r.Pop(); !ok || v != 42 {
			t.Fatalf("Pop after Clear and Push: %d, %v", v, ok)
		}
		r.Clear()
		if r.Len() != 0 {
			t.Fatalf("Len after a second Clear: %d", r.Len())
		}
	})
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		sm, err := NewMap[int, int](p)
		if err != nil {
			t.Fatal(err)
		}
		defer sm.Close()
		if err := sm.putMany(keys, vals); err != nil {
			t.Fatal(err)
		}
		checkHas(t, sm.Has)

		var splits []int
		for i := 1; i < p.Len(); i++ {
			splits = append(splits, keys[i*len(keys)/p.Len()])
		}
		sb, err := NewBTreeOrdered[int, int](p, WithSplits(splits...))
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		if err := sb.BulkLoad(keys, vals); err != nil {
			t.Fatal(err)
		}
		if lens := sb.sh.shardLens(); slices.Contains(lens, 0) {
			t.Fatalf("a shard is empty: %v", lens)
		}
		checkOrdered(t, sb.Keys(), sb.Values())
	})
}

// verbsCheckHas checks has against the keys of want, and around them.
func verbsCheckHas(t *testing.T, want map[int]int, has func(int) bool) {
	t.Helper()
	for k := -1; k < 3600; k++ {
		_, in := want[k]
		if has(k) != in {
			t.Fatalf("Has(%d) = %v, want %v", k, !in, in)
		}
	}
}

// verbsCheckOrdered checks that ks and vs give keys and vals in order, and
// that ks stops when asked.
func verbsCheckOrdered(t *testing.T, keys, vals []int, ks func(func(int) bool), vs func(func(int) bool)) {
	t.Helper()
	if got := slices.Collect(ks); !slices.Equal(got, keys) {
		t.Fatalf("Keys: %d keys, want %d in ascending order", len(got), len(keys))
	}
	if got := slices.Collect(vs); !slices.Equal(got, vals) {
		t.Fatalf("Values: %d values, want %d in key order", len(got), len(vals))
	}
	n := 0
	for range ks {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatal("Keys did not stop when asked")
	}
}
