package collections

// Map is a hash map whose entries live in device memory: a swap-in for a
// Go map[K]V that holds billions of entries in VRAM, off the Go heap.
//
// # Design
//
// The table is open addressing over buckets, with the control bytes on the
// host and the slots in VRAM:
//
//   - A bucket is one 64-byte line of slots (four uint64→uint64 pairs, as
//     many records as layout.Record fits, at most eight), or one record
//     of whole lines when records are larger. Records never straddle lines,
//     so a slot is read with one streaming load.
//   - Each slot has one control byte in host memory (vmem.Host, off the Go
//     heap): seven bits of the key's hash when full, or empty, or deleted.
//     The bytes of a bucket are read as one word and matched without a loop
//     (SWAR). A miss usually ends in host memory without touching VRAM; a
//     hit reads exactly the line that holds the key. At most one byte per
//     slot, at loads of 1/2 to 7/8, is 1.1 to 2 bytes of host memory per
//     entry.
//   - The home bucket is the high bits of hash×buckets, so the home line's
//     address follows from the hash alone: the CPU can start loading it
//     (under a predicted branch) while the control bytes are still coming
//     from DRAM, and the two waits overlap.
//   - Probing is linear over buckets and stops at a bucket with an empty
//     slot. Instead of wrapping around, the table ends in a tail of
//     overflow buckets, so it stays sorted by hash: growth streams the old
//     table into the new one in order, and iteration resumes by hash.
//   - Stores go through a lines.Batcher: merged by line, sorted by
//     address, written as whole lines where possible. Pending stores are
//     flushed by the first read that follows them (or at the end of a
//     PutBatch), so a single Put costs no round trip.
//   - Growth allocates the new table, reads the old slots in large chunks
//     by DMA into pinned host memory (far faster than CPU loads:
//     docs/physics.md), rehashes in host memory into a window of the new
//     table, and writes each finished window out sequentially. The old
//     table stays intact until the new one is complete, so a failed growth
//     (out of memory) leaves the map unchanged.
//   - String keys and values keep their bytes in a strarena.Arena in VRAM.
//     The record holds the full hash of a string key, the lengths, and as
//     many bytes as fit (44 of a key with a uint64 value); longer strings
//     keep the rest in the arena, so a hit on a short key still reads one
//     line and the Go heap holds no string of the map.
//   - On the host backend the slots are ordinary memory and are read with
//     plain loads; mapped VRAM is read with streaming loads only; private
//     VRAM (used when the mapped tier is full) by DMA.
//
// See docs/map.md for the method table and the costs.

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/collections/internal/strarena"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/held"
	"github.com/govram/govram/internal/recs"
	"github.com/govram/govram/vmem"
)

// Map is a hash map with its entries in device memory. Create it with
// NewMap on a device or a pool; the zero Map is not usable.
//
// Semantics are a Go map's: Put overwrites, Delete of a missing key does
// nothing, keys unequal to themselves (NaN) can be stored but never found.
// K is any comparable type without pointers, or a string type; V is any
// type without pointers, or a string type. String bytes are stored in the
// device, never on the Go heap.
//
// Concurrency: any number of goroutines may read at once; a write must not
// overlap with any other call, as with a Go map (synchronise with a
// sync.RWMutex or a channel). A Get that sees a write in progress panics,
// and the race detector reports the overlap. Inside a range over All the loop body may write to the map itself, as with a Go map.
//
// Concurrency, as in the table of docs/guide.md (for a map on one device
// and on a pool alike):
//   - at the same time: Get, Has, GetBatch, Len, All, Stats, Err, Save
//   - alone: Put, PutBatch, Delete, Clear, Close
//
// On a pool (NewMap(pool, ...)) the map keeps one table per device and
// puts each key on the device its hash picks; its methods and semantics
// are the same, so moving a program from one GPU to all of them is a
// change of the value passed, not of the code. A single Get, Put or Delete
// costs one hash more and touches one device. Batches (GetBatch, PutBatch)
// are split by shard and run one goroutine per device,
// so every GPU works at once; their errors are joined (errors.Is finds
// each), and a shard that failed is unchanged as a map on one device is
// after that error, while the others have done their part: after a failed
// PutBatch every key holds its old or its new value. Keys never move
// between devices, so a device that is full fails its Puts with
// vmem.ErrOutOfMemory even when another has room (hashing fills the devices
// together). WithCapacity counts the entries of the whole map;
// WithHostCache's bytes are each device's hot tier. Stats adds the shards
// up and lists each in MapStats.Shards; All yields shard after shard.
//
// Device loss: reads without an error result (Get, Has, All) panic with an error matching vmem.ErrDeviceLost rather than report a
// key absent; GetBatch and Save return the loss instead. On a pool this
// holds shard by shard.
type Map[K comparable, V any] struct {
	// sh is the map when it lives on a pool: every exported method
	// forwards to it, and the fields below stay zero but for pending and
	// err (mapOnPool). The single-device paths then pay nothing for it:
	// t is nil, so the check that catches a closed map also catches this
	// one, and Len and Err find pending and err set, so they go out of
	// line, where they forward, and stay small enough to inline.
	sh *shardedMap[K, V]

	dev   *vmem.Device
	r     mapRec
	strK  bool
	strV  bool
	hk    mapHashKind
	seed  uint64
	mseed maphash.Seed
	user  func(K) uint64
	cfg   mapConfig

	t     *mapTable
	n     int
	arena *strarena.Arena

	// pending: the table's batcher holds stores that memory does not have
	// yet. A reader that sees it flushes under flushMu. Loading it is a
	// plain move on amd64, so the read path pays no locked instruction.
	pending atomic.Bool
	flushMu sync.Mutex

	// writing is set for the length of every write. Reads check it, which
	// catches most overlaps at run time and makes every overlap a data race
	// the race detector reports.
	writing bool
	version uint64 // writes so far: iterators notice writes in their loop body
	closed  bool
	err     atomic.Pointer[error]
	held    *owner         // the map's memory, freed by Close or the backstop
	gauge   unsafe.Pointer // the Get combining gauge (map_getcomb.go), in held
	unreg   func()         // removes the map from the device's AtClose list

	gpu mapGPU // the device copy of the control bytes for batch kernels (map_gpu.go)

	wb    mapWB[K, V]  // Puts recorded, not yet stored (map_wb.go)
	iters atomic.Int32 // iterations running: their loop bodies' Puts go direct

	tier *tierCore      // hot entries in host memory (map_tier.go); nil: none
	tvar bool           // the tier's slots have the string layout
	comb *getComb[K, V] // combining of concurrent Gets (map_getcomb.go); nil: none

	scratch []byte // writer's image of one bucket
	enc     []byte // writer's image of one record being stored
}

