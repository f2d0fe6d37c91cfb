package collections

// BTree is a B+tree whose leaves live in device memory and whose upper
// levels live in host memory outside the Go heap. The design follows the
// costs measured in docs/physics.md: a streaming load of one mapped-VRAM
// line costs a few host cache misses, and a DMA a large fixed start cost
// before it moves bulk data at the link's speed.
//
// # Leaves
//
// A leaf holds up to E entries as two arrays, keys then values, placed by
// lines.NewNodeLayout: every key array starts on a line and takes the
// fewest lines, so finding a slot costs one streaming load of the lines that
// hold the leaf's keys (E is chosen so that these are at most four: 32
// uint64 keys). Values sit in their own lines, spaced by layout.Record so
// that a value of up to 64 bytes never straddles two lines: reading the
// value found costs one more line. Keys are stored as a Go array (no
// padding), so the loaded lines are searched in place without unpacking. A
// uint64→uint64 leaf is 8 lines (512 bytes).
//
// A leaf has no header in VRAM: its entry count lives in the host index
// beside its separator key, so a lookup knows how many key lines to load
// before it touches VRAM, and loads no line that holds no live key.
//
// # Host index
//
// The upper levels are an ordinary B+tree of fan-out 64 in vmem.Host blocks
// (off the Go heap). Its bottom nodes hold, per leaf, the separator key (a
// lower bound of the leaf's keys), the leaf's id (4 bytes), its count (1
// byte) and, for integer keys, a 4-byte hint (btree_hint.go) that names the
// key line holding a given key: 17 bytes per leaf of up to 32 uint64
// entries, which keeps host memory under one byte per entry (0.6 after
// BulkLoad, about 0.85 after random inserts). A lookup walks the host index
// (no VRAM), then loads the hinted key line and the line of its values
// together: one round trip of two lines, whatever the keys' spread. Other
// keys (a less function) load the leaf's key lines, then the value line.
//
// # Extents: leaves in key order
//
// Range scans are fast only if the leaves they need lie together, so that
// one DMA brings them all: a DMA's fixed start cost (docs/physics.md)
// means a scan must read mebibytes per transfer to approach the link's
// speed, while fetching a leaf at a time pays that cost for each leaf.
// Leaves are therefore allocated in extents: blocks of about 4 MiB (8192
// leaves of 512 bytes), each holding the leaves of one contiguous key
// range in any order. A new leaf from a split goes into the extent of the
// leaf it came from; a full extent is split in two by one GPU copy of the
// block (VRAM to VRAM, several times the link's speed: docs/physics.md)
// after which the upper half of its key range is addressed in the copy:
// no leaf is moved one by one, and the cost (one copy per thousand leaf
// splits) vanishes per insert. A scan walks the host index in key
// order, groups the leaves it needs by extent, and reads each group either
// by one DMA of its span into pinned host memory or, for a few leaves, by
// streaming loads, as the access planner decides; up to three DMAs are in
// flight while the callback consumes the oldest window. Appending in key
// order (BulkLoad, ascending inserts) fills fresh extents front to back;
// BulkLoad writes its leaves from several goroutines at once.
//
// # Hot tier
//
// Whole leaves that are read often are copied into host memory
// (btree_tier.go, on tier.go's sets and admission), keyed by leaf id: a
// Get whose leaf is there reads no device memory, and a short scan reads
// the leaves it finds there from host memory. Every write to a leaf drops
// its copy, so a copy is always clean. WithHostCache sizes the tier;
// it is on by default on the Vulkan backend.
//
// # Stores
//
// Stores to mapped VRAM go through a lines.Batcher: pending lines merge
// (ascending inserts rewrite the same lines of one leaf many times) and
// leave sorted, as whole lines with non-temporal stores. A writer reads
// through the batcher; the first reader after a write flushes it. Private
// (DMA-only) leaves, used when mapped VRAM runs out, are read and written
// by DMA. On the host backend all memory is ordinary and is read and written
// with plain loads and stores.

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/collections/internal/strarena"
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/held"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/layout"
	"github.com/govram/govram/vmem"
)

// ErrUnsorted is returned by BTree.BulkLoad when the keys are not strictly
// ascending or do not all lie above the tree's maximum. Nothing changed.
var ErrUnsorted = errors.New("collections: keys not strictly ascending")

