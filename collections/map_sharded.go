package collections

// ShardedMap: one Map per device of a vmem.Pool, keys sharded by hash.
//
// Design:
//
//   - A key's shard is the high bits of hash×shards, where the hash is the
//     Map's kind of hash (mapMix for fixed-size keys, maphash for strings
//     and the rest, the caller's WithHasher mixed again) under a seed of
//     its own. Each shard's Map hashes with its own random seed, so the
//     keys of one shard are still spread evenly over that shard's buckets:
//     sharding by the bits the Map also uses for its home bucket would
//     leave most of every shard's table empty.
//   - A single Get, Put or Delete costs one hash more than a Map's (a few
//     nanoseconds) and touches one device.
//   - Batches (GetBatch, PutBatch, GetMany, PutMany) are split by shard
//     (batch_sharded.go) and every shard's part runs in its own goroutine,
//     so every GPU runs its batch kernel at the same time; the results are
//     put back in the batch's order.
//   - Shards never move keys between devices: a table grows on its own
//     device, and a shard whose device is full fails its Put with
//     ErrOutOfMemory even when another device has room (hashing spreads
//     keys evenly, so the devices fill together).

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"math"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"runtime"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/internal/route"
	"github.com/govram/govram/vmem"
)

// ShardedMap is a hash map spread over every device of a vmem.Pool: one
// Map per device, each key on the device its hash picks. Its methods are
// Map's, so moving a program from one GPU to all of them is a change of
// constructor (NewMap(dev, ...) to NewShardedMap(pool, ...)).
//
// Semantics and concurrency are Map's: any number of goroutines may call
// Get, GetMany, GetBatch, Len, All, Keys and Values at once; a write (Put,
// PutMany, PutBatch, Delete, Clear, Close) must not overlap with any other
// call. Batches start one goroutine per shard and wait for them.
//
// Errors of a batch that several shards ran are joined (errors.Is finds
// each); a shard that failed is unchanged as a Map is after that error,
// while the others have done their part: after a failed PutBatch every key
// holds its old or its new value.
type ShardedMap[K comparable, V any] struct {
	pool   *vmem.Pool
	shards []*Map[K, V]
	nd     uint64
	hk     mapHashKind
	seed   uint64
	mseed  maphash.Seed
	user   func(K) uint64
	strs   bool // K or V is a string type: scratch must drop its references
	closed bool
	writes int // writes so far, for the invariants check

	scratch sync.Pool // *shScratch[K, V]
	sidPool sync.Pool // *[]uint8: shard ids of GetBatch's direct path
}

// NewShardedMap makes an empty map with one shard on each device of pool.
// The options are NewMap's and apply to every shard, except that
// WithCapacity counts entries of the whole map (each shard is sized for
// its share, with room for the unevenness of hashing). WithHostCache's
// bytes are each shard's tier (Stats adds them up).
func NewShardedMap[K comparable, V any](pool *vmem.Pool, opts ...MapOption) (*ShardedMap[K, V], error) {
	if pool == nil {
		return nil, errors.New("collections: NewShardedMap: nil pool")
	}
	if err := pool.Usable(); err != nil {
		return nil, fmt.Errorf("collections: NewShardedMap: %w", err)
	}
	strK, strV, err := mapCheckTypes[K, V]()
	if err != nil {
		return nil, err
	}
	var cfg mapConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	var user func(K) uint64
	if cfg.hasher != nil {
		var ok bool
		if user, ok = cfg.hasher.(func(K) uint64); !ok {
			return nil, fmt.Errorf("collections: NewShardedMap: WithHasher got a %T, want a func(%v) uint64", cfg.hasher, reflect.TypeFor[K]())
		}
	}
	nd := pool.Len()
	shardOpts := append([]MapOption(nil), opts...)
	if cfg.capacity > 0 {
		// Each shard gets its share plus four standard deviations of a
		// binomial count, so that the first Capacity Puts grow no shard.
		share := float64(cfg.capacity) / float64(nd)
		per := int(share + 4*math.Sqrt(share) + 16)
		shardOpts = append(shardOpts, WithCapacity(per))
	}
	s := &ShardedMap[K, V]{
		pool:   pool,
		shards: make([]*Map[K, V], nd),
		nd:     uint64(nd),
		hk:     mapPickHash(reflect.TypeFor[K](), strK, user != nil),
		seed:   rand.Uint64(),
		mseed:  maphash.MakeSeed(),
		user:   user,
		strs:   strK || strV,
	}
	all := make([]int, nd)
	for d := range all {
		all[d] = d
	}
	// Shards are made at once: a large capacity is zeroed by each device.
	err = shRun(all, func(d int) error {
		m, err := NewMap[K, V](pool.Device(d), shardOpts...)
		s.shards[d] = m
		return err
	})
	if err != nil {
		for _, m := range s.shards {
			if m != nil {
				m.Close()
			}
		}
		return nil, fmt.Errorf("collections: NewShardedMap: %w", err)
	}
	return s, nil
}

