package collections

import (
	"errors"
	"iter"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// shBTModel is a sorted view of a Go map, the model of a ShardedBTree.
type shBTModel map[int64]uint64

func (m shBTModel) sorted() []int64 { return slices.Sorted(maps.Keys(m)) }

// shBTCollect returns the keys and values seq yields, breaking out of the
// loop before the first key for which until (if not nil) holds and after
// limit entries (-1: all), as a google/btree callback that returns false
// would stop.
func shBTCollect(limit int, seq iter.Seq2[int64, uint64], until func(int64) bool) (ks []int64, vs []uint64) {
	for k, v := range seq {
		if until != nil && until(k) {
			break
		}
		if limit >= 0 && len(ks) == limit {
			break
		}
		ks = append(ks, k)
		vs = append(vs, v)
	}
	return ks, vs
}

// shBTDiff runs random operations on a ShardedBTree and on a model.
func shBTDiff(t *testing.T, s *BTree[int64, uint64], steps int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 11))
	model := shBTModel{}
	for k, v := range s.All() {
		model[k] = v
	}
	key := func() int64 { return shBTKey(r) }
	for step := range steps {
		switch op := r.IntN(12); op {
		case 0, 1, 2:
			k, v := key(), r.Uint64()
			old, rep, err := s.ReplaceOrInsert(k, v)
			if err != nil {
				t.Fatal(err)
			}
			mo, had := model[k]
			if rep != had || old != mo {
				t.Fatalf("step %d: ReplaceOrInsert(%d) = %d %v, want %d %v", step, k, old, rep, mo, had)
			}
			model[k] = v
		case 3:
			k := key()
			v, ok := s.Get(k)
			mv, had := model[k]
			if ok != had || v != mv || s.Has(k) != had {
				t.Fatalf("step %d: Get(%d) = %d %v, want %d %v", step, k, v, ok, mv, had)
			}
		case 4:
			k := key()
			old, del, err := s.Delete(k)
			mv, had := model[k]
			if err != nil || del != had || old != mv {
				t.Fatalf("step %d: Delete(%d) = %d %v %v", step, k, old, del, err)
			}
			delete(model, k)
		case 5:
			if len(model) == 0 {
				continue
			}
			shBTDeleteEnd(t, s, r, model, step)
		case 6: // ranged scans, with early stops
			shBTScans(t, s, r, model, step)
		case 7: // GetBatch
			shBTGetBatch(t, s, r, model, step)
		case 8: // BulkLoad above the maximum
			shBTBulkLoad(t, s, r, model, step)
		case 9: // Min and Max
			if shBTMinMax(t, s, model, step) {
				continue
			}
		case 10:
			if r.IntN(30) == 0 {
				if err := s.Clear(); err != nil {
					t.Fatal(err)
				}
				clear(model)
			}
		case 11:
			if s.Len() != len(model) {
				t.Fatalf("step %d: Len %d, model %d", step, s.Len(), len(model))
			}
		}
		if step%100 == 99 || step == steps-1 {
			shBTCheckAll(t, s, model, step)
		}
	}
}

// shBTKey draws a random key.
func shBTKey(r *rand.Rand) int64 { return int64(r.IntN(20000)) - 5000 }

// shBTWant returns the model's entries with lo <= k < hi (asc) or lo < k <= hi (desc).
func shBTWant(model shBTModel, lo, hi int64, desc bool, limit int) []int64 {
	var out []int64
	ks := model.sorted()
	if desc {
		slices.Reverse(ks)
	}
	for _, k := range ks {
		in := lo <= k && k < hi
		if desc {
			in = lo < k && k <= hi
		}
		if in && (limit < 0 || len(out) < limit) {
			out = append(out, k)
		}
	}
	return out
}

// shBTDeleteEnd deletes the minimum or the maximum of a non-empty tree and
// checks it against the model.
func shBTDeleteEnd(t *testing.T, s *BTree[int64, uint64], r *rand.Rand, model shBTModel, step int) {
	ks := model.sorted()
	var k int64
	if r.IntN(2) == 0 {
		dk, v, ok, err := s.DeleteMax()
		if err != nil || !ok || dk != ks[len(ks)-1] || v != model[dk] {
			t.Fatalf("step %d: DeleteMax = %d %d %v %v", step, dk, v, ok, err)
		}
		k = dk
	} else {
		dk, v, ok, err := s.DeleteMin()
		if err != nil || !ok || dk != ks[0] || v != model[dk] {
			t.Fatalf("step %d: DeleteMin = %d %d %v %v", step, dk, v, ok, err)
		}
		k = dk
	}
	delete(model, k)
}