// BTree is an ordered map from K to V with its leaves in device memory and
// its index in host memory, with the vocabulary of google/btree's BTreeG
// adapted to keys and values, and Go iterators for its scans (All,
// Backward, Range, Ascend, Descend). K and V must hold no pointers;
// either may also be a string type, whose bytes are kept in device memory
// (keys: see btree_strkey.go and docs/btree.md).
//
// Concurrency: any number of goroutines may read at once; a method that
// changes the tree must not overlap with any other call. The body of a
// loop over a scan (All, Range, Ascend, ...) must not change the tree: a
// write there panics at the scan's next step (the write itself is kept).
// The zero value is not usable: make a tree with NewBTree.
//
// Concurrency, as in the table of docs/guide.md:
//   - at the same time: Get, Has, GetBatch, Min, Max, Len, All, Backward, Range, Ascend, Descend, Stats, Err, Save
//   - alone: Put, ReplaceOrInsert, Delete, DeleteMin, DeleteMax, BulkLoad, Clear, Close
//
// A BTree is invalid after Close: methods with an error result return
// vmem.ErrClosed, the others panic.
//
// Device loss: reads without an error result (Get, Has, Min, Max, All,
// Backward, Range, Ascend and Descend) panic with an error
// matching vmem.ErrDeviceLost rather than report a key absent or end
// early; GetBatch, DeleteMin, DeleteMax and Save return the loss instead.
//
// # Pools
//
// A tree made on a *vmem.Pool (NewBTree(pool, ...)) is spread over every
// device of the pool: one tree per device, each holding one range of keys
// (btree_sharded.go). Its methods and their rules are the same; a
// single-key operation costs one binary search over the ranges' bounds
// more, BulkLoad loads every device's range at once, GetBatch splits its
// keys by device and every device searches its part at once, and scans
// visit the devices in key order, only those the range overlaps. The
// bounds are fixed once chosen: by WithSplits, or by the first BulkLoad
// of enough keys (quantiles of the loaded keys). Until then every key
// lives on the pool's first device, and keys never move between devices.
// Stats adds the devices' figures up and lists each in Stats().Shards; a
// lost device's part reports the loss as on one device.
type BTree[K, V any] struct {
	dev  *vmem.Device
	less func(a, b K) bool
	kk   btKeyKind // ordered fast path for integer keys, btKGeneric otherwise
	hint bool      // the index keeps a hint per leaf (btree_hint.go)

	g   btGeom
	idx btIndex[K]
	lv  btLeaves
	n   int

	// dirty: the batcher holds stores that readers must not miss. Readers
	// test it with one atomic load (a plain MOV on amd64, which does not
	// serialise VRAM loads) and flush under syncMu when set.
	dirty  atomic.Bool
	syncMu sync.Mutex

	errMu sync.Mutex
	err   error // first error met by a method without an error result

	scans btScans // scan states with pinned buffers, reused
	// reading counts the windows whose leaves are being streamed from the
	// device now, by any goroutine: a window is read in parts only while
	// few are (btree_split.go).
	reading atomic.Int32

	img    [3][]uint64 // writer scratch: leaf images (only when not in place)
	closed bool
	// writes counts the calls of writing methods, so that a scan can tell
	// that the tree changed under it (a write in the loop body).
	writes uint64
	rt     btRoute // GetBatch's device copy of the index's bottom (btree_route.go)
	mem    *owner  // the tree's memory, freed by Close or the backstop
	unreg  func()  // removes the tree from the device's AtClose list

	// strV: V is a string type; leaves hold the strings' handles in arena.
	strV  bool
	arena *strarena.Arena

	// The hot tier (btree_tier.go) lives in lv.hot; cache is the budget
	// WithHostCache set (cacheSet), tierEpoch the lv.epoch the
	// tier's size was last chosen at.
	cache     int
	cacheSet  bool
	tierEpoch uint64
	// wOffers counts the writes of leaves the tier did not hold, which
	// offer their leaf as a miss does (sampled: tierWritten).
	wOffers uint32
	// imgReads counts the leaf images writes read from the device (tests
	// and benchmarks: the reads the tier spares writes).
	imgReads uint64

	// et is the entry tier (btree_tier.go): copies of hot (key, value)
	// pairs, keyed by the key's order bits mixed with etSeed. nil unless
	// the keys are integers (NewBTreeOrdered) and V has a fixed size.
	et     *tierCore
	etSeed uint64

	// sk: K is a string type; the tree is a shell over sk.in, a tree of
	// fixed-size key records (btree_strkey.go).
	sk *btSK[K, V]

	// sh: the tree lives on a pool (btree_sharded.go); every exported
	// method forwards to it, and the fields above stay zero.
	sh *shardedBTree[K, V]
}

