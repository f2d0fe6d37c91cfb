package collections

import (
	"fmt"
	"iter"
	"slices"
	"sync"
)

// Forms only the tests use: the batch read by line loads that panics
// where GetBatch returns an error, and the shards' lengths and splits.

// getMany looks up every key: vals[i] gets the value of keys[i] (the zero
// value if absent) and, when found is not nil, found[i] whether it is
// there. It returns the number found. vals and found must be at least as
// long as keys: getMany panics if they are shorter (it has no error
// result; GetBatch returns an error matching vmem.ErrRange). It panics if the
// map is closed or a write is in progress.
//
// It picks its path as GetBatch does: on a GPU, a batch large enough to
// pay for a round (or one whose keys would cost the CPU DMA round trips,
// in private VRAM) is looked up by a kernel, in a round shared with
// concurrent callers; otherwise, and wherever the kernels cannot run,
// by line loads on the CPU, large batches spread over GOMAXPROCS
// goroutines. A GPU failure leaves the batch to the CPU path; a lost
// device panics, as in Get (GetBatch returns it).
func (m *Map[K, V]) getMany(keys []K, vals []V, found []bool) int {
	if m.sh != nil {
		return m.sh.getMany(keys, vals, found)
	}
	if m.pending.Load() {
		m.flushForRead()
	}
	t := m.t
	if t == nil || m.writing {
		m.badRead()
	}
	if len(vals) < len(keys) || (found != nil && len(found) < len(keys)) {
		panic(fmt.Sprintf("collections: GetMany: %d keys, %d values, %d found flags", len(keys), len(vals), len(found)))
	}
	m.readCheck("GetMany")
	// A loss met on the way (the flush above, the kernel, a DMA) ends the
	// call as one met before it.
	defer m.readCheck("GetMany")
	if hmode, ok := m.batchGPU(t, len(keys)); ok {
		f := found
		var fp *[]bool
		if f == nil {
			// The count needs the flags.
			fp = mapFoundPool.Get().(*[]bool)
			if cap(*fp) < len(keys) {
				*fp = make([]bool, len(keys))
			}
			f = (*fp)[:len(keys)]
		}
		err := m.combGet(t, hmode, keys, vals, f)
		n := 0
		if err == nil {
			for _, ok := range f[:len(keys)] {
				if ok {
					n++
				}
			}
		}
		if fp != nil {
			mapFoundPool.Put(fp)
		}
		if err == nil {
			m.gpu.stats.gpuPath.Add(1)
			return n
		}
		if errIsDeviceLost(err) {
			m.readLost("GetMany")
		}
	}
	m.gpu.stats.cpuPath.Add(1)
	return m.getManyCPU(t, keys, vals, found)
}

var mapFoundPool = sync.Pool{New: func() any { return new([]bool) }}

// getMany looks up every key: vals[i] gets the value of keys[i] (the zero
// value if absent) and, when found is not nil, found[i] whether it is
// there. It returns the number found. vals and found must be at least as
// long as keys: getMany panics if they are shorter (it has no error
// result; GetBatch returns an error matching vmem.ErrRange). The keys are split by shard and every shard looks up its
// part at once (Map.getMany: streaming loads on all cores). It panics if
// the map is closed or a write is in progress.
func (s *shardedMap[K, V]) getMany(keys []K, vals []V, found []bool) int {
	s.live()
	if len(vals) < len(keys) || (found != nil && len(found) < len(keys)) {
		panic(fmt.Sprintf("collections: Map.getMany: %d keys, %d values, %d found flags", len(keys), len(vals), len(found)))
	}
	if s.nd == 1 {
		return s.shards[0].getMany(keys, vals, found)
	}
	if len(keys) < shSmallBatch {
		total := 0
		for i := range keys {
			v, ok := s.Get(keys[i])
			vals[i] = v
			if found != nil {
				found[i] = ok
			}
			if ok {
				total++
			}
		}
		return total
	}
	sc := s.getScratch(len(keys))
	defer sc.release(&s.scratch, s.strs)
	pl := s.plan(keys, sc)
	ds := pl.active()
	counts := make([]int, len(s.shards))
	shRun(ds, func(d int) error {
		lo, hi := pl.run(d)
		counts[d] = s.shards[d].getMany(sc.keys[lo:hi], sc.vals[lo:hi], sc.found[lo:hi])
		return nil
	})
	shUngroupAnswers(pl, sc.vals, vals[:len(keys)], sc.found, found)
	total := 0
	for _, c := range counts {
		total += c
	}
	return total
}

// shardLens returns the number of entries of each shard.
func (s *shardedMap[K, V]) shardLens() []int { return shLens(s.shards, s.closed) }

// splitKeys returns the boundaries between shards (none until WithSplits
// or a BulkLoad chose them).
func (t *shardedBTree[K, V]) splitKeys() []K { return slices.Clone(t.splits) }

// shardLens returns the number of entries of each shard.
func (t *shardedBTree[K, V]) shardLens() []int { return shLens(t.shards, t.closed) }

// keysOf and valuesOf split an All iterator, as a range over it with one
// variable (or the blank and one) does.
func keysOf[K, V any](seq iter.Seq2[K, V]) iter.Seq[K] {
	return func(yield func(K) bool) {
		for k := range seq {
			if !yield(k) {
				return
			}
		}
	}
}

func valuesOf[K, V any](seq iter.Seq2[K, V]) iter.Seq[V] {
	return func(yield func(V) bool) {
		for _, v := range seq {
			if !yield(v) {
				return
			}
		}
	}
}
