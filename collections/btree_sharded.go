package collections

// ShardedBTree: one BTree per device of a vmem.Pool, keys partitioned by
// range.
//
// Design:
//
//   - Shard d holds the keys k with splits[d-1] <= k < splits[d]: ranges in
//     device order, so an ordered scan is shard 0's scan, then shard 1's,
//     and a ranged scan visits only the shards its range overlaps. Routing a
//     key is a binary search over at most 255 splits in host memory.
//   - Splits are fixed once chosen: by WithSplits, or by the first BulkLoad
//     of enough keys (quantiles of the loaded keys, counting the entries
//     already on shard 0, so that each shard gets an equal share). Until
//     then every key lives on shard 0: a tree filled one key at a time
//     without WithSplits stays on one device. Keys never move between
//     shards, so a skewed workload can fill one device first; choose splits
//     that match the keys when they are known.
//   - BulkLoad loads every shard's part at once, one goroutine per device;
//     GetBatch splits its keys by shard and every device searches its part
//     at once (BTree.GetBatch: a kernel per GPU for integer keys).
//   - Single-key operations touch one shard and cost one binary search over
//     the splits more than a BTree's.

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/vmem"
)

// ShardedBTree is an ordered map spread over every device of a vmem.Pool:
// one BTree per device, each holding one range of keys. Its methods are
// BTree's (google/btree's vocabulary), so moving a program from one GPU to
// all of them is a change of constructor (NewBTree(dev, less, ...) to
// NewShardedBTree(pool, less, ...)).
//
// Concurrency is BTree's: any number of goroutines may read at once; a
// method that changes the tree must not overlap with any other call. An
// iteration callback must not change the tree.
//
// Concurrency, as in the table of docs/guide.md:
//   - at the same time: Get, Has, GetBatch, Min, Max, Len, All, Keys, Values, Backward, Range, Ascend, AscendRange, AscendGreaterOrEqual, AscendLessThan, AscendRuns, AscendRangeRuns, Descend, DescendRange, DescendGreaterThan, DescendLessOrEqual, Stats, ShardStats, ShardLens, Shards, Splits, Pool, Err, Save
//   - alone: ReplaceOrInsert, Delete, DeleteMin, DeleteMax, BulkLoad, Clear, Close
//
// A ShardedBTree is invalid after Close: methods with an error result
// return ErrClosed, the others panic.
//
// Device loss: as BTree's, shard by shard (the error names the shard's
// BTree method); GetBatch, DeleteMin, DeleteMax and Save return the loss.
type ShardedBTree[K, V any] struct {
	pool   *vmem.Pool
	less   func(a, b K) bool
	shards []*BTree[K, V]
	splits []K // strictly ascending; len(splits) < len(shards)
	closed bool
}

// ShardedBTreeOption configures NewShardedBTree: a BTreeOption (applied to
// every shard) or WithSplits.
type ShardedBTreeOption interface {
	applyShardedBTree(*shBTConfig)
}

type shBTConfig struct {
	tree   []BTreeOption
	splits any // []K
}

// applyShardedBTree makes every BTreeOption a ShardedBTreeOption, so the
// options of NewBTree work unchanged with NewShardedBTree.
func (o BTreeOption) applyShardedBTree(c *shBTConfig) {
	if o != nil {
		c.tree = append(c.tree, o)
	}
}

type shBTOpt func(*shBTConfig)

func (o shBTOpt) applyShardedBTree(c *shBTConfig) { o(c) }

// WithSplits fixes the boundaries between shards: shard 0 holds the keys
// below splits[0], shard d the keys in [splits[d-1], splits[d]), the last
// used shard the keys from the last split up. The splits must be strictly
// ascending and at most one fewer than the pool's devices (fewer leaves the
// last devices unused). K must be the tree's key type.
func WithSplits[K any](splits ...K) ShardedBTreeOption {
	s := slices.Clone(splits)
	return shBTOpt(func(c *shBTConfig) { c.splits = s })
}