// BTreeOption configures NewBTree and LoadBTree. On a pool, every option
// but WithSplits applies to each device's part.
type BTreeOption interface{ applyBTree(*btConfig) }

// btOpt is a BTreeOption of its own function.
type btOpt func(*btConfig)

func (f btOpt) applyBTree(c *btConfig) { f(c) }

type btConfig struct {
	leafEntries int
	extent      int
	tier        vmem.Tier
	fan         int  // host node fan-out (tests shrink it)
	naive       bool // benchmarks: plain loads and stores on mapped VRAM
	cache       int  // hot tier budget (WithHostCache), if cacheSet
	cacheSet    bool
	splits      any // []K, from WithSplits (pools only)
}

// WithBTreeTier puts the leaves in tier t: vmem.Mapped (the default, which
// spills into vmem.Private when mapped VRAM runs out) or vmem.Private (every
// leaf access is a DMA; for data that is mostly scanned).
func WithBTreeTier(t vmem.Tier) BTreeOption { return btOpt(func(c *btConfig) { c.tier = t }) }

// NewBTree makes an empty tree on mem ordered by less, which must be a
// strict weak ordering (as for google/btree): on a *vmem.Device, or on a
// *vmem.Pool spread over its devices by key range (see the type's
// comment). K and V must hold no pointers (vmem.ErrPointerType names the field
// that does), except that V may be a string type: the strings are then
// stored in device memory too (an arena beside the leaves), never on the
// Go heap. K may be a string type too: a key is then a record of its
// first 8 bytes and an arena handle, and less is called on Go strings made
// from the records (NewBTreeOrdered compares the records without making
// strings, and is faster).
func NewBTree[K, V any](mem vmem.Memory, less func(a, b K) bool, opts ...BTreeOption) (*BTree[K, V], error) {
	if less == nil {
		return nil, errors.New("collections: NewBTree: nil less function")
	}
	return btMake(mem, less, btNewOn[K, V](less), opts)
}

// NewBTreeOrdered makes an empty tree ordered by <, like google/btree's
// NewOrderedG, on a device or a pool as NewBTree does. Integer keys get a
// search without calls through a function value (and, on GPUs, batch
// lookups by a kernel); string keys compare their 8-byte prefixes first
// and read their bytes only when the prefixes are equal.
func NewBTreeOrdered[K cmp.Ordered, V any](mem vmem.Memory, opts ...BTreeOption) (*BTree[K, V], error) {
	return btMake(mem, cmp.Less[K], btNewOrderedOn[K, V], opts)
}

// btNewOn returns NewBTree's constructor of a tree on one device.
func btNewOn[K, V any](less func(a, b K) bool) func(*vmem.Device, []BTreeOption) (*BTree[K, V], error) {
	return func(dev *vmem.Device, opts []BTreeOption) (*BTree[K, V], error) {
		if btStrKey[K]() {
			return btNewSK[K, V](dev, less, func(a, b string) bool { return less(btStrK[K](a), btStrK[K](b)) }, opts)
		}
		return btNew[K, V](dev, less, btKGeneric, opts)
	}
}

// btNewOrderedOn is NewBTreeOrdered's constructor of a tree on one device.
func btNewOrderedOn[K cmp.Ordered, V any](dev *vmem.Device, opts []BTreeOption) (*BTree[K, V], error) {
	if btStrKey[K]() {
		return btNewSK[K, V](dev, cmp.Less[K], nil, opts)
	}
	return btNew[K, V](dev, cmp.Less[K], btKindOf[K](), opts)
}

// btMake makes a tree on mem with mk, the constructor of a tree on one
// device: on a device directly, on a pool once per device.
func btMake[K, V any](mem vmem.Memory, less func(a, b K) bool, mk func(*vmem.Device, []BTreeOption) (*BTree[K, V], error), opts []BTreeOption) (*BTree[K, V], error) {
	dev, pool, err := memoryOf(mem)
	if err != nil {
		return nil, fmt.Errorf("collections: NewBTree: %w", err)
	}
	splits, err := btSplitsOf(less, opts)
	if err != nil {
		return nil, fmt.Errorf("collections: NewBTree: %w", err)
	}
	if pool == nil {
		return mk(dev, opts) // one device: WithSplits has nothing to divide
	}
	sh, err := shBTNew(pool, less, mk, splits, opts)
	if err != nil {
		return nil, err
	}
	return &BTree[K, V]{sh: sh}, nil
}