// shardOf returns k's shard: the high bits of its hash times the shards.
func (s *ShardedMap[K, V]) shardOf(k *K) int {
	if s.nd == 1 {
		return 0
	}
	var h uint64
	p := unsafe.Pointer(k)
	switch s.hk {
	case mapHash8:
		// route's hash, which its vector loops compute eight at a time.
		return route.Shard8(*(*uint64)(p), s.seed, int(s.nd))
	case mapHash4:
		h = mapMix(uint64(*(*uint32)(p)), s.seed)
	case mapHashStr:
		h = maphash.String(s.mseed, *(*string)(p))
	case mapHash16:
		h = mapMix(*(*uint64)(p)^mapMix(*(*uint64)(unsafe.Add(p, 8)), s.seed), s.seed)
	case mapHash2:
		h = mapMix(uint64(*(*uint16)(p)), s.seed)
	case mapHash1:
		h = mapMix(uint64(*(*uint8)(p)), s.seed)
	case mapHash0:
		h = 0
	case mapHashMem:
		h = maphash.Bytes(s.mseed, unsafe.Slice((*byte)(p), unsafe.Sizeof(*k)))
	case mapHashComp:
		h = maphash.Comparable(s.mseed, *k)
	default:
		h = mapMix(s.user(*k), s.seed)
	}
	hi, _ := bits.Mul64(h, s.nd)
	return int(hi)
}

// check panics if a shard holds a key that routes to another shard. It
// walks every shard (a full scan of each table), so it runs on every
// shCheckEvery-th write only.
func (s *ShardedMap[K, V]) check() {
	if s.writes++; s.writes%shCheckEvery != 0 {
		return
	}
	for d, m := range s.shards {
		for k := range m.Keys() {
			if got := s.shardOf(&k); got != d {
				panic(fmt.Sprintf("collections: ShardedMap: key %v on shard %d routes to shard %d", k, d, got))
			}
		}
	}
}

func (s *ShardedMap[K, V]) live() {
	if s.closed {
		panic("collections: ShardedMap used after Close")
	}
}

// Pool returns the pool the map lives on.
func (s *ShardedMap[K, V]) Pool() *vmem.Pool { return s.pool }

// Shards returns the number of shards (the pool's devices).
func (s *ShardedMap[K, V]) Shards() int { return len(s.shards) }

// ShardLens returns the number of entries of each shard.
func (s *ShardedMap[K, V]) ShardLens() []int { return shLens(s.shards, s.closed) }

// Stats returns the shards' memory and hot tiers added up: every field of
// MapStats and of its CacheStats is the sum over the shards (the Cache's
// hit rate is then the whole map's). It is a read, as Map.Stats is.
func (s *ShardedMap[K, V]) Stats() MapStats {
	var st MapStats
	for _, sh := range s.ShardStats() {
		st.Len += sh.Len
		st.Capacity += sh.Capacity
		st.DeviceBytes += sh.DeviceBytes
		st.HostBytes += sh.HostBytes
		st.Cache = st.Cache.add(sh.Cache)
	}
	return st
}

// ShardStats returns each shard's Stats. It panics if the map is closed.
func (s *ShardedMap[K, V]) ShardStats() []MapStats {
	s.live()
	st := make([]MapStats, len(s.shards))
	for d, m := range s.shards {
		st[d] = m.Stats()
	}
	return st
}

// Len returns the number of entries (0 after Close).
func (s *ShardedMap[K, V]) Len() int { return shLen(s.shards, s.closed) }

// Err returns the first error met by a method without an error result on
// any shard (a device lost during Get, an iteration stopped by an error).
func (s *ShardedMap[K, V]) Err() error { return shErr(s.shards) }