// shBTScans runs the scans, ranged and with early stops, against the
// model: each sequence, and each of google/btree's callbacks in its
// govram form (a break where the callback returned false).
func shBTScans(t *testing.T, s *BTree[int64, uint64], r *rand.Rand, model shBTModel, step int) {
	const minK, maxK = int64(-1 << 62), int64(1 << 62)
	want := func(lo, hi int64, desc bool, limit int) []int64 { return shBTWant(model, lo, hi, desc, limit) }
	a, b := shBTKey(r), shBTKey(r)
	if a > b {
		a, b = b, a
	}
	limit := -1
	if r.IntN(2) == 0 {
		limit = r.IntN(30)
	}
	check := func(name string, got []int64, w []int64) {
		if !slices.Equal(got, w) {
			t.Fatalf("step %d: %s(%d, %d, limit %d): %d entries, want %d", step, name, a, b, limit, len(got), len(w))
		}
	}
	atOrAbove := func(p int64) func(int64) bool { return func(k int64) bool { return k >= p } }
	atOrBelow := func(p int64) func(int64) bool { return func(k int64) bool { return k <= p } }
	g, _ := shBTCollect(limit, s.Range(a, b), nil) // AscendRange(a, b)
	check("Range", g, want(a, b, false, limit))
	g, _ = shBTCollect(limit, s.Ascend(a), nil) // AscendGreaterOrEqual(a)
	check("Ascend", g, want(a, maxK, false, limit))
	g, _ = shBTCollect(limit, s.All(), atOrAbove(b)) // AscendLessThan(b)
	check("All until b", g, want(minK, b, false, limit))
	g, _ = shBTCollect(limit, s.Descend(b), atOrBelow(a)) // DescendRange(b, a)
	check("Descend until a", g, want(a, b, true, limit))
	g, _ = shBTCollect(limit, s.Descend(b), nil) // DescendLessOrEqual(b)
	check("Descend", g, want(minK, b, true, limit))
	g, _ = shBTCollect(limit, s.Backward(), atOrBelow(a)) // DescendGreaterThan(a)
	check("Backward until a", g, want(a, maxK, true, limit))
	g, _ = shBTCollect(limit, s.All(), nil)
	check("All", g, want(minK, maxK, false, limit))
	g, _ = shBTCollect(limit, s.Backward(), nil)
	check("Backward", g, want(minK, maxK, true, limit))
	var rg []int64
	for k, v := range s.Range(a, b) {
		if v != model[k] {
			t.Fatalf("step %d: Range gave %d=%d, want %d", step, k, v, model[k])
		}
		rg = append(rg, k)
	}
	check("Range", rg, want(a, b, false, -1))
	for name, seq := range map[string]iter.Seq2[int64, uint64]{"Ascend": s.Ascend(a), "Descend": s.Descend(b)} {
		for k, v := range seq {
			if v != model[k] {
				t.Fatalf("step %d: %s gave %d=%d, want %d", step, name, k, v, model[k])
			}
		}
	}
}

// shBTGetBatch looks up a random batch of keys and checks it against the model.
func shBTGetBatch(t *testing.T, s *BTree[int64, uint64], r *rand.Rand, model shBTModel, step int) {
	ks := make([]int64, r.IntN(300))
	for i := range ks {
		ks[i] = shBTKey(r)
	}
	vs := make([]uint64, len(ks))
	found := make([]bool, len(ks))
	if err := s.GetBatch(ks, vs, found); err != nil {
		t.Fatal(err)
	}
	for i, k := range ks {
		mv, had := model[k]
		if found[i] != had || vs[i] != mv {
			t.Fatalf("step %d: GetBatch key %d = %d %v, want %d %v", step, k, vs[i], found[i], mv, had)
		}
	}
}

