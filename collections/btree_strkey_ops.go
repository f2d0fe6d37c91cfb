package collections

// The methods of a string-keyed tree (btree_strkey.go): each makes the
// key's record, calls the inner tree, and turns the records it returns
// back into strings. The public methods of BTree call these when t.sk is
// set.

import (
	"fmt"

	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/vmem"
)

func (s *btSK[K, V]) get(key K) (V, bool) {
	r, slot := s.probe(btKStr(key))
	defer s.pr.put(slot)
	return s.in.Get(r)
}

func (s *btSK[K, V]) has(key K) bool {
	r, slot := s.probe(btKStr(key))
	defer s.pr.put(slot)
	return s.in.Has(r)
}

func (s *btSK[K, V]) replaceOrInsert(key K, value V) (old V, replaced bool, err error) {
	if err := s.in.btUsable(); err != nil {
		return old, false, err
	}
	k := btKStr(key)
	r, err := s.store(k)
	if err != nil {
		return old, false, err
	}
	if btSKStored(r) {
		s.wH, s.wS = r.h, k
	}
	old, replaced, err = s.in.ReplaceOrInsert(r, value)
	s.wH, s.wS = 0, ""
	if err != nil || replaced {
		// Unchanged, or the tree kept the stored key: the copy is unused.
		s.free(r)
	}
	return old, replaced, err
}

func (s *btSK[K, V]) delete(key K) (old V, deleted bool, err error) {
	in := s.in
	if err := in.btUsable(); err != nil {
		return old, false, err
	}
	if in.idx.height == 0 {
		return old, false, nil
	}
	r := s.wprobe(btKStr(key))
	defer func() { s.wS = "" }()
	var p btPath
	in.idx.descend(r, &p)
	var k btSKey
	k, old, deleted, err = in.deleteAt(&p, r, true, 0)
	in.done(err)
	if deleted {
		s.drop(k)
	}
	return old, deleted, err
}

func (s *btSK[K, V]) deleteEdge(right bool) (key K, value V, ok bool, err error) {
	var r btSKey
	if right {
		r, value, ok, err = s.in.DeleteMax()
	} else {
		r, value, ok, err = s.in.DeleteMin()
	}
	if ok {
		key = s.key(r)
		s.drop(r)
	}
	return key, value, ok, err
}

func (s *btSK[K, V]) minMax(right bool) (key K, value V, ok bool) {
	var r btSKey
	if right {
		r, value, ok = s.in.Max()
	} else {
		r, value, ok = s.in.Min()
	}
	if ok {
		key = s.key(r)
	}
	return key, value, ok
}

func (s *btSK[K, V]) edge(right bool) (key K, value V, ok bool) {
	r, value, ok := s.in.edge(right)
	if ok {
		key = s.key(r)
	}
	return key, value, ok
}

func (s *btSK[K, V]) getBatch(keys []K, vals []V, found []bool) error {
	in := s.in
	if in.closed {
		return vmem.ErrClosed
	}
	if len(vals) < len(keys) || (found != nil && len(found) < len(keys)) {
		return fmt.Errorf("collections: BTree.GetBatch: %d keys, %d values, %d found flags: %w", len(keys), len(vals), len(found), vmem.ErrRange)
	}
	if len(keys) == 0 {
		return nil
	}
	in.sync()
	if in.idx.height == 0 {
		clear(vals[:len(keys)])
		if found != nil {
			clear(found[:len(keys)])
		}
		return nil
	}
	before := in.Err()
	par.Ranges(len(keys), 1<<12, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			r, slot := s.probe(btKStr(keys[i]))
			v, ok := in.get(r, true)
			s.pr.put(slot)
			vals[i] = v
			if found != nil {
				found[i] = ok
			}
		}
	})
	if err := in.Err(); err != nil && before == nil {
		return err
	}
	return nil
}

func (s *btSK[K, V]) bulkLoad(keys []K, vals []V) error {
	if err := s.in.btUsable(); err != nil {
		return err
	}
	if len(keys) != len(vals) {
		return fmt.Errorf("collections: BTree.BulkLoad: %d keys but %d values: %w", len(keys), len(vals), vmem.ErrRange)
	}
	if len(keys) == 0 {
		return nil
	}
	// Keys go to the arena first, all or none.
	recs := make([]btSKey, len(keys))
	for i, k := range keys {
		r, err := s.store(btKStr(k))
		if err != nil {
			for _, r := range recs[:i] {
				s.free(r)
			}
			return err
		}
		recs[i] = r
	}
	err := s.in.BulkLoad(recs, vals)
	if err != nil {
		for _, r := range recs {
			s.free(r)
		}
	}
	return err
}

func (s *btSK[K, V]) clear() error {
	if err := s.in.Clear(); err != nil {
		return err
	}
	s.arena.Reset()
	clear(s.orphans)
	s.orphans = s.orphans[:0]
	s.sweepAt = btSKSweepMin
	return nil
}

// bounds makes the search records of the scan bounds lo and hi (nil:
// open); release gives their slots back.
func (s *btSK[K, V]) bounds(lo, hi *K) (rl, rh *btSKey, release func()) {
	sl, sh := btSKNoSlot, btSKNoSlot
	if lo != nil {
		r, slot := s.probe(btKStr(*lo))
		rl, sl = &r, slot
	}
	if hi != nil {
		r, slot := s.probe(btKStr(*hi))
		rh, sh = &r, slot
	}
	return rl, rh, func() { s.pr.put(sl); s.pr.put(sh) }
}

// descendPush is BTree.descendPush (Backward, Descend).
func (s *btSK[K, V]) descendPush(op string, lo, hi *K, yield func(K, V) bool) {
	rl, rh, release := s.bounds(lo, hi)
	defer release()
	s.in.descendOne(op, rl, rh, func(k btSKey, v V) bool { return yield(s.key(k), v) })
}

// ascendPush is BTree.ascendPush (All, Range, Ascend).
func (s *btSK[K, V]) ascendPush(op string, lo, hi *K, yield func(K, V) bool) {
	rl, rh, release := s.bounds(lo, hi)
	defer release()
	s.in.ascendPush(op, rl, rh, func(k btSKey, v V) bool { return yield(s.key(k), v) })
}