// Get returns the value stored for k and whether there is one. It panics if
// the map is closed or a write is in progress.
func (s *ShardedMap[K, V]) Get(k K) (V, bool) {
	s.live()
	return s.shards[s.shardOf(&k)].Get(k)
}

// Put stores v for k, replacing any value k had. It fails as Map.Put does
// (ErrClosed, ErrOutOfMemory when k's shard must grow and its device has
// no room: the map is then unchanged).
func (s *ShardedMap[K, V]) Put(k K, v V) error {
	if s.closed {
		return ErrClosed
	}
	err := s.shards[s.shardOf(&k)].Put(k, v)
	if buildconst.Invariants {
		s.check()
	}
	return err
}

// Delete removes k and reports whether it was present. It panics if the map
// is closed.
func (s *ShardedMap[K, V]) Delete(k K) bool {
	s.live()
	ok := s.shards[s.shardOf(&k)].Delete(k)
	if buildconst.Invariants {
		s.check()
	}
	return ok
}

// Clear removes every entry and keeps the tables' memory. It panics if the
// map is closed.
func (s *ShardedMap[K, V]) Clear() {
	s.live()
	for _, m := range s.shards {
		m.Clear()
	}
}

// Close frees every shard's memory. It is idempotent; the map is invalid
// afterwards (as a closed Map: Get, Delete, Clear, GetMany and iteration
// panic, Put, PutMany, GetBatch and PutBatch return ErrClosed, Len returns
// 0).
func (s *ShardedMap[K, V]) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for d, m := range s.shards {
		if err := m.Close(); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// All returns every entry, shard after shard, each shard in its Map's
// order; the loop body may Put and Delete as with a Map (an entry added
// during the iteration may or may not be produced). An error ends the
// iteration early; Err reports it.
func (s *ShardedMap[K, V]) All() iter.Seq2[K, V] {
	s.live()
	return func(yield func(K, V) bool) {
		defer runtime.KeepAlive(s) // its shards stay s's until the sequence ends
		for _, m := range s.shards {
			before := m.Err()
			for k, v := range m.All() {
				if !yield(k, v) {
					return
				}
			}
			if m.Err() != nil && before == nil {
				return
			}
		}
	}
}

// Keys returns the keys in the order of All.
func (s *ShardedMap[K, V]) Keys() iter.Seq[K] {
	all := s.All()
	return func(yield func(K) bool) {
		for k := range all {
			if !yield(k) {
				return
			}
		}
	}
}

// Values returns the values in the order of All.
func (s *ShardedMap[K, V]) Values() iter.Seq[V] {
	all := s.All()
	return func(yield func(V) bool) {
		for _, v := range all {
			if !yield(v) {
				return
			}
		}
	}
}

// shCheckEvery: the invariants check walks the shards after every
// shCheckEvery-th write.
const shCheckEvery = 64

// shSmallBatch: batches smaller than this go key by key (splitting them
// would cost more than it saves).
const shSmallBatch = 64

func (s *ShardedMap[K, V]) getScratch(n int) *shScratch[K, V] {
	sc, _ := s.scratch.Get().(*shScratch[K, V])
	if sc == nil {
		sc = new(shScratch[K, V])
	}
	sc.size(n)
	return sc
}

// plan groups keys by shard.
func (s *ShardedMap[K, V]) plan(keys []K, sc *shScratch[K, V]) *shPlan {
	pl := shPlanRanges(len(keys), len(s.shards), sc.sid, s.shardFill(keys))
	shGroup(pl, keys, sc.keys)
	return pl
}

// GetMany looks up every key: vals[i] gets the value of keys[i] (the zero
// value if absent) and, when found is not nil, found[i] whether it is
// there. It returns the number found. vals and found must be at least as
// long as keys: GetMany panics if they are shorter (it has no error
// result; GetBatch returns an error matching ErrRange). The keys are split by shard and every shard looks up its
// part at once (Map.GetMany: streaming loads on all cores). It panics if
// the map is closed or a write is in progress.
func (s *ShardedMap[K, V]) GetMany(keys []K, vals []V, found []bool) int {
	s.live()
	if len(vals) < len(keys) || (found != nil && len(found) < len(keys)) {
		panic(fmt.Sprintf("collections: ShardedMap.GetMany: %d keys, %d values, %d found flags", len(keys), len(vals), len(found)))
	}
	if s.nd == 1 {
		return s.shards[0].GetMany(keys, vals, found)
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
		counts[d] = s.shards[d].GetMany(sc.keys[lo:hi], sc.vals[lo:hi], sc.found[lo:hi])
		return nil
	})
	shUngroupAnswers(pl, sc.vals, vals[:len(keys)], sc.found, found)
	total := 0
	for _, c := range counts {
		total += c
	}
	return total
}