// NewShardedBTree makes an empty tree with one shard on each device of
// pool, ordered by less (a strict weak ordering, as for NewBTree). The
// BTreeOptions apply to every shard.
func NewShardedBTree[K, V any](pool *vmem.Pool, less func(a, b K) bool, opts ...ShardedBTreeOption) (*ShardedBTree[K, V], error) {
	if less == nil {
		return nil, errors.New("collections: NewShardedBTree: nil less function")
	}
	return shBTNew[K, V](pool, less, func(dev *vmem.Device, o []BTreeOption) (*BTree[K, V], error) {
		return NewBTree[K, V](dev, less, o...)
	}, opts)
}

// NewShardedBTreeOrdered makes an empty tree ordered by <, with one
// NewBTreeOrdered shard on each device (integer keys get the fast search
// and GPU batch lookups).
func NewShardedBTreeOrdered[K cmp.Ordered, V any](pool *vmem.Pool, opts ...ShardedBTreeOption) (*ShardedBTree[K, V], error) {
	return shBTNew[K, V](pool, cmp.Less[K], func(dev *vmem.Device, o []BTreeOption) (*BTree[K, V], error) {
		return NewBTreeOrdered[K, V](dev, o...)
	}, opts)
}

func shBTNew[K, V any](pool *vmem.Pool, less func(a, b K) bool, mk func(*vmem.Device, []BTreeOption) (*BTree[K, V], error), opts []ShardedBTreeOption) (*ShardedBTree[K, V], error) {
	if pool == nil {
		return nil, errors.New("collections: NewShardedBTree: nil pool")
	}
	if err := pool.Err(); err != nil {
		return nil, fmt.Errorf("collections: NewShardedBTree: %w", err)
	}
	var cfg shBTConfig
	for _, o := range opts {
		if o != nil {
			o.applyShardedBTree(&cfg)
		}
	}
	t := &ShardedBTree[K, V]{pool: pool, less: less, shards: make([]*BTree[K, V], pool.Len())}
	if cfg.splits != nil {
		sp, ok := cfg.splits.([]K)
		if !ok {
			return nil, fmt.Errorf("collections: NewShardedBTree: WithSplits got %T, want []%T", cfg.splits, *new(K))
		}
		if len(sp) >= len(t.shards) {
			return nil, fmt.Errorf("collections: NewShardedBTree: %d splits for %d shards", len(sp), len(t.shards))
		}
		for i := 1; i < len(sp); i++ {
			if !less(sp[i-1], sp[i]) {
				return nil, fmt.Errorf("collections: NewShardedBTree: splits %d and %d: %w", i-1, i, ErrUnsorted)
			}
		}
		t.splits = sp
	}
	for d := range t.shards {
		b, err := mk(pool.Device(d), cfg.tree)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("collections: NewShardedBTree: device %d: %w", d, err)
		}
		t.shards[d] = b
	}
	return t, nil
}