// shBTBulkLoad bulk-loads random keys above the maximum, and checks that an
// unsorted load is refused.
func shBTBulkLoad(t *testing.T, s *BTree[int64, uint64], r *rand.Rand, model shBTModel, step int) {
	hi := int64(-1 << 40)
	if mk, _, ok := s.Max(); ok {
		hi = mk
	}
	n := r.IntN(200)
	ks := make([]int64, n)
	vs := make([]uint64, n)
	for i := range ks {
		hi += 1 + int64(r.IntN(3))
		ks[i], vs[i] = hi, r.Uint64()
	}
	if err := s.BulkLoad(ks, vs); err != nil {
		t.Fatal(err)
	}
	for i, k := range ks {
		model[k] = vs[i]
	}
	if n > 2 {
		// Out of order: refused, nothing changes.
		if err := s.BulkLoad([]int64{hi + 5, hi + 4}, []uint64{1, 2}); !errors.Is(err, ErrUnsorted) {
			t.Fatalf("step %d: unsorted BulkLoad: %v", step, err)
		}
	}
}

// shBTMinMax checks Min and Max against the model; it reports whether the
// model is empty.
func shBTMinMax(t *testing.T, s *BTree[int64, uint64], model shBTModel, step int) (empty bool) {
	mk, mv, ok := s.Min()
	xk, xv, xok := s.Max()
	if len(model) == 0 {
		if ok || xok {
			t.Fatalf("step %d: Min/Max of an empty tree", step)
		}
		return true
	}
	ks := model.sorted()
	if !ok || mk != ks[0] || mv != model[mk] || !xok || xk != ks[len(ks)-1] || xv != model[xk] {
		t.Fatalf("step %d: Min %d Max %d, want %d %d", step, mk, xk, ks[0], ks[len(ks)-1])
	}
	return false
}

// shBTCheckAll checks All, Backward, Stats and Err against the model.
func shBTCheckAll(t *testing.T, s *BTree[int64, uint64], model shBTModel, step int) {
	var ks []int64
	for k, v := range s.All() {
		if v != model[k] {
			t.Fatalf("step %d: All gave %d=%d, want %d", step, k, v, model[k])
		}
		ks = append(ks, k)
	}
	if !slices.Equal(ks, model.sorted()) {
		t.Fatalf("step %d: All gave %d keys, model %d", step, len(ks), len(model))
	}
	var bk []int64
	for k := range s.Backward() {
		bk = append(bk, k)
	}
	slices.Reverse(bk)
	if !slices.Equal(bk, ks) {
		t.Fatalf("step %d: Backward differs from All", step)
	}
	if st := s.Stats(); st.Len != len(model) {
		t.Fatalf("step %d: Stats.Len %d", step, st.Len)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestShardedBTreeModel(t *testing.T) {
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		steps := shSteps(p)
		t.Run("bulk-splits", func(t *testing.T) {
			s, err := NewBTreeOrdered[int64, uint64](p, btWithLeafEntries(8))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Keys on shard 0 until a BulkLoad chooses the splits.
			for k := range int64(50) {
				s.ReplaceOrInsert(k-6000, uint64(k))
			}
			if ls := s.sh.shardLens(); ls[0] != 50 || len(s.sh.splitKeys()) != 0 {
				t.Fatalf("before any split: %v %v", ls, s.sh.splitKeys())
			}
			ks := make([]int64, 3000)
			vs := make([]uint64, len(ks))
			for i := range ks {
				ks[i], vs[i] = int64(i*5)-5000, uint64(i)
			}
			if err := s.BulkLoad(ks, vs); err != nil {
				t.Fatal(err)
			}
			if len(s.sh.splitKeys()) != len(s.sh.shards)-1 {
				t.Fatalf("BulkLoad chose %v", s.sh.splitKeys())
			}
			for d, l := range s.sh.shardLens() {
				if want := 3050 / len(s.sh.shards); l < want-2 || l > want+2 {
					t.Errorf("shard %d holds %d, want about %d: %v", d, l, want, s.sh.shardLens())
				}
			}
			shBTDiff(t, s, steps, 1)
		})
		t.Run("with-splits", func(t *testing.T) {
			sp := []int64{-2000, 3000}[:len(p.Devices())-1]
			s, err := NewBTree[int64, uint64](p, func(a, b int64) bool { return a < b }, WithSplits(sp...), btWithLeafEntries(5))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			shBTDiff(t, s, steps, 2)
			for k := range s.All() {
				if d := s.sh.shardOf(k); !(d == 0 || sp[d-1] <= k) || (d < len(sp) && k >= sp[d]) {
					t.Fatalf("key %d on shard %d, splits %v", k, d, sp)
				}
			}
		})
	})
}