// GetBatch looks up every key as GetMany does, with Map.GetBatch on each
// shard: on GPUs, every device's kernel probes its shard's keys at the
// same time, so a batch over D GPUs takes about 1/D of the time on one,
// plus the split (one pass over the keys on all cores). Errors: ErrClosed,
// a length error matching vmem.ErrRange, and the shards' errors, joined.
// GetBatch is a read: it may run together with other reads.
func (s *ShardedMap[K, V]) GetBatch(keys []K, vals []V, found []bool) error {
	if s.closed {
		return ErrClosed
	}
	if len(vals) < len(keys) || (found != nil && len(found) < len(keys)) {
		return fmt.Errorf("collections: ShardedMap.GetBatch: %d keys, %d values, %d found flags: %w", len(keys), len(vals), len(found), vmem.ErrRange)
	}
	if s.nd == 1 {
		return s.shards[0].GetBatch(keys, vals, found)
	}
	if len(keys) == 0 {
		return nil
	}
	if done, err := s.getBatchDirect(keys, vals, found); done {
		return err
	}
	sc := s.getScratch(len(keys))
	defer sc.release(&s.scratch, s.strs)
	pl := s.plan(keys, sc)
	err := shRun(pl.active(), func(d int) error {
		lo, hi := pl.run(d)
		var f []bool
		if found != nil {
			f = sc.found[lo:hi]
		}
		return s.shards[d].GetBatch(sc.keys[lo:hi], sc.vals[lo:hi], f)
	})
	if err != nil {
		return err
	}
	shUngroupAnswers(pl, sc.vals, vals[:len(keys)], sc.found, found)
	return nil
}

