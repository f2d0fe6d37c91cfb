package main

// The btree suite: collections.BTree against google/btree (degree 32)
// and the naive path (sorted key and value arrays in mapped memory,
// binary search with plain loads).

import (
	"sort"
	"time"

	"github.com/google/btree"

	"github.com/govram/govram/collections"
	"github.com/govram/govram/internal/kern"
)

// rangeLen is how many entries a range case visits.
const rangeLen = 100

func btreeSuite() *suite {
	return &suite{
		Name: "btree",
		Dist: true,
		About: "collections.BTree[uint64, uint64] against google/btree's BTreeG (degree 32, the baseline) and the " +
			"naive path (sorted key and value arrays in one mapped block, binary search with plain loads). " +
			"Keys are even numbers, built in ascending order.",
		Ops: []opDoc{
			{"build", "insert the entries one by one in ascending key order (measured once, per entry; govram/bulk: BulkLoad of runs of 65536 sorted entries into a fresh tree, repeated like the other cases)"},
			{"get", "look up a present key, random order"},
			{"put", "overwrite the value of a present key, random order (ReplaceOrInsert; the value it has, so the tree stays the same)"},
			{"insert", "insert an absent key at a random place (batches of 4096, deleted again untimed)"},
			{"delete", "delete a present key at a random place (batches of 4096, put back untimed)"},
			{"range", "visit the 100 entries from a random key on (govram: a loop over Ascend(key) that breaks after 100; google/btree: AscendGreaterOrEqual); one operation is the whole range"},
			{"scan", "visit entries in ascending order (govram: a loop over Ascend(0); google/btree: AscendGreaterOrEqual(0)); one operation is one entry"},
		},
		Groups: func(e *env, n int) []*group {
			return []*group{{Suite: "btree", Name: "btree", Size: n, Baselines: []string{"google/btree"}, HitRate: e.cfg.distSet,
				Impls: []*impl{btGovram(e, n), btNaive(e, n), btGoogle(e, n)}}}
		},
	}
}

// btProbes are the btree suite's keys: present ones for get and range,
// distinct present ones to delete, distinct absent ones to insert.
type btProbes struct {
	hit, del, ins []uint64
}

func newBtProbes(n int) *btProbes {
	p := &btProbes{hit: make([]uint64, probeCount(n))}
	for i, j := range randomIdx(n, probeCount(n), 4) {
		p.hit[i] = orderedKey(j)
	}
	for _, j := range distinctIdx(n, min(delBatch, n/2), 5) {
		p.del = append(p.del, orderedKey(j))
	}
	for _, j := range distinctIdx(n, min(delBatch, n/2), 6) {
		p.ins = append(p.ins, orderedKey(j)-1) // odd: absent
	}
	return p
}

// btOps is the interface the btree cases need.
type btOps struct {
	get    func(k uint64) (uint64, bool)
	put    func(k, v uint64) error
	del    func(k uint64) (bool, error)
	ascend func(from uint64, fn func(k, v uint64) bool) // the entries from the first key >= from, until fn returns false
}

// btDistOps are the operations run under every -dist distribution.
var btDistOps = []string{"get", "put", "range"}

// btHits returns govram's hot tier counters of t when -dist was given.
func btHits(e *env, t *collections.BTree[uint64, uint64]) hitCounter {
	if !e.cfg.distSet {
		return nil
	}
	return func() (uint64, uint64) { c := t.Stats().Cache; return c.Hits, c.Misses }
}

