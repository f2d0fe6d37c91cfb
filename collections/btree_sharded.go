package collections

// A BTree on a vmem.Pool: one BTree per device, keys partitioned by range.
// The public BTree holds one of these (BTree.sh) and forwards every
// exported method to it.
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
//     the splits more than a BTree's on one device.

import (
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/vmem"
)

// shardedBTree is a BTree's body on a pool. Its methods keep BTree's
// rules (concurrency, Close, device loss shard by shard).
type shardedBTree[K, V any] struct {
	pool   *vmem.Pool
	less   func(a, b K) bool
	shards []*BTree[K, V]
	splits []K    // strictly ascending; len(splits) < len(shards)
	lens   []*int // each shard's entry count, read in place by BTree.Len
	closed bool
}

// WithSplits fixes the bounds between the devices' key ranges of a tree
// on a pool: the first device holds the keys below splits[0], device d the
// keys in [splits[d-1], splits[d]), the last used device the keys from the
// last split up. The splits must be strictly ascending and at most one
// fewer than the pool's devices (fewer leaves the last devices unused). K
// must be the tree's key type. On one device there is nothing to divide:
// the splits are checked (key type, order) and otherwise ignored, so that
// the same options serve a device and a pool.
func WithSplits[K any](splits ...K) BTreeOption {
	s := slices.Clone(splits)
	return btOpt(func(c *btConfig) { c.splits = s })
}

// btSplitsOf returns the splits WithSplits gave among opts (nil if none),
// checked against the tree's key type and order.
func btSplitsOf[K any](less func(a, b K) bool, opts []BTreeOption) ([]K, error) {
	var cfg btConfig
	for _, o := range opts {
		if o != nil {
			o.applyBTree(&cfg)
		}
	}
	if cfg.splits == nil {
		return nil, nil
	}
	sp, ok := cfg.splits.([]K)
	if !ok {
		return nil, fmt.Errorf("WithSplits got %T, want []%T", cfg.splits, *new(K))
	}
	for i := 1; i < len(sp); i++ {
		if !less(sp[i-1], sp[i]) {
			return nil, fmt.Errorf("splits %d and %d: %w", i-1, i, ErrUnsorted)
		}
	}
	return sp, nil
}

// shBTNew makes the body of a tree on pool: one tree per device made by
// mk with opts, the shards divided by splits (checked by btSplitsOf).
func shBTNew[K, V any](pool *vmem.Pool, less func(a, b K) bool, mk func(*vmem.Device, []BTreeOption) (*BTree[K, V], error), splits []K, opts []BTreeOption) (*shardedBTree[K, V], error) {
	devs := pool.Devices()
	if len(devs) == 0 {
		return nil, fmt.Errorf("collections: NewBTree: empty pool: %w", vmem.ErrNoDevice)
	}
	if err := pool.Err(); err != nil {
		return nil, fmt.Errorf("collections: NewBTree: %w", err)
	}
	t := &shardedBTree[K, V]{pool: pool, less: less, shards: make([]*BTree[K, V], len(devs))}
	if splits != nil {
		if len(splits) >= len(t.shards) {
			return nil, fmt.Errorf("collections: NewBTree: %d splits for %d devices", len(splits), len(t.shards))
		}
		t.splits = splits
	}
	opts = slices.DeleteFunc(slices.Clone(opts), func(o BTreeOption) bool { return o == nil })
	for d := range t.shards {
		b, err := mk(devs[d], opts)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("collections: NewBTree: device %d: %w", d, err)
		}
		t.shards[d] = b
		if b.sk != nil {
			t.lens = append(t.lens, &b.sk.in.n)
		} else {
			t.lens = append(t.lens, &b.n)
		}
	}
	return t, nil
}