// getBatchDirect is GetBatch on GPUs without copies of its own: keys go
// from the batch straight into each shard's upload buffer, and answers
// from each shard's download buffer straight into vals and found; every
// device probes its part at the same time. The batch goes in rounds of up
// to mapGPUChunk keys (each shard's buffers hold a whole round, whatever
// its share), pipelined: while the devices probe round r+1, the CPU puts
// round r's answers in place and splits round r+2, both at once. It
// reports false (having done nothing) where a shard takes no kernels, and
// GetBatch then splits the batch through scratch.
func (s *ShardedMap[K, V]) getBatchDirect(keys []K, vals []V, found []bool) (bool, error) {
	if len(keys) < shSmallBatch {
		return false, nil
	}
	for _, m := range s.shards {
		if _, ok := m.gpuMode(); !ok || m.closed || m.writing || m.t == nil || !m.dev.KernelsAvailable() {
			return false, nil
		}
	}
	round := min(len(keys), mapGPUChunk)
	rounds := (len(keys) + round - 1) / round
	nd := len(s.shards)
	all := make([]int, nd)
	for d := range all {
		all[d] = d
	}
	// Device buffers for q = shGetQueued rounds: rounds r+1..r+q-1 on the
	// devices, and round r, whose answers are being placed while round
	// r+q's keys are written where r's keys were (the answers lie
	// elsewhere in the buffers). A round's plan (shard ids, layout) is its
	// own, of q+1: r's is read while r+q's is written and the others are
	// on the devices.
	q := shGetQueued
	sets := make([][]*mapGetJob[K, V], min(rounds, q))
	type roundPlan struct {
		jobs    []*mapGetJob[K, V]
		sid     *[]uint8
		pl      *shPlan
		kd      [][]K
		vd      [][]V
		fd      [][]bool
		lo, n   int
		flights []shFlight // started and not yet waited for
	}
	plans := make([]roundPlan, min(rounds, q+1))
	defer func() {
		// Also after an error or a panic on this goroutine (a WithHasher
		// function's, say): closing a job waits for its run in progress,
		// so no buffer goes back while a device uses it.
		for _, jobs := range sets {
			for _, j := range jobs {
				if j != nil {
					j.close()
				}
			}
		}
		for _, rp := range plans {
			if rp.sid != nil {
				s.sidPool.Put(rp.sid)
			}
		}
	}()
	for i := range sets {
		jobs := make([]*mapGetJob[K, V], nd)
		sets[i] = jobs
		err := shRun(all, func(d int) error {
			m := s.shards[d]
			if m.pending.Load() {
				m.flushForRead()
			}
			hmode, _ := m.gpuMode()
			j, err := m.gpuGetBegin(m.t, hmode, round)
			jobs[d] = j
			return err
		})
		if errors.Is(err, vmem.ErrNoKernels) {
			return false, nil
		}
		if err != nil {
			return true, err
		}
	}
	for i := range plans {
		rp := &plans[i]
		rp.sid = s.getSid(round)
		rp.kd, rp.vd, rp.fd = make([][]K, nd), make([][]V, nd), make([][]bool, nd)
	}
	// The steps show as regions in an execution trace (go tool trace).
	ctx := context.Background()
	// split starts round r's split, which finds its shards and writes its
	// keys into its set's upload buffers: it returns the pieces of a
	// one-pass split and the function that runs one (none where that split
	// does not apply), and finish, to call once every piece has run. After
	// a round that overflowed the one-pass split's regions, the rest of the
	// batch (keys that do not spread) goes to the two-pass split.
	fixed := true
	split := func(r int) (int, func(p int), func()) {
		rp := &plans[r%len(plans)]
		rp.jobs = sets[r%len(sets)]
		rp.lo = r * round
		rp.n = min(round, len(keys)-rp.lo)
		ks := keys[rp.lo : rp.lo+rp.n]
		twoPass := func() {
			rp.pl = shPlanRanges(rp.n, nd, *rp.sid, s.shardFill(ks))
			for _, d := range rp.pl.active() {
				a, b := rp.pl.run(d)
				rp.kd[d], rp.vd[d], rp.fd[d] = rp.jobs[d].keys(b-a), rp.jobs[d].vals(b-a), rp.jobs[d].found(b-a)
			}
			shScatter(rp.pl, ks, rp.kd)
		}
		if !fixed {
			return 0, nil, twoPass
		}
		pl, piece, overflowed := s.splitFixedParts(ks, *rp.sid, round, rp.jobs)
		if pl == nil {
			fixed = false
			return 0, nil, twoPass
		}
		finish := func() {
			if overflowed() {
				fixed = false
				twoPass()
				return
			}
			rp.pl = pl
			for d := range nd {
				a, b := pl.run(d)
				rp.vd[d], rp.fd[d] = rp.jobs[d].vals(b-a), rp.jobs[d].found(b-a)
			}
		}
		return len(pl.plo) - 1, piece, finish
	}
	// place returns the pieces that put round r's answers in batch order
	// and the function that runs one, or finish, which puts them all.
	place := func(r int) (int, func(p int), func()) {
		rp := &plans[r%len(plans)]
		var f []bool
		if found != nil {
			f = found[rp.lo : rp.lo+rp.n]
		}
		v := vals[rp.lo : rp.lo+rp.n]
		if unsafe.Sizeof(*new(V)) != 8 {
			return 0, nil, func() { shGatherAnswers(rp.pl, rp.vd, v, rp.fd, f) }
		}
		n, piece := shGather8Parts(rp.pl, rp.vd, v, rp.fd, f)
		return n, piece, func() {}
	}
	// cpu runs a place and a split (either may be absent: zero pieces, nil
	// finish) as one job on par's kept workers, whose threads spin between
	// jobs, where goroutines started for each pass wait for idle cores to
	// wake. A round of 2^21 keys on 16 cores of the H200 machine
	// (BenchmarkShardedMapGetBatchSteps): the split 0.34 ms on kept
	// workers against 0.53 on goroutines of its own, the place 0.26 against
	// 0.38, both at once 0.54.
	cpu := func(name string, pn int, pf func(int), pfin func(), sn int, sf func(int), sfin func()) {
		defer trace.StartRegion(ctx, name).End()
		par.Run(pn+sn, func(i int) {
			if i < pn {
				pf(i)
			} else {
				sf(i - pn)
			}
		})
		if pfin != nil {
			pfin()
		}
		if sfin != nil {
			sfin()
		}
	}
	// launch has every device probe round r's keys: each device's commands
	// are submitted from this goroutine, so that no core taken by the CPU's
	// passes holds a device back (a goroutine per device waited for a free
	// core before its submit, while the passes kept every core busy).
	launch := func(r int) error {
		defer trace.StartRegion(ctx, "govram.GetBatch.launch").End()
		rp := &plans[r%len(plans)]
		rp.flights = rp.flights[:0]
		for _, d := range rp.pl.active() {
			a, b := rp.pl.run(d)
			f, err := rp.jobs[d].start(b-a, found != nil)
			if err != nil {
				return fmt.Errorf("shard %d: %w", d, err)
			}
			rp.flights = append(rp.flights, shFlight{d, f})
		}
		return nil
	}
	wait := func(r int) error {
		defer trace.StartRegion(ctx, "govram.GetBatch.wait").End()
		rp := &plans[r%len(plans)]
		var errs []error
		for _, f := range rp.flights {
			if err := f.f.Wait(); err != nil {
				errs = append(errs, fmt.Errorf("shard %d: %w", f.d, err))
			}
		}
		rp.flights = rp.flights[:0]
		return errors.Join(errs...)
	}
	// q rounds are queued on the devices at a time: while the CPU places
	// round r and splits round r+q, the devices hold rounds r+1..r+q-1 and
	// start the next the moment one is done (the rounds use separate
	// buffers, so nothing orders them).
	for r := range min(rounds, q) {
		sn, sf, sfin := split(r)
		cpu("govram.GetBatch.split", 0, nil, nil, sn, sf, sfin)
		if err := launch(r); err != nil {
			return true, err
		}
	}
	for r := range rounds {
		if err := wait(r); err != nil {
			return true, err
		}
		pn, pf, pfin := place(r)
		var (
			sn   int
			sf   func(int)
			sfin func()
		)
		if r+q < rounds {
			sn, sf, sfin = split(r + q)
		}
		cpu("govram.GetBatch.place+split", pn, pf, pfin, sn, sf, sfin)
		if r+q < rounds {
			if err := launch(r + q); err != nil {
				return true, err
			}
		}
	}
	return true, nil
}

