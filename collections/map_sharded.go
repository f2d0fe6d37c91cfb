package collections

// A Map on a pool: one Map per device of a vmem.Pool, keys sharded by hash.
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
//   - A single Get, Put or Delete costs one hash more than on one device
//     (a few nanoseconds) and touches one device.
//   - Batches (GetBatch, PutBatch) are split by shard
//     (batch_sharded.go) and every shard's part runs in its own goroutine,
//     so every GPU runs its batch kernel at the same time; the results are
//     put back in the batch's order.
//   - Shards never move keys between devices: a table grows on its own
//     device, and a shard whose device is full fails its Put with
//     vmem.ErrOutOfMemory even when another device has room (hashing spreads
//     keys evenly, so the devices fill together).

import (
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"math"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync"
	"unsafe"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/route"
	"github.com/govram/govram/vmem"
)

// shardedMap is a Map on a vmem.Pool: one Map per device, each key on the
// device its hash picks. A Map made on a pool holds one and forwards every
// method to it (see the Map's doc for what a user sees).
type shardedMap[K comparable, V any] struct {
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

// newShardedMap makes an empty map with one shard on each device of pool.
// The options apply to every shard, except that WithCapacity counts
// entries of the whole map (each shard is sized for its share, with room
// for the unevenness of hashing). WithHostCache's bytes are each shard's
// tier (Stats adds them up).
func newShardedMap[K comparable, V any](pool *vmem.Pool, opts ...MapOption) (*shardedMap[K, V], error) {
	var devs []*vmem.Device
	if pool != nil {
		devs = pool.Devices()
	}
	if len(devs) == 0 {
		return nil, errors.New("collections: NewMap: nil or empty pool")
	}
	if err := pool.Err(); err != nil {
		return nil, fmt.Errorf("collections: NewMap: %w", err)
	}
	strK, strV, err := mapCheckTypes[K, V]()
	if err != nil {
		return nil, err
	}
	var cfg mapConfig
	for _, o := range opts {
		if o != nil {
			o.applyMap(&cfg)
		}
	}
	var user func(K) uint64
	if cfg.hasher != nil {
		var ok bool
		if user, ok = cfg.hasher.(func(K) uint64); !ok {
			return nil, fmt.Errorf("collections: NewMap: WithHasher got a %T, want a func(%v) uint64", cfg.hasher, reflect.TypeFor[K]())
		}
	}
	nd := len(devs)
	shardOpts := append([]MapOption(nil), opts...)
	if cfg.capacity > 0 {
		// Each shard gets its share plus four standard deviations of a
		// binomial count, so that the first Capacity Puts grow no shard.
		share := float64(cfg.capacity) / float64(nd)
		per := int(share + 4*math.Sqrt(share) + 16)
		shardOpts = append(shardOpts, WithCapacity(per))
	}
	s := &shardedMap[K, V]{
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
		m, err := newMap[K, V](devs[d], shardOpts...)
		s.shards[d] = m
		return err
	})
	if err != nil {
		for _, m := range s.shards {
			if m != nil {
				m.Close()
			}
		}
		return nil, fmt.Errorf("collections: NewMap: %w", err)
	}
	return s, nil
}

// mapOnPool returns the Map that forwards to s. Its pending and err are
// set for good, so that Len and Err, whose inlined bodies test them, go
// to their out-of-line parts, which forward (Map.sh).
func mapOnPool[K comparable, V any](s *shardedMap[K, V]) *Map[K, V] {
	m := &Map[K, V]{sh: s}
	m.pending.Store(true)
	var none error
	m.err.Store(&none)
	return m
}