// MapOption configures NewMap and LoadMap: WithCapacity, WithHasher,
// WithHostCache.
type MapOption interface{ applyMap(*mapConfig) }

// mapOpt is a MapOption of its own function.
type mapOpt func(*mapConfig)

func (f mapOpt) applyMap(c *mapConfig) { f(c) }

type mapConfig struct {
	capacity   int
	hasher     any    // func(K) uint64
	segBuckets uint64 // buckets per segment (a power of two); tests set it
	plain      bool   // read mapped VRAM with plain loads: the naive path
	noWB       bool   // Puts go straight to the table (tests, benchmarks)
	batchLines int    // store batch in lines
	cache      int    // hot tier budget in bytes (WithHostCache)
	cacheSet   bool   // cache was given
}

// WithCapacity sizes the table for n entries, so that the first n Puts do
// not grow it. Where the table is in device memory, n entries fill it only
// to a load at which a key nearly always lies in its home bucket, so that
// a map holding what it was made for still costs one round trip per Get;
// Puts keep their deferred path (map_wb.go) up to n entries and beyond.
func WithCapacity(n int) MapOption { return mapOpt(func(c *mapConfig) { c.capacity = n }) }

// WithHasher replaces the built-in hash of keys with h. The map mixes h's
// result further, so a fast hash of modest quality is enough; it must be
// deterministic, equal for equal keys, and safe to call from several
// goroutines at once (GetBatch and PutBatch do). K must be the map's key
// type, or NewMap fails.
func WithHasher[K comparable](h func(K) uint64) MapOption {
	return mapOpt(func(c *mapConfig) {
		if h != nil {
			c.hasher = h
		}
	})
}

// mapEagerLoad makes Get load the home line before the control bytes
// arrive, whatever the branch predictor would guess: a knob for
// measurements (a miss then also costs a VRAM line).
var mapEagerLoad = false

// mapCtrlFirst makes Get wait for the control bytes before it loads a
// bucket of mapped VRAM (a knob for measurements); mapZeroDep is 0, read
// at run time, so that the load's address depends on them.
var (
	mapCtrlFirst = false
	mapZeroDep   uint64
)

// NewMap returns an empty map on mem: a *vmem.Device, or a *vmem.Pool
// whose devices the map spreads over (see Map). K and V must hold no
// pointers (vmem.ErrPointerType names the field that does), except that either
// may be a string type. It fails with vmem.ErrOutOfMemory when the first table
// does not fit.
func NewMap[K comparable, V any](mem vmem.Memory, opts ...MapOption) (*Map[K, V], error) {
	dev, pool, err := memoryOf(mem)
	if err != nil {
		return nil, fmt.Errorf("collections: NewMap: %w", err)
	}
	if pool != nil {
		s, err := newShardedMap[K, V](pool, opts...)
		if err != nil {
			return nil, err
		}
		return mapOnPool(s), nil
	}
	return newMap[K, V](dev, opts...)
}

// memoryOf tells a device from a pool, for every constructor and loader of
// the package; a nil Memory, or a nil pointer in one, is an error matching
// vmem.ErrNoDevice rather than a later panic.
func memoryOf(mem vmem.Memory) (*vmem.Device, *vmem.Pool, error) {
	switch m := mem.(type) {
	case *vmem.Device:
		if m != nil {
			return m, nil, nil
		}
	case *vmem.Pool:
		if m != nil {
			return nil, m, nil
		}
	}
	return nil, nil, fmt.Errorf("nil device or pool: %w", vmem.ErrNoDevice)
}