// shGetQueued is how many rounds of a ShardedMap.GetBatch are queued on
// the devices at a time (at least 2: one on the devices while the CPU
// places another). Each costs a set of round buffers per device.
var shGetQueued = 2

// shFlight is a shard's run in progress.
type shFlight struct {
	d int
	f *vmem.Flight
}

// splitFixed splits a round of 8-byte keys in one pass (route.Route8):
// each core writes its keys of each shard into a region of its own of
// that shard's upload buffer, so no core waits for a count of the others.
// The regions are of fixed size, so the devices take the whole buffer in
// one copy and probe the unused slots too (their answers are never read);
// that costs a few percent more transfer and saves a pass over the keys
// on the CPU. It returns nil, having decided nothing, for other keys, for
// rounds too small, or when some core's keys of one shard overflow their
// region (keys that hash unevenly: the two-pass split then does it).
func (s *ShardedMap[K, V]) splitFixed(ks []K, sid []uint8, capacity int, jobs []*mapGetJob[K, V]) *shPlan {
	pl, piece, overflowed := s.splitFixedParts(ks, sid, capacity, jobs)
	if pl == nil {
		return nil
	}
	goPar(len(pl.plo)-1, piece)
	if overflowed() {
		return nil
	}
	return pl
}

// splitFixedParts is splitFixed a piece at a time: it returns the plan
// (nil where the one-pass split does not apply), the function that splits
// piece p, and overflowed, which reports, once every piece has run,
// whether a piece overflowed a region (the plan is then void).
func (s *ShardedMap[K, V]) splitFixedParts(ks []K, sid []uint8, capacity int, jobs []*mapGetJob[K, V]) (*shPlan, func(p int), func() bool) {
	if s.hk != mapHash8 || unsafe.Sizeof(*new(K)) != 8 || len(ks) < shPieceMin {
		return nil, nil, nil
	}
	nd := len(s.shards)
	pieces, room := shFixedLayout(len(ks), nd)
	if pieces*room > capacity {
		return nil, nil, nil
	}
	pl := shPlanFixed(len(ks), nd, pieces, room, sid)
	dst := make([]unsafe.Pointer, nd)
	for d := range nd {
		dst[d] = unsafe.Pointer(unsafe.SliceData(jobs[d].keys(pieces * room)))
	}
	k8 := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(ks))), len(ks))
	seed := s.seed
	var full atomic.Bool
	piece := func(p int) {
		var cur, limit [shMaxShards]int
		for d := range nd {
			cur[d], limit[d] = p*room, (p+1)*room
		}
		lo, hi := pl.plo[p], pl.plo[p+1]
		if !route.Route8(k8[lo:hi], pl.sid[lo:hi], seed, dst, cur[:nd], limit[:nd]) {
			full.Store(true)
		}
	}
	return pl, piece, full.Load
}