// shardOf returns k's shard: the number of splits at or below k.
func (t *ShardedBTree[K, V]) shardOf(k K) int {
	lo, hi := 0, len(t.splits)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.less(k, t.splits[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// check panics if the splits are out of order or a shard holds a key
// outside its range.
func (t *ShardedBTree[K, V]) check() {
	for i := 1; i < len(t.splits); i++ {
		if !t.less(t.splits[i-1], t.splits[i]) {
			panic("collections: ShardedBTree: splits out of order")
		}
	}
	for d, b := range t.shards {
		mk, _, ok := b.edge(false)
		xk, _, _ := b.edge(true)
		switch {
		case !ok:
		case d > len(t.splits):
			panic(fmt.Sprintf("collections: ShardedBTree: shard %d holds keys beyond the last split", d))
		case d > 0 && t.less(mk, t.splits[d-1]), d < len(t.splits) && !t.less(xk, t.splits[d]):
			panic(fmt.Sprintf("collections: ShardedBTree: shard %d holds keys outside its range", d))
		}
	}
}

// wrote runs the invariant check after a write.
func (t *ShardedBTree[K, V]) wrote() {
	if buildconst.Invariants {
		t.check()
	}
}

func (t *ShardedBTree[K, V]) live() {
	if t.closed {
		panic("collections: ShardedBTree used after Close")
	}
}

// usable is the entry check of methods with an error result.
func (t *ShardedBTree[K, V]) usable() error {
	if t.closed {
		return ErrClosed
	}
	return nil
}

// Pool returns the pool the tree lives on.
func (t *ShardedBTree[K, V]) Pool() *vmem.Pool { return t.pool }

// Shards returns the number of shards (the pool's devices).
func (t *ShardedBTree[K, V]) Shards() int { return len(t.shards) }

// Splits returns the boundaries between shards (none until WithSplits or a
// BulkLoad chose them).
func (t *ShardedBTree[K, V]) Splits() []K { return slices.Clone(t.splits) }

// ShardLens returns the number of entries of each shard.
func (t *ShardedBTree[K, V]) ShardLens() []int { return shLens(t.shards, t.closed) }

// Len returns the number of entries (0 after Close).
func (t *ShardedBTree[K, V]) Len() int { return shLen(t.shards, t.closed) }

// Err returns the first error met by a method without an error result on
// any shard.
func (t *ShardedBTree[K, V]) Err() error { return shErr(t.shards) }

// Get returns the value stored under key and whether there is one.
func (t *ShardedBTree[K, V]) Get(key K) (V, bool) {
	t.live()
	return t.shards[t.shardOf(key)].Get(key)
}

// Has reports whether key is in the tree.
func (t *ShardedBTree[K, V]) Has(key K) bool {
	t.live()
	return t.shards[t.shardOf(key)].Has(key)
}

// ReplaceOrInsert stores value under key. If key was present it returns
// the value it replaces and true. On error (out of memory on key's device,
// device lost) the tree is unchanged.
func (t *ShardedBTree[K, V]) ReplaceOrInsert(key K, value V) (old V, replaced bool, err error) {
	if err := t.usable(); err != nil {
		return old, false, err
	}
	defer t.wrote()
	return t.shards[t.shardOf(key)].ReplaceOrInsert(key, value)
}

// Delete removes key and returns its value and true, or false if key was
// absent.
func (t *ShardedBTree[K, V]) Delete(key K) (old V, deleted bool, err error) {
	if err := t.usable(); err != nil {
		return old, false, err
	}
	defer t.wrote()
	return t.shards[t.shardOf(key)].Delete(key)
}

// DeleteMin removes the smallest entry and returns it, and false if the
// tree is empty.
func (t *ShardedBTree[K, V]) DeleteMin() (key K, value V, ok bool, err error) {
	if err := t.usable(); err != nil {
		return key, value, false, err
	}
	defer t.wrote()
	for _, b := range t.shards {
		if b.Len() > 0 {
			return b.DeleteMin()
		}
	}
	return key, value, false, nil
}

// DeleteMax removes the largest entry and returns it, and false if the tree
// is empty.
func (t *ShardedBTree[K, V]) DeleteMax() (key K, value V, ok bool, err error) {
	if err := t.usable(); err != nil {
		return key, value, false, err
	}
	defer t.wrote()
	for d := len(t.shards) - 1; d >= 0; d-- {
		if b := t.shards[d]; b.Len() > 0 {
			return b.DeleteMax()
		}
	}
	return key, value, false, nil
}

// Min returns the smallest key and its value, and false if the tree is
// empty.
func (t *ShardedBTree[K, V]) Min() (K, V, bool) {
	t.live()
	for _, b := range t.shards {
		if b.Len() > 0 {
			return b.Min()
		}
	}
	var k K
	var v V
	return k, v, false
}

// maxKey is Max without the loss checks, for BulkLoad (which returns the
// loss).
func (t *ShardedBTree[K, V]) maxKey() (K, bool) {
	for i := len(t.shards) - 1; i >= 0; i-- {
		if b := t.shards[i]; b.Len() > 0 {
			k, _, ok := b.edge(true)
			return k, ok
		}
	}
	var k K
	return k, false
}

// Max returns the largest key and its value, and false if the tree is
// empty.
func (t *ShardedBTree[K, V]) Max() (K, V, bool) {
	t.live()
	for d := len(t.shards) - 1; d >= 0; d-- {
		if b := t.shards[d]; b.Len() > 0 {
			return b.Max()
		}
	}
	var k K
	var v V
	return k, v, false
}

// visit calls scan on shards from..to (in that direction), with fn
// wrapped so that a false from fn stops the remaining shards too.
func (t *ShardedBTree[K, V]) visit(from, to int, fn func(K, V) bool, scan func(b *BTree[K, V], fn func(K, V) bool)) {
	t.each(from, to, func(b *BTree[K, V]) (stopped bool) {
		scan(b, func(k K, v V) bool {
			stopped = !fn(k, v)
			return !stopped
		})
		return stopped
	})
}

// each calls scan on shards from..to (in that direction) until one
// reports that the caller's function stopped the scan.
func (t *ShardedBTree[K, V]) each(from, to int, scan func(b *BTree[K, V]) (stopped bool)) {
	t.live()
	defer runtime.KeepAlive(t) // its shards stay t's until the scan ends
	step := 1
	if from > to {
		step = -1
	}
	for d := from; ; d += step {
		if scan(t.shards[d]) || d == to {
			return
		}
	}
}

func (t *ShardedBTree[K, V]) last() int { return len(t.shards) - 1 }

// Ascend calls fn for every entry in ascending key order until fn returns
// false.
func (t *ShardedBTree[K, V]) Ascend(fn func(key K, value V) bool) {
	t.visit(0, t.last(), fn, func(b *BTree[K, V], f func(K, V) bool) { b.Ascend(f) })
}

// AscendRange calls fn for the entries with greaterOrEqual <= key <
// lessThan, ascending, until fn returns false.
func (t *ShardedBTree[K, V]) AscendRange(greaterOrEqual, lessThan K, fn func(key K, value V) bool) {
	if !t.less(greaterOrEqual, lessThan) {
		t.live()
		return
	}
	t.visit(t.shardOf(greaterOrEqual), t.shardOf(lessThan), fn, func(b *BTree[K, V], f func(K, V) bool) {
		b.AscendRange(greaterOrEqual, lessThan, f)
	})
}

// AscendRuns is BTree.AscendRuns over every shard in key order: fn gets
// the entries a run at a time, in place, until it returns false.
func (t *ShardedBTree[K, V]) AscendRuns(fn func(keys []K, vals []V) bool) {
	t.visitRuns(0, t.last(), fn, func(b *BTree[K, V], f func([]K, []V) bool) { b.AscendRuns(f) })
}

// AscendRangeRuns is AscendRuns over the entries with greaterOrEqual <=
// key < lessThan.
func (t *ShardedBTree[K, V]) AscendRangeRuns(greaterOrEqual, lessThan K, fn func(keys []K, vals []V) bool) {
	if !t.less(greaterOrEqual, lessThan) {
		t.live()
		return
	}
	t.visitRuns(t.shardOf(greaterOrEqual), t.shardOf(lessThan), fn, func(b *BTree[K, V], f func([]K, []V) bool) {
		b.AscendRangeRuns(greaterOrEqual, lessThan, f)
	})
}

// visitRuns is visit for the runs forms.
func (t *ShardedBTree[K, V]) visitRuns(from, to int, fn func([]K, []V) bool, scan func(b *BTree[K, V], fn func([]K, []V) bool)) {
	t.each(from, to, func(b *BTree[K, V]) (stopped bool) {
		scan(b, func(k []K, v []V) bool {
			stopped = !fn(k, v)
			return !stopped
		})
		return stopped
	})
}

// AscendGreaterOrEqual calls fn for the entries with key >= pivot,
// ascending, until fn returns false.
func (t *ShardedBTree[K, V]) AscendGreaterOrEqual(pivot K, fn func(key K, value V) bool) {
	t.visit(t.shardOf(pivot), t.last(), fn, func(b *BTree[K, V], f func(K, V) bool) {
		b.AscendGreaterOrEqual(pivot, f)
	})
}

// AscendLessThan calls fn for the entries with key < pivot, ascending,
// until fn returns false.
func (t *ShardedBTree[K, V]) AscendLessThan(pivot K, fn func(key K, value V) bool) {
	t.visit(0, t.shardOf(pivot), fn, func(b *BTree[K, V], f func(K, V) bool) { b.AscendLessThan(pivot, f) })
}

// Descend calls fn for every entry in descending key order until fn
// returns false.
func (t *ShardedBTree[K, V]) Descend(fn func(key K, value V) bool) {
	t.visit(t.last(), 0, fn, func(b *BTree[K, V], f func(K, V) bool) { b.Descend(f) })
}

// DescendRange calls fn for the entries with lessOrEqual >= key >
// greaterThan, descending, until fn returns false.
func (t *ShardedBTree[K, V]) DescendRange(lessOrEqual, greaterThan K, fn func(key K, value V) bool) {
	if !t.less(greaterThan, lessOrEqual) {
		t.live()
		return
	}
	t.visit(t.shardOf(lessOrEqual), t.shardOf(greaterThan), fn, func(b *BTree[K, V], f func(K, V) bool) {
		b.DescendRange(lessOrEqual, greaterThan, f)
	})
}

// DescendLessOrEqual calls fn for the entries with key <= pivot,
// descending, until fn returns false.
func (t *ShardedBTree[K, V]) DescendLessOrEqual(pivot K, fn func(key K, value V) bool) {
	t.visit(t.shardOf(pivot), 0, fn, func(b *BTree[K, V], f func(K, V) bool) { b.DescendLessOrEqual(pivot, f) })
}

// DescendGreaterThan calls fn for the entries with key > pivot,
// descending, until fn returns false.
func (t *ShardedBTree[K, V]) DescendGreaterThan(pivot K, fn func(key K, value V) bool) {
	t.visit(t.last(), t.shardOf(pivot), fn, func(b *BTree[K, V], f func(K, V) bool) { b.DescendGreaterThan(pivot, f) })
}

// seq chains the shards' sequences from..to.
func (t *ShardedBTree[K, V]) seq(from, to int, one func(b *BTree[K, V]) iter.Seq2[K, V]) iter.Seq2[K, V] {
	t.live()
	return func(yield func(K, V) bool) {
		defer runtime.KeepAlive(t) // its shards stay t's until the sequence ends
		step := 1
		if from > to {
			step = -1
		}
		for d := from; ; d += step {
			b := t.shards[d]
			before := b.Err()
			for k, v := range one(b) {
				if !yield(k, v) {
					return
				}
			}
			if b.Err() != nil && before == nil {
				return // a transfer error ended the shard early
			}
			if d == to {
				return
			}
		}
	}
}

// All returns every entry in ascending key order: the shards' All in turn
// (each reads its leaves in bulk). A transfer error ends the sequence
// early and is reported by Err.
func (t *ShardedBTree[K, V]) All() iter.Seq2[K, V] {
	return t.seq(0, t.last(), (*BTree[K, V]).All)
}

// Backward returns every entry in descending key order.
func (t *ShardedBTree[K, V]) Backward() iter.Seq2[K, V] {
	return t.seq(t.last(), 0, (*BTree[K, V]).Backward)
}

// Range returns the entries with lo <= key < hi in ascending order,
// visiting only the shards the range overlaps.
func (t *ShardedBTree[K, V]) Range(lo, hi K) iter.Seq2[K, V] {
	if !t.less(lo, hi) {
		t.live()
		return func(func(K, V) bool) {}
	}
	return t.seq(t.shardOf(lo), t.shardOf(hi), func(b *BTree[K, V]) iter.Seq2[K, V] { return b.Range(lo, hi) })
}

// Clear removes every entry and frees the device memory the shards held.
// The splits stay.
func (t *ShardedBTree[K, V]) Clear() error {
	if err := t.usable(); err != nil {
		return err
	}
	defer t.wrote()
	var errs []error
	for d, b := range t.shards {
		if err := b.Clear(); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// Close frees every shard's memory. It is idempotent; the tree is invalid
// afterwards.
func (t *ShardedBTree[K, V]) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	for d, b := range t.shards {
		if b != nil {
			if err := b.Close(); err != nil {
				errs = append(errs, fmt.Errorf("shard %d: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Stats returns the shards' shapes and memory added up (Height is the
// tallest shard's).
func (t *ShardedBTree[K, V]) Stats() BTreeStats {
	var s BTreeStats
	for _, st := range t.ShardStats() {
		s.Len += st.Len
		s.Leaves += st.Leaves
		s.LeafEntries = st.LeafEntries
		s.LeafBytes = st.LeafBytes
		s.Extents += st.Extents
		s.Height = max(s.Height, st.Height)
		s.DeviceBytes += st.DeviceBytes
		s.PrivateBytes += st.PrivateBytes
		s.HostBytes += st.HostBytes
		s.Cache = s.Cache.add(st.Cache)
	}
	if s.Len > 0 {
		s.HostPerEntry = float64(s.HostBytes) / float64(s.Len)
		if s.Leaves > 0 && s.LeafEntries > 0 {
			s.Fill = float64(s.Len) / float64(s.Leaves*s.LeafEntries)
		}
	}
	return s
}

// ShardStats returns each shard's Stats.
func (t *ShardedBTree[K, V]) ShardStats() []BTreeStats {
	t.live()
	st := make([]BTreeStats, len(t.shards))
	for d, b := range t.shards {
		st[d] = b.Stats()
	}
	return st
}

// chooseSplits picks splits among keys (strictly ascending, all above the
// n0 entries already on shard 0) so that every shard ends up with an equal
// share of n0+len(keys) entries. It returns none when there are too few
// keys to give every shard one.
func (t *ShardedBTree[K, V]) chooseSplits(keys []K, n0 int) []K {
	nd := len(t.shards)
	m := len(keys)
	if nd < 2 || m < nd {
		return nil
	}
	total := n0 + m
	var sp []K
	prev := -1
	for j := 1; j < nd; j++ {
		i := max(j*total/nd-n0, prev+1, 0)
		if i >= m {
			break
		}
		sp = append(sp, keys[i])
		prev = i
	}
	return sp
}

// cuts returns where the sorted keys cross each split: shard d's keys are
// keys[c[d]:c[d+1]].
func (t *ShardedBTree[K, V]) cuts(keys []K) []int {
	c := make([]int, len(t.shards)+1)
	for d := 1; d <= len(t.shards); d++ {
		if d-1 >= len(t.splits) {
			c[d] = len(keys)
			continue
		}
		sp := t.splits[d-1]
		c[d] = c[d-1] + func() int {
			lo, hi := 0, len(keys)-c[d-1]
			for lo < hi {
				m := int(uint(lo+hi) >> 1)
				if t.less(keys[c[d-1]+m], sp) {
					lo = m + 1
				} else {
					hi = m
				}
			}
			return lo
		}()
	}
	return c
}

// BulkLoad adds entries whose keys are strictly ascending and all above
// the tree's maximum (any keys, for an empty tree): keys[i] gets vals[i].
// Every shard loads its range at once (BTree.BulkLoad on each device). If
// the tree has no splits yet, this load chooses them (see the type's
// comment). It returns ErrUnsorted (and changes nothing) when the keys are
// out of order, and ErrOutOfMemory (changing nothing: shards that had
// loaded their part give it back) when a device runs out of memory.
func (t *ShardedBTree[K, V]) BulkLoad(keys []K, vals []V) error {
	if err := t.usable(); err != nil {
		return err
	}
	if len(vals) < len(keys) {
		return fmt.Errorf("collections: ShardedBTree.BulkLoad: %d keys but %d values: %w", len(keys), len(vals), vmem.ErrRange)
	}
	if len(keys) == 0 {
		return nil
	}
	for i := 1; i < len(keys); i++ {
		if !t.less(keys[i-1], keys[i]) {
			return fmt.Errorf("collections: ShardedBTree.BulkLoad: keys %d and %d: %w", i-1, i, ErrUnsorted)
		}
	}
	if mk, ok := t.maxKey(); ok && !t.less(mk, keys[0]) {
		return fmt.Errorf("collections: ShardedBTree.BulkLoad: first key not above the maximum: %w", ErrUnsorted)
	}
	defer t.wrote()
	chosen := false
	if len(t.splits) == 0 {
		if t.splits = t.chooseSplits(keys, t.shards[0].Len()); len(t.splits) > 0 {
			chosen = true
		}
	}
	c := t.cuts(keys)
	var ds []int
	for d := range t.shards {
		if c[d+1] > c[d] {
			ds = append(ds, d)
		}
	}
	errs := make([]error, len(t.shards))
	shRun(ds, func(d int) error {
		errs[d] = t.shards[d].BulkLoad(keys[c[d]:c[d+1]], vals[c[d]:c[d+1]])
		return nil
	})
	var failed []error
	for d, err := range errs {
		if err != nil {
			failed = append(failed, fmt.Errorf("shard %d: %w", d, err))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	// Undo the shards that loaded: their new keys are their largest.
	for _, d := range ds {
		if errs[d] == nil {
			for range c[d+1] - c[d] {
				t.shards[d].DeleteMax()
			}
		}
	}
	if chosen {
		t.splits = nil
	}
	return fmt.Errorf("collections: ShardedBTree.BulkLoad: %w", errors.Join(failed...))
}

// GetBatch looks up every key: vals[i] gets the value of keys[i] (the zero
// value if absent) and, when found is not nil, found[i] whether it is
// there. The keys are split by shard and every shard runs BTree.GetBatch
// on its part at once (on GPUs, a kernel per device for integer keys).
// Errors: ErrClosed, a length error matching vmem.ErrRange, and the
// shards' errors, joined. GetBatch is a read.
func (t *ShardedBTree[K, V]) GetBatch(keys []K, vals []V, found []bool) error {
	if err := t.usable(); err != nil {
		return err
	}
	defer runtime.KeepAlive(t) // its shards stay t's until the call returns
	if len(vals) < len(keys) || (found != nil && len(found) < len(keys)) {
		return fmt.Errorf("collections: ShardedBTree.GetBatch: %d keys, %d values, %d found flags: %w", len(keys), len(vals), len(found), vmem.ErrRange)
	}
	if len(t.splits) == 0 || len(keys) == 0 {
		return t.shards[0].GetBatch(keys, vals, found)
	}
	var sc shScratch[K, V]
	sc.size(len(keys))
	pl := shPlanBatch(len(keys), len(t.shards), sc.sid, func(i int) int { return t.shardOf(keys[i]) })
	shGroup(pl, keys, sc.keys)
	err := shRun(pl.active(), func(d int) error {
		lo, hi := pl.run(d)
		var f []bool
		if found != nil {
			f = sc.found[lo:hi]
		}
		return t.shards[d].GetBatch(sc.keys[lo:hi], sc.vals[lo:hi], f)
	})
	if err != nil {
		return err
	}
	shUngroupAnswers(pl, sc.vals, vals[:len(keys)], sc.found, found)
	return nil
}