// TestShardedBTreeFaults: a BulkLoad that runs out of memory on one device
// changes nothing, on any shard.
func TestShardedBTreeFaults(t *testing.T) {
	var o vmem.Options
	o.Limits[vmem.Private] = 64 // no retry in the private tier on Vulkan
	shEachPool(t, o, func(t *testing.T, p *vmem.Pool) {
		s, err := NewBTreeOrdered[int64, uint64](p, btWithExtentLeaves(2), btWithLeafEntries(4))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ks := make([]int64, 600)
		vs := make([]uint64, len(ks))
		for i := range ks {
			ks[i], vs[i] = int64(i), uint64(i)*3
		}
		kdev(p.Devices()[len(p.Devices())-1]).InjectFaults(kern.Faults{FailAlloc: 1})
		if err := s.BulkLoad(ks, vs); !errors.Is(err, vmem.ErrOutOfMemory) {
			t.Fatalf("BulkLoad with a failing device: %v, want vmem.ErrOutOfMemory", err)
		}
		if s.Len() != 0 || len(s.sh.splitKeys()) != 0 {
			t.Fatalf("failed BulkLoad left %d entries, splits %v", s.Len(), s.sh.splitKeys())
		}
		if err := s.BulkLoad(ks, vs); err != nil {
			t.Fatal(err)
		}
		// Now a failing load above the maximum leaves the loaded tree as it was.
		kdev(p.Devices()[len(p.Devices())-1]).InjectFaults(kern.Faults{FailAlloc: 1})
		more := make([]int64, 600)
		for i := range more {
			more[i] = int64(1000 + i)
		}
		if err := s.BulkLoad(more, vs); !errors.Is(err, vmem.ErrOutOfMemory) {
			t.Fatalf("second BulkLoad: %v, want vmem.ErrOutOfMemory", err)
		}
		got := slices.Collect(func(yield func(int64) bool) {
			for k := range s.All() {
				if !yield(k) {
					return
				}
			}
		})
		if !slices.Equal(got, ks) {
			t.Fatalf("failed BulkLoad changed the tree: %d keys", len(got))
		}
	})
}

func TestShardedBTreeClose(t *testing.T) {
	p := shOpenPool(t, shPoolKinds()[0], vmem.Options{})
	if _, err := NewBTree[int, int](p, nil); err == nil {
		t.Error("nil less accepted")
	}
	if _, err := NewBTreeOrdered[int, int](p, WithSplits(3, 2)); !errors.Is(err, ErrUnsorted) {
		t.Errorf("descending splits: %v", err)
	}
	if _, err := NewBTreeOrdered[int, int](p, WithSplits(1, 2, 3)); err == nil {
		t.Error("3 splits for 3 shards accepted")
	}
	if _, err := NewBTreeOrdered[int, int](p, WithSplits[int64](1)); err == nil {
		t.Error("splits of the wrong type accepted")
	}
	s, err := NewBTreeOrdered[int, int](p, WithSplits(10))
	if err != nil {
		t.Fatal(err)
	}
	s.ReplaceOrInsert(1, 1)
	s.ReplaceOrInsert(20, 2)
	if ls := s.sh.shardLens(); !slices.Equal(ls, []int{1, 1, 0}) {
		t.Errorf("ShardLens %v", ls)
	}
	s.Close()
	s.Close()
	if _, _, err := s.ReplaceOrInsert(1, 1); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("ReplaceOrInsert after Close: %v", err)
	}
	if err := s.BulkLoad([]int{1}, []int{1}); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("BulkLoad after Close: %v", err)
	}
	if _, panicked := vmemtest.Panics(func() { s.Get(1) }); !panicked {
		t.Error("Get after Close did not panic")
	}
	if s.Len() != 0 {
		t.Error("Len after Close")
	}
}