// shardOf returns k's shard: the high bits of its hash times the shards.
func (s *shardedMap[K, V]) shardOf(k *K) int {
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
func (s *shardedMap[K, V]) check() {
	if s.writes++; s.writes%shCheckEvery != 0 {
		return
	}
	for d, m := range s.shards {
		for k := range m.All() {
			if got := s.shardOf(&k); got != d {
				panic(fmt.Sprintf("collections: Map: key %v on shard %d routes to shard %d", k, d, got))
			}
		}
	}
}

func (s *shardedMap[K, V]) live() {
	if s.closed {
		panic("collections: Map used after Close")
	}
}

// Stats returns the shards' memory and hot tiers added up: every field of
// MapStats and of its CacheStats is the sum over the shards (the Cache's
// hit rate is then the whole map's), and Shards holds each shard's own.
// It is a read, as a Map's Stats is.
func (s *shardedMap[K, V]) Stats() MapStats {
	st := MapStats{Shards: s.shardStats()}
	for i := range st.Shards {
		sh := &st.Shards[i]
		st.Len += sh.Len
		st.Capacity += sh.Capacity
		st.DeviceBytes += sh.DeviceBytes
		st.HostBytes += sh.HostBytes
		st.Cache = st.Cache.add(sh.Cache)
		st.addBatch(sh)
		st.CombinedGets += sh.CombinedGets
	}
	return st
}

// shardStats returns each shard's Stats. It panics if the map is closed.
func (s *shardedMap[K, V]) shardStats() []MapStats {
	s.live()
	st := make([]MapStats, len(s.shards))
	for d, m := range s.shards {
		st[d] = m.Stats()
	}
	return st
}

// Len returns the number of entries (0 after Close).
func (s *shardedMap[K, V]) Len() int { return shLen(s.shards, s.closed) }

// Err returns the first error met by a method without an error result on
// any shard (a device lost during Get, an iteration stopped by an error).
func (s *shardedMap[K, V]) Err() error { return shErr(s.shards) }

// Get returns the value stored for k and whether there is one. It panics if
// the map is closed or a write is in progress.
func (s *shardedMap[K, V]) Get(k K) (V, bool) {
	s.live()
	return s.shards[s.shardOf(&k)].Get(k)
}

// Put stores v for k, replacing any value k had. It fails as Map.Put does
// (vmem.ErrClosed, vmem.ErrOutOfMemory when k's shard must grow and its device has
// no room: the map is then unchanged).
func (s *shardedMap[K, V]) Put(k K, v V) error {
	if s.closed {
		return vmem.ErrClosed
	}
	err := s.shards[s.shardOf(&k)].Put(k, v)
	if buildconst.Invariants {
		s.check()
	}
	return err
}

// Delete removes k from its shard, as Map.Delete.
func (s *shardedMap[K, V]) Delete(k K) (V, bool, error) {
	if s.closed {
		var zero V
		return zero, false, vmem.ErrClosed
	}
	old, ok, err := s.shards[s.shardOf(&k)].Delete(k)
	if buildconst.Invariants {
		s.check()
	}
	return old, ok, err
}

// Clear removes every entry and keeps the tables' memory. It returns
// ErrClosed after Close.
func (s *shardedMap[K, V]) Clear() error {
	if s.closed {
		return fmt.Errorf("collections: Map.Clear: %w", vmem.ErrClosed)
	}
	s.live()
	for _, m := range s.shards {
		if err := m.Clear(); err != nil {
			return err
		}
	}
	return nil
}

// Close frees every shard's memory. It is idempotent; the map is invalid
// afterwards (as a closed Map: Get, Delete and iteration panic, Put,
// GetBatch, PutBatch and Clear return vmem.ErrClosed, Len returns
// 0).
func (s *shardedMap[K, V]) Close() error {
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
func (s *shardedMap[K, V]) All() iter.Seq2[K, V] {
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

// shCheckEvery: the invariants check walks the shards after every
// shCheckEvery-th write.
const shCheckEvery = 64

// shSmallBatch: batches smaller than this go key by key (splitting them
// would cost more than it saves).
const shSmallBatch = 64

func (s *shardedMap[K, V]) getScratch(n int) *shScratch[K, V] {
	sc, _ := s.scratch.Get().(*shScratch[K, V])
	if sc == nil {
		sc = new(shScratch[K, V])
	}
	sc.size(n)
	return sc
}

// plan groups keys by shard.
func (s *shardedMap[K, V]) plan(keys []K, sc *shScratch[K, V]) *shPlan {
	pl := shPlanRanges(len(keys), len(s.shards), sc.sid, s.shardFill(keys))
	shGroup(pl, keys, sc.keys)
	return pl
}

// shardFill returns the shard-finding loop of shPlanRanges for keys: the
// common 8-byte keys go through route.Count8 (eight at a time where the
// CPU has AVX-512), the rest through shardOf.
func (s *shardedMap[K, V]) shardFill(keys []K) func(lo, hi int, sid []uint8, cnt *[shMaxShards]int) {
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

// putMany stores vals[i] for keys[i], in order (a key given twice keeps its
// later value); vals must be at least as long as keys. The keys are split
// by shard, keeping their order, and every shard stores its part at once
// (Map.putMany). On error every key holds its old or its new value; a
// shard that ran out of memory left its keys not yet stored unchanged.
func (s *shardedMap[K, V]) putMany(keys []K, vals []V) error {
	return s.putBatch("PutMany", keys, vals, (*Map[K, V]).putMany)
}

// PutBatch stores vals[i] for keys[i] with putMany's semantics, with
// Map.PutBatch on each shard: on GPUs, every device's kernels store its
// shard's keys at the same time. Errors: vmem.ErrClosed, a length error matching
// vmem.ErrRange, and the shards' errors, joined; a shard that failed with
// vmem.ErrOutOfMemory is unchanged, the others stored their keys.
func (s *shardedMap[K, V]) PutBatch(keys []K, vals []V) error {
	return s.putBatch("PutBatch", keys, vals, (*Map[K, V]).PutBatch)
}

func (s *shardedMap[K, V]) putBatch(op string, keys []K, vals []V, put func(*Map[K, V], []K, []V) error) error {
	if s.closed {
		return vmem.ErrClosed
	}
	if len(vals) < len(keys) {
		return fmt.Errorf("collections: Map.%s: %d keys but %d values: %w", op, len(keys), len(vals), vmem.ErrRange)
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
