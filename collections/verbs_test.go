package collections

import (
	"bytes"
	"errors"
	"io"
	"iter"
	"maps"
	"math/rand/v2"
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
		checkOrdered(t, keysOf(bt.All()), valuesOf(bt.All()))

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
		for i := 1; i < len(p.Devices()); i++ {
			splits = append(splits, keys[i*len(keys)/len(p.Devices())])
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
		checkOrdered(t, keysOf(sb.All()), valuesOf(sb.All()))
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

// kvVerbs is the vocabulary Map and BTree share: code written against it
// runs on either.
type kvVerbs[K comparable, V any] interface {
	Len() int
	Get(K) (V, bool)
	Has(K) bool
	Put(K, V) error
	Delete(K) (V, bool, error)
	GetBatch(keys []K, vals []V, found []bool) error
	All() iter.Seq2[K, V]
	Clear() error
	Save(io.Writer) error
	Close() error
	Err() error
}

var (
	_ kvVerbs[int, int] = (*Map[int, int])(nil)
	_ kvVerbs[int, int] = (*BTree[int, int])(nil)
)

// TestVerbsShared runs one workload through the shared verbs of Map and
// BTree, plain and sharded, against a Go map: the same call gives the same
// answer on every container and backend.
func TestVerbsShared(t *testing.T) {
	run := func(t *testing.T, c kvVerbs[int, int]) {
		defer c.Close()
		model := map[int]int{}
		rng := rand.New(rand.NewPCG(3, 9))
		for i := range 4000 {
			k := rng.IntN(600)
			switch op := rng.IntN(10); {
			case op < 5:
				if err := c.Put(k, i); err != nil {
					t.Fatalf("Put(%d): %v", k, err)
				}
				model[k] = i
			case op < 7:
				old, ok, err := c.Delete(k)
				want, in := model[k]
				if err != nil || ok != in || old != want {
					t.Fatalf("Delete(%d) = %d, %v, %v; want %d, %v, nil", k, old, ok, err, want, in)
				}
				delete(model, k)
			default:
				v, ok := c.Get(k)
				want, in := model[k]
				if ok != in || v != want || c.Has(k) != in {
					t.Fatalf("Get(%d) = %d, %v; want %d, %v", k, v, ok, want, in)
				}
			}
		}
		if c.Len() != len(model) {
			t.Fatalf("Len %d, want %d", c.Len(), len(model))
		}
		got := maps.Collect(c.All())
		if !maps.Equal(got, model) {
			t.Fatalf("All: %d entries, want %d", len(got), len(model))
		}
		if n := len(slices.Collect(keysOf(c.All()))); n != len(model) {
			t.Fatalf("Keys: %d, want %d", n, len(model))
		}
		if n := len(slices.Collect(valuesOf(c.All()))); n != len(model) {
			t.Fatalf("Values: %d, want %d", n, len(model))
		}
		keys := make([]int, 700)
		for i := range keys {
			keys[i] = i - 50
		}
		vals, found := make([]int, len(keys)), make([]bool, len(keys))
		if err := c.GetBatch(keys, vals, found); err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			want, in := model[k]
			if found[i] != in || vals[i] != want {
				t.Fatalf("GetBatch[%d] = %d, %v; want %d, %v", k, vals[i], found[i], want, in)
			}
		}
		var buf bytes.Buffer
		if err := c.Save(&buf); err != nil || buf.Len() == 0 {
			t.Fatalf("Save: %d bytes, %v", buf.Len(), err)
		}
		if err := c.Clear(); err != nil || c.Len() != 0 || c.Has(keys[60]) {
			t.Fatalf("Clear: %v, Len %d", err, c.Len())
		}
		if err := c.Err(); err != nil {
			t.Fatal(err)
		}
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[int, int](d, WithHostCache(4<<10))
		if err != nil {
			t.Fatal(err)
		}
		t.Run("Map", func(t *testing.T) { run(t, m) })
		bt, err := NewBTreeOrdered[int, int](d, WithHostCache(4<<10))
		if err != nil {
			t.Fatal(err)
		}
		t.Run("BTree", func(t *testing.T) { run(t, bt) })
	})
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		m, err := NewMap[int, int](p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run("Map", func(t *testing.T) { run(t, m) })
		bt, err := NewBTreeOrdered[int, int](p, WithSplits(300))
		if err != nil {
			t.Fatal(err)
		}
		t.Run("BTree", func(t *testing.T) { run(t, bt) })
	})
}
