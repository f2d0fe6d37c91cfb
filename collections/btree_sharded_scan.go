package collections

// Scans of a BTree on a pool: the shards' scans in key order, only those
// the range overlaps. The descending sequences (Backward, Descend) reach
// shardedBTree.descendPush through BTree.descendPush; the ascending ones,
// which the compiler inlines with their loop body (All, Range, Ascend),
// reach it through BTree.ascend, whose runs then come from each shard's
// runs in turn (btShRuns), so that neither path adds a call to a method
// that is inlined on one device.

import "runtime"

// span returns the shards a scan of (lo, hi) visits, first to last in
// its direction, and false if the range is empty. lo and hi are the
// bounds as BTree.descendPush and BTree.ascend take them (nil: open; lo the lower one, whether
// the scan ascends or descends).
func (t *shardedBTree[K, V]) span(desc bool, lo, hi *K) (from, to int, ok bool) {
	if lo != nil && hi != nil && !t.less(*lo, *hi) {
		return 0, 0, false
	}
	from, to = 0, len(t.shards)-1
	if lo != nil {
		from = t.shardOf(*lo)
	}
	if hi != nil {
		to = t.shardOf(*hi)
	}
	if desc {
		from, to = to, from
	}
	return from, to, true
}

// each calls scan on shards from..to (in that direction) until one
// reports that the caller's function stopped the scan, or a transfer
// error ended a shard's scan early (reported by Err, as on one device).
func (t *shardedBTree[K, V]) each(from, to int, scan func(b *BTree[K, V]) (stopped bool)) {
	defer runtime.KeepAlive(t) // its shards stay t's until the scan ends
	step := 1
	if from > to {
		step = -1
	}
	for d := from; ; d += step {
		b := t.shards[d]
		before := b.Err()
		if scan(b) || d == to || (before == nil && b.Err() != nil) {
			return
		}
	}
}

// descendPush is BTree.descendPush over the shards, from the last the
// range overlaps to the first (each shard's scan by descendOne, not
// BTree.descendPush, which would make the calls recursive: see
// descendOne).
func (t *shardedBTree[K, V]) descendPush(op string, lo, hi *K, fn func(K, V) bool) {
	t.live()
	from, to, ok := t.span(true, lo, hi)
	if !ok {
		return
	}
	t.each(from, to, func(b *BTree[K, V]) (stopped bool) {
		body := func(k K, v V) bool {
			stopped = !fn(k, v)
			return !stopped
		}
		if b.sk != nil {
			b.sk.descendPush(op, lo, hi, body)
		} else {
			b.descendOne(op, lo, hi, body)
		}
		return stopped
	})
}

// btShRuns is the runs of an ascending scan over the shards: each
// shard's runs in turn. It stands behind a btRuns whose walk holds it
// (btWalk.sh): btRuns.next and btWalk.stop hand over to it.
type btShRuns[K, V any] struct {
	t      *shardedBTree[K, V]
	op     string
	lo, hi *K
	d, to  int
	before error // the shard's Err when its scan began

	next1 func() ([]K, []V) // the current shard's runs; nil between shards
	stop1 func()            // ends them
	rel1  func()            // gives back what they hold outside the shard's walk
	done  bool
}

// ascend is BTree.ascend for owner, a tree on a pool. The walk holds
// owner, so that it stays reachable while the runs are read, as a tree on
// one device does (Save, whose caller keeps its tree, passes nil).
func (t *shardedBTree[K, V]) ascend(owner *BTree[K, V], op string, lo, hi *K) *btRuns[K, V] {
	t.live()
	c := &btShRuns[K, V]{t: t, op: op, lo: lo, hi: hi}
	from, to, ok := t.span(false, lo, hi)
	c.d, c.to, c.done = from, to, !ok
	r := &btRuns[K, V]{w: &btWalk[K, V]{t: owner, sh: c}}
	// A scan abandoned by a panic in the loop body gives back what its
	// shard holds outside its own walk (the shard's walk has a cleanup of
	// its own).
	runtime.AddCleanup(r, (*btShRuns[K, V]).abandon, c)
	return r
}

// next returns the next run (nil at the end), as btRuns.next does.
func (c *btShRuns[K, V]) next() ([]K, []V) {
	for !c.done {
		if c.next1 == nil {
			b := c.t.shards[c.d]
			c.before = b.Err()
			c.next1, c.stop1, c.rel1 = b.runsOf(c.op, c.lo, c.hi)
		}
		if keys, vals := c.next1(); keys != nil {
			return keys, vals
		}
		c.endShard()
		b := c.t.shards[c.d]
		if c.d == c.to || (c.before == nil && b.Err() != nil) {
			c.done = true // the end, or a transfer error ended the shard early
			break
		}
		c.d++
	}
	runtime.KeepAlive(c.t) // its shards stay t's until the scan ends
	return nil, nil
}

// stop ends the scan early.
func (c *btShRuns[K, V]) stop() {
	c.done = true
	c.endShard()
}

// endShard ends the current shard's runs, once.
func (c *btShRuns[K, V]) endShard() {
	if c.stop1 != nil {
		c.stop1()
		c.next1, c.stop1, c.rel1 = nil, nil, nil
	}
}

// abandon is stop for a scan that nobody holds any more: the shard's own
// cleanup stops its walk, so only the rest is given back here.
func (c *btShRuns[K, V]) abandon() {
	if c.rel1 != nil {
		c.rel1()
	}
}

// runsOf returns the runs of t's ascending scan of [lo, hi), a shard's
// part of a scan over a pool, the function that ends them (early or at
// their end), and the one that gives back what they hold outside their
// walk when they are abandoned (nil if nothing).
func (t *BTree[K, V]) runsOf(op string, lo, hi *K) (next func() ([]K, []V), stop, release func()) {
	if t.sk != nil {
		return t.sk.runsOf(op, lo, hi)
	}
	r := t.ascend(op, lo, hi)
	return r.next, r.stop, nil
}

// runsOf is BTree.runsOf for string keys: each run's keys are converted
// into one buffer, reused from run to run.
func (s *btSK[K, V]) runsOf(op string, lo, hi *K) (next func() ([]K, []V), stop, release func()) {
	rl, rh, rel := s.bounds(lo, hi)
	r := s.in.ascend(op, rl, rh)
	var kb []K
	next = func() ([]K, []V) {
		keys, vals := r.next()
		if keys == nil {
			return nil, nil
		}
		kb = kb[:0]
		for _, k := range keys {
			kb = append(kb, s.key(k))
		}
		return kb, vals
	}
	stop = func() {
		r.stop()
		rel()
	}
	return next, stop, rel
}