// shardOf returns k's shard: the number of splits at or below k.
func (t *shardedBTree[K, V]) shardOf(k K) int {
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
func (t *shardedBTree[K, V]) check() {
	for i := 1; i < len(t.splits); i++ {
		if !t.less(t.splits[i-1], t.splits[i]) {
			panic("collections: BTree: splits out of order")
		}
	}
	for d, b := range t.shards {
		mk, _, ok := b.edge(false)
		xk, _, _ := b.edge(true)
		switch {
		case !ok:
		case d > len(t.splits):
			panic(fmt.Sprintf("collections: BTree: shard %d holds keys beyond the last split", d))
		case d > 0 && t.less(mk, t.splits[d-1]), d < len(t.splits) && !t.less(xk, t.splits[d]):
			panic(fmt.Sprintf("collections: BTree: shard %d holds keys outside its range", d))
		}
	}
}

// wrote runs the invariant check after a write.
func (t *shardedBTree[K, V]) wrote() {
	if buildconst.Invariants {
		t.check()
	}
}

func (t *shardedBTree[K, V]) live() {
	if t.closed {
		panic("collections: BTree used after Close")
	}
}

// usable is the entry check of methods with an error result.
func (t *shardedBTree[K, V]) usable() error {
	if t.closed {
		return vmem.ErrClosed
	}
	return nil
}

// Len returns the number of entries (0 after Close).
func (t *shardedBTree[K, V]) Len() int { return shLen(t.shards, t.closed) }

// Err returns the first error met by a method without an error result on
// any shard.
func (t *shardedBTree[K, V]) Err() error { return shErr(t.shards) }

// Get returns the value stored under key and whether there is one.
func (t *shardedBTree[K, V]) Get(key K) (V, bool) {
	t.live()
	return t.shards[t.shardOf(key)].Get(key)
}

// Has reports whether key is in the tree.
func (t *shardedBTree[K, V]) Has(key K) bool {
	t.live()
	return t.shards[t.shardOf(key)].Has(key)
}

// ReplaceOrInsert stores value under key. If key was present it returns
// the value it replaces and true. On error (out of memory on key's device,
// device lost) the tree is unchanged.
func (t *shardedBTree[K, V]) ReplaceOrInsert(key K, value V) (old V, replaced bool, err error) {
	if err := t.usable(); err != nil {
		return old, false, err
	}
	defer t.wrote()
	return t.shards[t.shardOf(key)].ReplaceOrInsert(key, value)
}

// Delete removes key and returns its value and true, or false if key was
// absent.
func (t *shardedBTree[K, V]) Delete(key K) (old V, deleted bool, err error) {
	if err := t.usable(); err != nil {
		return old, false, err
	}
	defer t.wrote()
	return t.shards[t.shardOf(key)].Delete(key)
}

// DeleteMin removes the smallest entry and returns it, and false if the
// tree is empty.
func (t *shardedBTree[K, V]) DeleteMin() (key K, value V, ok bool, err error) {
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
func (t *shardedBTree[K, V]) DeleteMax() (key K, value V, ok bool, err error) {
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
func (t *shardedBTree[K, V]) Min() (K, V, bool) {
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
func (t *shardedBTree[K, V]) maxKey() (K, bool) {
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
func (t *shardedBTree[K, V]) Max() (K, V, bool) {
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

// Clear removes every entry and frees the device memory the shards held.
// The splits stay.
func (t *shardedBTree[K, V]) Clear() error {
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
func (t *shardedBTree[K, V]) Close() error {
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
// tallest shard's), and each shard's in Shards.
func (t *shardedBTree[K, V]) Stats() BTreeStats {
	s := BTreeStats{Shards: t.shardStats()}
	for _, st := range s.Shards {
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

// shardStats returns each shard's Stats.
func (t *shardedBTree[K, V]) shardStats() []BTreeStats {
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
func (t *shardedBTree[K, V]) chooseSplits(keys []K, n0 int) []K {
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
func (t *shardedBTree[K, V]) cuts(keys []K) []int {
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
// out of order, and vmem.ErrOutOfMemory (changing nothing: shards that had
// loaded their part give it back) when a device runs out of memory.
func (t *shardedBTree[K, V]) BulkLoad(keys []K, vals []V) error {
	if err := t.usable(); err != nil {
		return err
	}
	if len(vals) < len(keys) {
		return fmt.Errorf("collections: BTree.BulkLoad: %d keys but %d values: %w", len(keys), len(vals), vmem.ErrRange)
	}
	if len(keys) == 0 {
		return nil
	}
	for i := 1; i < len(keys); i++ {
		if !t.less(keys[i-1], keys[i]) {
			return fmt.Errorf("collections: BTree.BulkLoad: keys %d and %d: %w", i-1, i, ErrUnsorted)
		}
	}
	if mk, ok := t.maxKey(); ok && !t.less(mk, keys[0]) {
		return fmt.Errorf("collections: BTree.BulkLoad: first key not above the maximum: %w", ErrUnsorted)
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
	return fmt.Errorf("collections: BTree.BulkLoad: %w", errors.Join(failed...))
}

// GetBatch looks up every key: vals[i] gets the value of keys[i] (the zero
// value if absent) and, when found is not nil, found[i] whether it is
// there. The keys are split by shard and every shard runs BTree.GetBatch
// on its part at once (on GPUs, a kernel per device for integer keys).
// Errors: vmem.ErrClosed, a length error matching vmem.ErrRange, and the
// shards' errors, joined. GetBatch is a read.
func (t *shardedBTree[K, V]) GetBatch(keys []K, vals []V, found []bool) error {
	if err := t.usable(); err != nil {
		return err
	}
	defer runtime.KeepAlive(t) // its shards stay t's until the call returns
	if len(vals) < len(keys) || (found != nil && len(found) < len(keys)) {
		return fmt.Errorf("collections: BTree.GetBatch: %d keys, %d values, %d found flags: %w", len(keys), len(vals), len(found), vmem.ErrRange)
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