func btNew[K, V any](dev *vmem.Device, less func(a, b K) bool, kk btKeyKind, opts []BTreeOption) (*BTree[K, V], error) {
	if dev == nil {
		return nil, fmt.Errorf("collections: NewBTree: nil device: %w", vmem.ErrNoDevice)
	}
	if err := dev.Err(); err != nil {
		return nil, fmt.Errorf("collections: NewBTree: %w", err)
	}
	if err := btCheckTypes[K, V](); err != nil {
		return nil, fmt.Errorf("collections: NewBTree: %w", err)
	}
	strV := isStringType(reflect.TypeFor[V]())
	cfg := btConfig{tier: vmem.Mapped, fan: btFan}
	for _, o := range opts {
		if o != nil {
			o.applyBTree(&cfg)
		}
	}
	if cfg.tier != vmem.Mapped && cfg.tier != vmem.Private {
		return nil, fmt.Errorf("collections: NewBTree: leaves go to the mapped or private tier, not %v: %w", cfg.tier, vmem.ErrRange)
	}
	if cfg.leafEntries != 0 && (cfg.leafEntries < 3 || cfg.leafEntries > btMaxLeaf) {
		return nil, fmt.Errorf("collections: NewBTree: %d entries per leaf outside [3, %d]: %w", cfg.leafEntries, btMaxLeaf, vmem.ErrRange)
	}
	if cfg.extent < 0 || cfg.extent > btMaxExtentLeaves {
		return nil, fmt.Errorf("collections: NewBTree: btWithExtentLeaves(%d) outside [0, %d]: %w", cfg.extent, btMaxExtentLeaves, vmem.ErrRange)
	}
	if cfg.fan < 4 || cfg.fan > btFan {
		cfg.fan = btFan
	}
	var g btGeom
	var err error
	if strV {
		// A string value is stored as its arena handle.
		g, err = btGeomFor[K, strarena.Handle](cfg.leafEntries, cfg.extent)
	} else {
		g, err = btGeomFor[K, V](cfg.leafEntries, cfg.extent)
	}
	if err != nil {
		return nil, err
	}
	t := &BTree[K, V]{dev: dev, less: less, kk: kk, g: g, strV: strV, hint: btHintsFor(kk, &g), cache: cfg.cache, cacheSet: cfg.cacheSet}
	if strV {
		if t.arena, err = strarena.New(dev, strarena.Options{Tier: cfg.tier}); err != nil {
			return nil, fmt.Errorf("collections: NewBTree: %w", err)
		}
	}
	t.mem = newOwner(dev)
	held.Attach(t, t.mem)
	t.idx.init(dev, t.mem, less, kk, cfg.fan)
	t.lv.init(dev, t.mem, &t.g, cfg.tier, cfg.naive)
	t.tierInit()
	t.unreg = lcAtClose(dev, t, (*BTree[K, V]).Close)
	return t, nil
}

// btCheckTypes checks that a tree can hold K and V: no pointers, except
// in string types (stored in arenas).
func btCheckTypes[K, V any]() error {
	if !btStrKey[K]() {
		if err := layout.Check[K](); err != nil {
			return fmt.Errorf("key type: %w", err)
		}
	}
	if !isStringType(reflect.TypeFor[V]()) {
		if err := layout.Check[V](); err != nil {
			return fmt.Errorf("value type: %w", err)
		}
	}
	return nil
}

func (t *BTree[K, V]) usedAfterClose() {
	if t.dev == nil {
		zeroUse("BTree")
	}
	panic("collections: BTree used after Close")
}

// noteErr records the first error of a method that has no error result.
func (t *BTree[K, V]) noteErr(err error) {
	t.errMu.Lock()
	if t.err == nil {
		t.err = err
	}
	t.errMu.Unlock()
}

// Err returns the first error met by a method without an error result (a
// lookup or scan of private-tier leaves when the device was lost); such a
// method then reports the entry as absent or ends the iteration early.
func (t *BTree[K, V]) Err() error {
	if t.sh != nil {
		return t.sh.Err()
	}
	if t.sk != nil {
		return t.sk.in.Err()
	}
	t.errMu.Lock()
	defer t.errMu.Unlock()
	return t.err
}

// sync makes pending stores visible to readers. The fast path is one atomic
// load; the first reader after a write flushes under syncMu, so readers
// never race each other on the batcher, and writers never run beside
// readers (the concurrency contract).
func (t *BTree[K, V]) sync() {
	if t.dirty.Load() {
		t.syncSlow()
	}
}

func (t *BTree[K, V]) syncSlow() {
	t.syncMu.Lock()
	if t.dirty.Load() {
		t.lv.flush()
		t.dirty.Store(false)
	}
	t.syncMu.Unlock()
	// Another goroutine may have written the lines: order this thread's
	// later streaming loads after them.
	lineio.FullFence()
}