// add adds the cases; get and range under each of e's distributions,
// hits reading govram's hot tier counters (nil for the others).
func (o btOps) add(e *env, fx *fixture, n int, hits hitCounter) {
	p := newBtProbes(n)
	hitOf := make([][]uint64, len(e.dists()))
	for i, d := range e.dists() {
		if d.uniform() {
			hitOf[i] = p.hit
			continue
		}
		hitOf[i] = make([]uint64, probeCount(n))
		for k, j := range drawIdx(n, probeCount(n), 4, d) {
			hitOf[i][k] = orderedKey(j)
		}
	}
	for i, d := range e.dists() {
		hit := hitOf[i]
		fx.add(d.op("get"), func(b *B) error {
			var sum uint64
			missed := 0
			m := hits.mark()
			for i := range b.N {
				v, ok := o.get(hit[i&(len(hit)-1)])
				if !ok {
					missed++
				}
				sum += v
			}
			hits.report(b, m)
			sink += sum
			return checkHits(missed, b.N)
		})
	}
	for i, d := range e.dists() {
		if o.put == nil {
			break
		}
		hit := hitOf[i]
		fx.add(d.op("put"), func(b *B) error {
			for i := range b.N {
				k := hit[i&(len(hit)-1)]
				if err := o.put(k, k/2-1); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if o.put != nil {
		fx.add("insert", batchOp(len(p.ins), func(j int) error { return o.put(p.ins[j], 1) },
			func(j int) error { _, err := o.del(p.ins[j]); return err }))
		fx.add("delete", batchOp(len(p.del), func(j int) error {
			ok, err := o.del(p.del[j])
			if err == nil && !ok {
				err = errorf("delete of a present key found nothing")
			}
			return err
		}, func(j int) error { return o.put(p.del[j], p.del[j]/2-1) }))
	}
	for i, d := range e.dists() {
		hit := hitOf[i]
		fx.add(d.op("range"), func(b *B) error {
			visited := 0
			m := hits.mark()
			for i := range b.N {
				from := hit[i&(len(hit)-1)]
				seen := 0
				o.ascend(from, func(k, v uint64) bool {
					sink += v
					seen++
					return seen < rangeLen
				})
				visited += seen
			}
			hits.report(b, m)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(visited, 1)), "ns/entry")
			return nil
		})
	}
	fx.add("scan", func(b *B) error {
		for left := b.N; left > 0; {
			before := left
			o.ascend(0, func(k, v uint64) bool {
				sink += v
				left--
				return left > 0
			})
			if left == before {
				return errorf("scan visited nothing")
			}
		}
		return nil
	})
}

// batchOp runs do b.N times over a batch of keys, undoing each full batch
// untimed so the container keeps its size.
func batchOp(batch int, do, undo func(j int) error) benchFunc {
	return func(b *B) error {
		undoAll := func(m int) error {
			for j := range m {
				if err := undo(j); err != nil {
					return err
				}
			}
			return nil
		}
		j := 0
		for range b.N {
			if j == batch {
				b.StopTimer()
				if err := undoAll(j); err != nil {
					return err
				}
				j = 0
				b.StartTimer()
			}
			if err := do(j); err != nil {
				return err
			}
			j++
		}
		b.StopTimer()
		return undoAll(j)
	}
}

func btGovram(e *env, n int) *impl {
	return &impl{
		Name: "govram", Role: RoleGovram, Ops: distOps([]string{"build", "build#bulk", "get", "put", "insert", "delete", "range", "scan"}, e.dists(), btDistOps...),
		Need: func() (uint64, uint64) { return uint64(n) * 4, uint64(n) * 80 },
		Setup: func() (*fixture, error) {
			t, err := collections.NewBTreeOrdered[uint64, uint64](e.dev, e.btreeOpts()...)
			if err != nil {
				return nil, err
			}
			built, took, note, err := e.build(n, func(i int) error {
				_, _, err := t.ReplaceOrInsert(orderedKey(i), uint64(i))
				return err
			}, func(from, to int) error {
				ks, vs := make([]uint64, to-from), make([]uint64, to-from)
				for i := range ks {
					ks[i], vs[i] = orderedKey(from+i), uint64(from+i)
				}
				return t.BulkLoad(ks, vs)
			})
			if err != nil {
				t.Close()
				return nil, err
			}
			fx := &fixture{built: built, buildTime: took, buildNote: note, entries: n, close: t.Close, mem: builtMem(e.dev)}
			btOps{
				get: t.Get,
				put: func(k, v uint64) error { _, _, err := t.ReplaceOrInsert(k, v); return err },
				del: func(k uint64) (bool, error) { _, ok, err := t.Delete(k); return ok, err },
				ascend: func(from uint64, fn func(k, v uint64) bool) {
					for k, v := range t.Ascend(from) {
						if !fn(k, v) {
							return
						}
					}
				},
			}.add(e, fx, n, btHits(e, t))
			fx.add("build#bulk", bulkLoadOp(e, n))
			return fx, nil
		},
	}
}

// bulkLoadOp loads b.N entries into fresh trees with BulkLoad, in runs of
// 65536 ascending keys (each run above the last, as BulkLoad allows); a
// tree that reaches n entries is replaced, untimed.
func bulkLoadOp(e *env, n int) benchFunc {
	const run = 1 << 16
	return func(b *B) error {
		keys, vals := make([]uint64, min(run, n)), make([]uint64, min(run, n))
		t, err := collections.NewBTreeOrdered[uint64, uint64](e.dev, e.btreeOpts()...)
		if err != nil {
			return err
		}
		defer func() { t.Close() }()
		loaded := 0
		for i := 0; i < b.N; {
			b.StopTimer()
			if loaded == n {
				t.Close()
				if t, err = collections.NewBTreeOrdered[uint64, uint64](e.dev, e.btreeOpts()...); err != nil {
					return err
				}
				loaded = 0
			}
			c := min(len(keys), b.N-i, n-loaded)
			for j := range c {
				keys[j], vals[j] = orderedKey(loaded+j), uint64(loaded+j)
			}
			b.StartTimer()
			if err := t.BulkLoad(keys[:c], vals[:c]); err != nil {
				return err
			}
			loaded += c
			i += c
		}
		b.StopTimer()
		if t.Len() != loaded {
			return errorf("BulkLoad left %d entries, want %d", t.Len(), loaded)
		}
		return nil
	}
}

// btItem is google/btree's item: key and value, ordered by key.
type btItem struct{ k, v uint64 }

func btLess(a, b btItem) bool { return a.k < b.k }

func btGoogle(e *env, n int) *impl {
	return &impl{
		Name: "google/btree", Role: RoleBaseline, Ops: distOps([]string{"build", "get", "put", "insert", "delete", "range", "scan"}, e.dists(), btDistOps...),
		Need: func() (uint64, uint64) { return uint64(n) * 40, 0 },
		Setup: func() (*fixture, error) {
			start := time.Now()
			t := btree.NewG(32, btLess)
			for i := range n {
				t.ReplaceOrInsert(btItem{orderedKey(i), uint64(i)})
			}
			fx := &fixture{built: n, buildTime: time.Since(start), entries: n, mem: builtMem(nil)}
			btOps{
				get: func(k uint64) (uint64, bool) { it, ok := t.Get(btItem{k: k}); return it.v, ok },
				put: func(k, v uint64) error { t.ReplaceOrInsert(btItem{k, v}); return nil },
				del: func(k uint64) (bool, error) { _, ok := t.Delete(btItem{k: k}); return ok, nil },
				ascend: func(from uint64, fn func(k, v uint64) bool) {
					t.AscendGreaterOrEqual(btItem{k: from}, func(it btItem) bool { return fn(it.k, it.v) })
				},
			}.add(e, fx, n, nil)
			return fx, nil
		},
	}
}

func btNaive(e *env, n int) *impl {
	return &impl{
		Name: "naive", Role: RoleNaive, Ops: distOps([]string{"build", "get", "range", "scan"}, e.dists(), btDistOps...),
		Need: func() (uint64, uint64) { return 0, uint64(n) * 16 },
		Setup: func() (*fixture, error) {
			blk, u, err := mappedU64s(e.dev, 2*n)
			if err != nil {
				return nil, err
			}
			keys, vals := u[:n], u[n:]
			start := time.Now()
			for i := range n {
				keys[i], vals[i] = orderedKey(i), uint64(i)
			}
			fx := &fixture{built: n, buildTime: time.Since(start), entries: n,
				close: func() error { return kern.Of(e.dev).Free(blk) }, mem: builtMem(e.dev)}
			btOps{
				get: func(k uint64) (uint64, bool) {
					i := sort.Search(n, func(i int) bool { return keys[i] >= k })
					if i < n && keys[i] == k {
						return vals[i], true
					}
					return 0, false
				},
				ascend: func(from uint64, fn func(k, v uint64) bool) {
					i := sort.Search(n, func(i int) bool { return keys[i] >= from })
					for ; i < n; i++ {
						if !fn(keys[i], vals[i]) {
							return
						}
					}
				},
			}.add(e, fx, n, nil)
			return fx, nil
		},
	}
}

// btreeOpts are the options of govram's trees: -host-cache's tier where it
// was set.
func (e *env) btreeOpts() []collections.BTreeOption {
	if !e.cfg.hostCacheSet {
		return nil
	}
	return []collections.BTreeOption{collections.WithHostCache(int(e.cfg.hostCache))}
}