// newMap returns an empty map on dev (NewMap).
func newMap[K comparable, V any](dev *vmem.Device, opts ...MapOption) (*Map[K, V], error) {
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
	if buildconst.Invariants && cfg.batchLines == 0 {
		// The batcher checks itself after every store in invariants
		// builds, at a cost that grows with its size.
		cfg.batchLines = 64
	}
	var zk K
	var zv V
	m := &Map[K, V]{
		dev:   dev,
		r:     mapLayout(unsafe.Sizeof(zk), unsafe.Alignof(zk), unsafe.Sizeof(zv), unsafe.Alignof(zv), strK, strV),
		strK:  strK,
		strV:  strV,
		hk:    mapPickHash(reflect.TypeFor[K](), strK, user != nil),
		seed:  rand.Uint64(),
		mseed: maphash.MakeSeed(),
		user:  user,
		cfg:   cfg,
		held:  newOwner(dev),
	}
	m.scratch = mapAligned(m.r.bucket)
	m.enc = mapAligned(m.r.size)
	held.Attach(m, m.held)
	if strK || strV {
		if m.arena, err = strarena.New(dev, strarena.Options{}); err != nil {
			return nil, err
		}
	}
	nb := m.bucketsFor(max(cfg.capacity, 8))
	if cfg.capacity > 0 && kdev(dev).OnGPU() {
		nb = m.bucketsForFast(cfg.capacity)
	}
	if m.t, err = m.newTable(nb, mapTailFor(nb)); err != nil {
		if m.arena != nil {
			m.arena.Close()
		}
		return nil, err
	}
	m.wbInit()
	m.tierInit()
	m.getCombInit()
	m.unreg = lcAtClose(dev, m, (*Map[K, V]).Close)
	return m, nil
}

// mapAligned returns n zero bytes aligned for any field type.
func mapAligned(n uintptr) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

// Len returns the number of entries.
func (m *Map[K, V]) Len() int {
	if m.pending.Load() {
		return m.lenSlow() // a map on a pool comes here too (Map.sh)
	}
	return m.n
}

// lenSlow is Len's out-of-line part: stores pending, or a map on a pool.
func (m *Map[K, V]) lenSlow() int {
	if m.sh != nil {
		return m.sh.Len()
	}
	m.flushForRead() // recorded Puts may be new keys or not
	return m.n
}

// Err returns the first error met by a method that has no error result: a
// device lost during Get, or an iteration stopped by an error.
func (m *Map[K, V]) Err() error {
	if m.err.Load() != nil {
		return m.errSlow() // a map on a pool comes here too (Map.sh)
	}
	return nil
}

// errSlow is Err's out-of-line part: an error kept, or a map on a pool.
func (m *Map[K, V]) errSlow() error {
	if m.sh != nil {
		return m.sh.Err()
	}
	return *m.err.Load()
}

func (m *Map[K, V]) setErr(err error) { m.err.CompareAndSwap(nil, &err) }

// mapLine is a line buffer aligned for any record.
type mapLine struct {
	_ [0]uint64
	b [recs.LineSize]byte
}

// Clear removes every entry and keeps the table's memory, like Go's clear.
// As every container's Clear, it returns vmem.ErrClosed after Close and the
// device's error after a loss, with the map unchanged.
func (m *Map[K, V]) Clear() error {
	if m.sh != nil {
		return m.sh.Clear()
	}
	if err := m.mapUsable(); err != nil {
		return fmt.Errorf("collections: Map.Clear: %w", err)
	}
	t := m.t
	if m.writing {
		m.badWrite()
	}
	m.writing = true
	if t.bat != nil {
		t.bat.Discard()
	}
	m.wbDrop()
	m.pending.Store(false)
	m.clearFP(t)
	m.n = 0
	if m.arena != nil {
		m.arena.Reset()
	}
	if m.tier != nil {
		m.tier.invalidateAll()
	}
	m.writing = false
	m.version++
	if buildconst.Invariants {
		m.mustCheck()
	}
	return nil
}

// Close frees the map's memory. It is idempotent; the map is invalid
// afterwards: Get, Has and iteration panic, Put, Delete, GetBatch,
// PutBatch and Clear return vmem.ErrClosed, Len returns 0.
func (m *Map[K, V]) Close() error {
	if m.sh != nil {
		return m.sh.Close()
	}
	if m.closed {
		return nil
	}
	if m.writing {
		m.badWrite()
	}
	m.closed = true
	if m.unreg != nil {
		m.unreg()
	}
	if t := m.t; t != nil {
		if t.bat != nil {
			t.bat.Discard()
		}
		m.wbDrop()
		m.wbFree()
		m.pending.Store(false)
		m.freeTable(t)
		m.t = nil
	}
	m.tierFree()
	if m.held != nil {
		m.held.FreeAll() // what is left: the combining gauge
	}
	m.n = 0
	if m.arena != nil {
		return m.arena.Close()
	}
	return nil
}