// markDirty records that the batcher holds stores.
func (t *BTree[K, V]) markDirty() {
	if t.lv.pending() && !t.dirty.Load() {
		t.dirty.Store(true)
	}
}

// Len returns the number of entries (0 after Close).
func (t *BTree[K, V]) Len() int {
	if t.sh != nil {
		// The shards' counters are summed in place: a call here would
		// take Len over the inlining budget.
		n := 0
		for _, c := range t.sh.lens {
			n += *c
		}
		return n
	}
	if t.sk != nil {
		return t.sk.in.n
	}
	return t.n
}

// BTreeStats describes a tree's shape and memory.
type BTreeStats struct {
	Len          int     // entries
	Leaves       int     // leaves in device memory
	LeafEntries  int     // entries a leaf holds
	LeafBytes    int     // bytes a leaf takes (whole lines)
	Extents      int     // extents (blocks of leaves)
	Height       int     // levels of the host index
	DeviceBytes  uint64  // device memory held for leaves
	PrivateBytes uint64  // of which in the private tier
	HostBytes    uint64  // host memory of the index, its bookkeeping and the hot tier
	HostPerEntry float64 // HostBytes / Len
	Fill         float64 // entries / (Leaves * LeafEntries)
	Cache        CacheStats
	// Shards holds each device's figures, in the pool's order, for a tree
	// on a pool (the fields above add them up, Height being the
	// tallest's); nil on one device.
	Shards []BTreeStats
}

// Stats returns the tree's shape and memory use. HostBytes counts the host
// index blocks and the per-extent bookkeeping, not the fixed overhead (the
// store batcher, scan buffers); DeviceBytes counts the leaves, not the
// arena that holds string values.
func (t *BTree[K, V]) Stats() BTreeStats {
	if t.sh != nil {
		return t.sh.Stats()
	}
	if t.sk != nil {
		return t.sk.in.Stats()
	}
	s := BTreeStats{
		Len:         t.n,
		LeafEntries: t.g.cap,
		LeafBytes:   int(t.g.leafSize),
		Height:      t.idx.height,
	}
	for i := range t.lv.ext {
		e := &t.lv.ext[i]
		if e.blk.IsZero() {
			continue
		}
		s.Extents++
		s.Leaves += int(e.used)
		s.DeviceBytes += e.blk.Size()
		if e.blk.Tier() == block.Private {
			s.PrivateBytes += e.blk.Size()
		}
		s.HostBytes += uint64(cap(e.bits)) * 8
	}
	s.HostBytes += uint64(cap(t.lv.ext)) * uint64(unsafe.Sizeof(btExtent{}))
	s.HostBytes += t.idx.hostBytes()
	s.Cache = t.lv.hot.stats().add(t.et.stats())
	s.HostBytes += s.Cache.Bytes
	if t.n > 0 {
		s.HostPerEntry = float64(s.HostBytes) / float64(t.n)
		s.Fill = float64(t.n) / float64(s.Leaves*t.g.cap)
	}
	return s
}

// Clear removes every entry and frees the device memory the tree held. On
// a pool the bounds between the devices' key ranges stay.
func (t *BTree[K, V]) Clear() error {
	if t.sh != nil {
		return t.sh.Clear()
	}
	if t.sk != nil {
		return t.sk.clear()
	}
	if err := t.btUsable(); err != nil {
		return err
	}
	t.clear()
	return nil
}

func (t *BTree[K, V]) clear() {
	if t.arena != nil {
		t.arena.Reset()
	}
	t.lv.reset()
	t.etInvalidate()
	t.idx.reset()
	t.routeDrop()
	t.n = 0
	t.dirty.Store(false)
	t.scans.drain(t.mem, false)
	if buildconst.Invariants {
		t.check()
	}
}

// Close frees the tree's memory. It is idempotent; the tree is invalid
// afterwards.
func (t *BTree[K, V]) Close() error {
	if t.sh != nil {
		return t.sh.Close()
	}
	if t.sk != nil {
		return t.closeSK()
	}
	if t.closed || t.dev == nil {
		return nil
	}
	if t.unreg != nil {
		t.unreg()
	}
	t.clear()
	t.scans.drain(t.mem, true) // states put back later (a walk's cleanup) are released
	t.lv.hot, t.et = nil, nil
	t.mem.FreeAll()
	t.closed = true
	if t.arena != nil {
		return t.arena.Close()
	}
	return nil
}