// shardFill returns the shard-finding loop of shPlanRanges for keys: the
// common 8-byte keys go through route.Count8 (eight at a time where the
// CPU has AVX-512), the rest through shardOf.
func (s *ShardedMap[K, V]) shardFill(keys []K) func(lo, hi int, sid []uint8, cnt *[shMaxShards]int) {
	if s.hk == mapHash8 && unsafe.Sizeof(*new(K)) == 8 {
		ks := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(keys))), len(keys))
		seed, nd := s.seed, int(s.nd)
		return func(lo, hi int, sid []uint8, cnt *[shMaxShards]int) {
			route.Count8(ks[lo:hi], sid[lo:hi], seed, cnt[:nd])
		}
	}
	return func(lo, hi int, sid []uint8, cnt *[shMaxShards]int) {
		for i := lo; i < hi; i++ {
			d := s.shardOf(&keys[i])
			sid[i] = uint8(d)
			cnt[d]++
		}
	}
}

// getSid returns shard-id scratch of n bytes from the map's pool.
func (s *ShardedMap[K, V]) getSid(n int) *[]uint8 {
	p, _ := s.sidPool.Get().(*[]uint8)
	if p == nil {
		p = new([]uint8)
	}
	if cap(*p) < n {
		*p = make([]uint8, n)
	}
	*p = (*p)[:n]
	return p
}

// PutMany stores vals[i] for keys[i], in order (a key given twice keeps its
// later value); vals must be at least as long as keys. The keys are split
// by shard, keeping their order, and every shard stores its part at once
// (Map.PutMany). On error every key holds its old or its new value; a
// shard that ran out of memory left its keys not yet stored unchanged.
func (s *ShardedMap[K, V]) PutMany(keys []K, vals []V) error {
	return s.putBatch("PutMany", keys, vals, (*Map[K, V]).PutMany)
}

// PutBatch stores vals[i] for keys[i] with PutMany's semantics, with
// Map.PutBatch on each shard: on GPUs, every device's kernels store its
// shard's keys at the same time. Errors: ErrClosed, a length error matching
// vmem.ErrRange, and the shards' errors, joined; a shard that failed with
// ErrOutOfMemory is unchanged, the others stored their keys.
func (s *ShardedMap[K, V]) PutBatch(keys []K, vals []V) error {
	return s.putBatch("PutBatch", keys, vals, (*Map[K, V]).PutBatch)
}

func (s *ShardedMap[K, V]) putBatch(op string, keys []K, vals []V, put func(*Map[K, V], []K, []V) error) error {
	if s.closed {
		return ErrClosed
	}
	if len(vals) < len(keys) {
		return fmt.Errorf("collections: ShardedMap.%s: %d keys but %d values: %w", op, len(keys), len(vals), vmem.ErrRange)
	}
	if s.nd == 1 {
		return put(s.shards[0], keys, vals)
	}
	if len(keys) < shSmallBatch {
		for i := range keys {
			if err := s.Put(keys[i], vals[i]); err != nil {
				return err
			}
		}
		return nil
	}
	sc := s.getScratch(len(keys))
	defer sc.release(&s.scratch, s.strs)
	pl := s.plan(keys, sc)
	shGroup(pl, vals[:len(keys)], sc.vals)
	err := shRun(pl.active(), func(d int) error {
		lo, hi := pl.run(d)
		return put(s.shards[d], sc.keys[lo:hi], sc.vals[lo:hi])
	})
	if buildconst.Invariants {
		s.check()
	}
	return err
}
