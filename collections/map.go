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
//     many records as layout.RecordFor fits, at most eight), or one record
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
//   - Stores go through a layout.Batcher: merged by line, sorted by
//     address, written as whole lines where possible. Pending stores are
//     flushed by the first read that follows them (or at the end of a
//     PutMany), so a single Put costs no round trip.
//   - Growth allocates the new table, reads the old slots in large chunks
//     by DMA into pinned host memory (50 GB/s, against 0.3 GB/s for CPU
//     loads), rehashes in host memory into a window of the new table, and
//     writes each finished window out sequentially. The old table stays
//     intact until the new one is complete, so a failed growth (out of
//     memory) leaves the map unchanged.
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
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/collections/internal/strarena"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/layout"
	"github.com/govram/govram/vmem"
)

// Map is a hash map with its entries in device memory. Create it with
// NewMap; the zero Map is not usable.
//
// Semantics are a Go map's: Put overwrites, Delete of a missing key does
// nothing, keys unequal to themselves (NaN) can be stored but never found.
// K is any comparable type without pointers, or a string type; V is any
// type without pointers, or a string type. String bytes are stored in the
// device, never on the Go heap.
//
// Concurrency: any number of goroutines may call Get, GetMany, Len, All,
// Keys and Values at once. Put, PutMany, Delete, Clear and Close are
// writes: a write must not overlap with any other call, as with a Go map
// (synchronise with a sync.RWMutex or a channel). A Get that sees a write
// in progress panics, and the race detector reports the overlap. Inside a
// range over All, Keys or Values the loop body may write to the map
// itself, as with a Go map.
type Map[K comparable, V any] struct {
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
	held    *mapHeld
	unreg   func() // removes the map from the device's AtClose list

	gpu mapGPU // the device copy of the control bytes for batch kernels (map_gpu.go)

	wb    mapWB[K, V]  // Puts recorded, not yet stored (map_wb.go)
	iters atomic.Int32 // iterations running: their loop bodies' Puts go direct

	tier *tierCore // hot entries in host memory (map_tier.go); nil: none
	tvar bool      // the tier's slots have the string layout

	scratch []byte // writer's image of one bucket
	enc     []byte // writer's image of one record being stored
}

// MapOption configures NewMap.
type MapOption func(*mapConfig)

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
func WithCapacity(n int) MapOption { return func(c *mapConfig) { c.capacity = n } }

// WithHasher replaces the built-in hash of keys with h. The map mixes h's
// result further, so a fast hash of modest quality is enough; it must be
// deterministic, equal for equal keys, and safe to call from several
// goroutines at once (GetMany and PutMany do). K must be the map's key
// type, or NewMap fails.
func WithHasher[K comparable](h func(K) uint64) MapOption {
	return func(c *mapConfig) {
		if h != nil {
			c.hasher = h
		}
	}
}

// mapWithSegmentBuckets caps a segment at n buckets (rounded down to a
// power of two), so that tests cover segment boundaries.
func mapWithSegmentBuckets(n uint64) MapOption {
	return func(c *mapConfig) { c.segBuckets = 1 << (bits.Len64(max(n, 1)) - 1) }
}

// mapWithBatchLines sets the store batch (tests use tiny ones, so that
// batches fill and flush in the middle of operations).
func mapWithBatchLines(n int) MapOption { return func(c *mapConfig) { c.batchLines = n } }

// mapWithDirectPuts makes every Put store at once (map_wb.go): tests
// compare both ways, benchmarks measure both.
func mapWithDirectPuts() MapOption { return func(c *mapConfig) { c.noWB = true } }

// mapEagerLoad makes Get load the home line before the control bytes
// arrive, whatever the branch predictor would guess: a knob for
// measurements (a miss then also costs a VRAM line).
var mapEagerLoad = false

// NewMap returns an empty map on dev. K and V must hold no pointers
// (ErrPointerType names the field that does), except that either may be a
// string type. It fails with ErrOutOfMemory when the first table does not
// fit.
func NewMap[K comparable, V any](dev *vmem.Device, opts ...MapOption) (*Map[K, V], error) {
	if dev == nil {
		return nil, errors.New("collections: NewMap: nil device")
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
		held:  &mapHeld{dev: dev, blks: map[vmem.Block]struct{}{}},
	}
	m.scratch = mapAligned(m.r.bucket)
	m.enc = mapAligned(m.r.size)
	runtime.AddCleanup(m, func(h *mapHeld) { h.free() }, m.held)
	if strK || strV {
		if m.arena, err = strarena.New(dev, strarena.Options{}); err != nil {
			return nil, err
		}
	}
	nb := m.bucketsFor(max(cfg.capacity, 8))
	if cfg.capacity > 0 && dev.Backend() == vmem.BackendVulkan {
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
		m.flushForRead() // recorded Puts may be new keys or not
	}
	return m.n
}

// Err returns the first error met by a method that has no error result: a
// device lost during Get, or an iteration stopped by an error.
func (m *Map[K, V]) Err() error {
	if p := m.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (m *Map[K, V]) setErr(err error) { m.err.CompareAndSwap(nil, &err) }

// mapLine is a line buffer aligned for any record.
type mapLine struct {
	_ [0]uint64
	b [layout.LineSize]byte
}

// Get returns the value stored for k and whether there is one. It panics if
// the map is closed or a write is in progress.
func (m *Map[K, V]) Get(k K) (V, bool) {
	if m.t == nil || m.writing {
		m.badRead()
	}
	var h uint64
	if m.hk == mapHash8 {
		h = mapMix(*(*uint64)(unsafe.Pointer(&k)), m.seed) // inlined: the common case
	} else {
		h = m.hash(&k)
	}
	if m.tier != nil {
		// The tier is coherent with every write, those still pending
		// included: a hit needs no flush.
		return m.getTiered(&k, h)
	}
	return m.get(&k, h)
}

// get looks k (hash h) up in the table.
func (m *Map[K, V]) get(kp *K, h uint64) (V, bool) {
	if m.pending.Load() {
		m.flushForRead()
	}
	t := m.t
	k := *kp
	if !t.fast {
		return m.getSlow(t, &k, h)
	}
	pat := (h & 0x7f) * mapLSB
	var line [2]mapLine // a bucket of mapped VRAM: one line, or a two-line record
	for b := mapHome(h, t.nb); b < t.nbAll; b++ {
		sg := &t.segs[b>>t.shift]
		j := b & t.mask
		loaded := false
		if mapEagerLoad && sg.kind == mapWC {
			m.loadBucketWC(&line, sg, j)
			loaded = true
		}
		g := mapGroup(sg.fp, j, m.r.p)
		if mt := mapMatch(g, pat) & m.r.lowMask; mt != 0 {
			// The line's address does not depend on g: under the branch the
			// CPU predicts taken (on hits), the VRAM load overlaps the
			// control bytes' cache miss.
			var rp unsafe.Pointer
			switch {
			case sg.kind == mapWC:
				if !loaded {
					m.loadBucketWC(&line, sg, j)
				}
				rp = unsafe.Pointer(&line)
			case m.r.lines == 1:
				// Host memory: copy the whole line first. The copy's address
				// does not depend on which slot matched, so its cache miss
				// overlaps the control bytes' one, as the VRAM load does;
				// reading the matched slot in place would wait for both.
				line[0].b = *(*[layout.LineSize]byte)(unsafe.Add(sg.base, uintptr(j)*layout.LineSize))
				rp = unsafe.Pointer(&line)
			default:
				rp = unsafe.Add(sg.base, uintptr(j)*m.r.bucket)
			}
			for ; mt != 0; mt &= mt - 1 {
				sp := unsafe.Add(rp, uintptr(bits.TrailingZeros64(mt)>>3)*m.r.stride)
				if !m.strK {
					// Fixed-size keys compared in place, without a call:
					// fewer instructions per Get let the CPU keep more Gets
					// in flight.
					if *(*K)(unsafe.Add(sp, m.r.keyOff)) == k {
						if !m.strV {
							return *(*V)(unsafe.Add(sp, m.r.valOff)), true
						}
						return m.valueAt(sp), true
					}
				} else if m.keyMatches(sp, &k, h) {
					return m.valueAt(sp), true
				}
			}
		}
		if mapMatchEmpty(g)&m.r.lowMask != 0 {
			break
		}
	}
	var zero V
	return zero, false
}

// loadBucketWC reads bucket j of mapped segment sg (one line, or the two
// lines of a string-key record, whose loads overlap) into buf.
func (m *Map[K, V]) loadBucketWC(buf *[2]mapLine, sg *mapSeg, j uint64) {
	if m.r.lines == 1 {
		lineio.Load(&buf[0].b, unsafe.Add(sg.base, uintptr(j)*layout.LineSize))
		return
	}
	lineio.LoadLines(unsafe.Slice(&buf[0].b[0], 2*layout.LineSize), unsafe.Add(sg.base, uintptr(j)*2*layout.LineSize))
}

// getSlow is Get for tables with private segments or records of more than
// two lines in mapped VRAM: each bucket is read whole into a buffer.
//
//go:noinline
func (m *Map[K, V]) getSlow(t *mapTable, k *K, h uint64) (V, bool) {
	bp := mapGetBuf(m.r.bucket)
	defer mapBufPool.Put(bp)
	buf := *bp
	pat := (h & 0x7f) * mapLSB
	for b := mapHome(h, t.nb); b < t.nbAll; b++ {
		sg, j := t.seg(b)
		g := mapGroup(sg.fp, j, m.r.p)
		if mt := mapMatch(g, pat) & m.r.lowMask; mt != 0 {
			rp, err := m.readBucket(sg, j, buf)
			if err != nil {
				m.setErr(err)
				break
			}
			for ; mt != 0; mt &= mt - 1 {
				sp := unsafe.Add(rp, uintptr(bits.TrailingZeros64(mt)>>3)*m.r.stride)
				if m.keyMatches(sp, k, h) {
					return m.valueAt(sp), true
				}
			}
		}
		if mapMatchEmpty(g)&m.r.lowMask != 0 {
			break
		}
	}
	var zero V
	return zero, false
}

var mapBufPool = sync.Pool{New: func() any { b := make([]byte, 256); return &b }}

func mapGetBuf(n uintptr) *[]byte {
	bp := mapBufPool.Get().(*[]byte)
	if uintptr(len(*bp)) < n {
		*bp = make([]byte, n)
	}
	return bp
}

// readBucket returns the address of bucket j of sg as the reader sees it
// (no pending stores: readers flush first): the memory itself for host
// memory, else a copy in buf.
func (m *Map[K, V]) readBucket(sg *mapSeg, j uint64, buf []byte) (unsafe.Pointer, error) {
	off := uintptr(j) * m.r.bucket
	switch sg.kind {
	case mapDirect:
		return unsafe.Add(sg.base, off), nil
	case mapWC:
		lineio.LoadLines(buf[:m.r.bucket], unsafe.Add(sg.base, off))
		return unsafe.Pointer(&buf[0]), nil
	}
	err := m.dev.Read(buf[:m.r.bucket], sg.slots, uint64(off))
	return unsafe.Pointer(&buf[0]), err
}

// readBucketW is readBucket for a writer: pending stores included.
func (m *Map[K, V]) readBucketW(t *mapTable, sg *mapSeg, j uint64) (unsafe.Pointer, error) {
	switch {
	case sg.kind == mapWC && t.bat != nil:
		off := uintptr(sg.base) - uintptr(t.batBase) + uintptr(j)*m.r.bucket
		if err := t.bat.Get(off, m.scratch); err != nil {
			return nil, err
		}
		return unsafe.Pointer(&m.scratch[0]), nil
	case sg.kind == mapDirect && m.r.lines == 1:
		// A copy of the whole line, as in Get: its miss does not wait for
		// the control bytes'.
		*(*[layout.LineSize]byte)(m.scratch) = *(*[layout.LineSize]byte)(unsafe.Add(sg.base, uintptr(j)*layout.LineSize))
		return unsafe.Pointer(&m.scratch[0]), nil
	}
	return m.readBucket(sg, j, m.scratch)
}

//go:noinline
func (m *Map[K, V]) badRead() {
	if m.t == nil {
		panic("collections: Map used after Close")
	}
	panic("collections: concurrent Map read and Map write")
}

// writeDone ends a batch write (deferred): on a normal return the write
// has already ended; after a panic (a WithHasher function's) it keeps the
// Map usable, with every key whose store completed. Put and Delete do
// without: a deferred call made an overwriting Put 10% slower (121 to
// 136 ns on the development machine's host backend).
func (m *Map[K, V]) writeDone() { m.writing = false }

//go:noinline
func (m *Map[K, V]) badWrite() {
	panic("collections: concurrent Map writes")
}

// flushForRead stores what is pending (the batcher's stores, recorded
// Puts), once, for the first reader that finds them. An error is also kept
// for Err.
//
//go:noinline
func (m *Map[K, V]) flushForRead() error {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	if m.pending.Load() {
		if err := m.settle(); err != nil {
			m.setErr(err)
			return err
		}
	}
	return nil
}

// mapLoc names a slot: slot i of bucket b.
type mapLoc struct {
	b uint64
	i int
}

// mapFound is what a writer's probe learned.
type mapFound struct {
	loc      mapLoc         // where the key is, if found
	rec      unsafe.Pointer // its record's image (valid until the next probe)
	found    bool
	ins      mapLoc // the first free slot on the key's probe path
	insOK    bool
	insEmpty bool // ins is empty (not a tombstone)
}

// findW looks k up for a writer: pending stores are seen.
func (m *Map[K, V]) findW(t *mapTable, k *K, h uint64) (f mapFound, err error) {
	pat := (h & 0x7f) * mapLSB
	for b := mapHome(h, t.nb); b < t.nbAll; b++ {
		sg, j := t.seg(b)
		g := mapGroup(sg.fp, j, m.r.p)
		if mt := mapMatch(g, pat) & m.r.lowMask; mt != 0 {
			rp, err := m.readBucketW(t, sg, j)
			if err != nil {
				return f, err
			}
			for ; mt != 0; mt &= mt - 1 {
				i := bits.TrailingZeros64(mt) >> 3
				sp := unsafe.Add(rp, uintptr(i)*m.r.stride)
				if m.keyMatches(sp, k, h) {
					f.loc, f.rec, f.found = mapLoc{b, i}, sp, true
					return f, nil
				}
			}
		}
		if !f.insOK {
			if fr := mapMatchFree(g) & m.r.lowMask; fr != 0 {
				i := bits.TrailingZeros64(fr) >> 3
				f.ins, f.insOK = mapLoc{b, i}, true
				f.insEmpty = byte(g>>(8*i)) == mapEmpty
			}
		}
		if mapMatchEmpty(g)&m.r.lowMask != 0 {
			break
		}
	}
	return f, nil
}

// store writes data at byte off of the record in slot l.
func (m *Map[K, V]) store(t *mapTable, l mapLoc, off uintptr, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	sg, j := t.seg(l.b)
	o := uintptr(j)*m.r.bucket + uintptr(l.i)*m.r.stride + off
	switch sg.kind {
	case mapDirect:
		copy(mapBytesAt(unsafe.Add(sg.base, o), len(data)), data)
		return nil
	case mapWC:
		if t.bat != nil {
			if err := t.bat.Put(uintptr(sg.base)-uintptr(t.batBase)+o, data); err != nil {
				return err
			}
			if !m.pending.Load() {
				m.pending.Store(true)
			}
			return nil
		}
		// No batcher: plain stores never read their target, and the fence
		// makes them visible to the next streaming load.
		copy(mapBytesAt(unsafe.Add(sg.base, o), len(data)), data)
		lineio.Fence()
		return nil
	}
	return m.dev.Write(sg.slots, uint64(o), data)
}

// Put stores v for k, replacing any value k had. A key equal to a stored
// one keeps the stored key's bits: Put(-0.0, v) after Put(+0.0, u) leaves
// key +0.0 with value v (Go's map would keep -0.0; only keys that compare
// equal with other bits, as floating-point zeros, can tell). It fails with ErrClosed,
// with ErrOutOfMemory when the table must grow and the device has no room
// (the map is then unchanged), or with an error matching vmem.ErrTooLarge
// for a string longer than 256 MiB.
func (m *Map[K, V]) Put(k K, v V) error {
	if err := m.mapUsable(); err != nil {
		return err
	}
	if m.writing {
		m.badWrite()
	}
	m.writing = true
	behind, err := m.putBehind(&k, &v)
	if !behind && err == nil {
		h := m.hash(&k)
		err = m.put(&k, &v, h)
		m.version++
		if m.tier != nil && err == nil {
			m.tierPut(&k, h, &v)
		}
	} else if m.tier != nil && err == nil {
		m.tierPut(&k, m.hash(&k), &v)
	}
	m.writing = false
	if buildconst.Invariants {
		m.mustCheck()
	}
	return err
}

func (m *Map[K, V]) put(k *K, v *V, h uint64) error {
	for {
		t := m.t
		f, err := m.findW(t, k, h)
		if err != nil {
			return err
		}
		if f.found {
			return m.overwrite(t, f.loc, f.rec, v)
		}
		if !f.insOK || (f.insEmpty && t.growthLeft <= 0) {
			if err := m.grow(1, !f.insOK); err != nil {
				return err
			}
			continue
		}
		return m.insert(t, f.ins, f.insEmpty, k, v, h)
	}
}

// overwrite replaces the value of the record at l (image rec).
func (m *Map[K, V]) overwrite(t *mapTable, l mapLoc, rec unsafe.Pointer, v *V) error {
	if !m.strV {
		// Through the map's own buffer: v's address must not escape into
		// the device paths, or every Put would allocate it.
		*(*V)(unsafe.Pointer(&m.enc[0])) = *v
		return m.store(t, l, m.r.valOff, m.enc[:unsafe.Sizeof(*v)])
	}
	var old [16]byte // the old field's length and handle
	of := unsafe.Add(rec, m.r.valOff)
	*(*uint32)(unsafe.Pointer(&old)) = uint32(mapStrLen(of))
	*(*strarena.Handle)(unsafe.Pointer(&old[8])) = mapStrHandle(of, m.r.valW)
	f := unsafe.Pointer(&m.enc[0])
	clear(m.enc[:m.r.valW])
	if err := m.encStr(f, m.r.valW, *(*string)(unsafe.Pointer(v))); err != nil {
		return err
	}
	if err := m.store(t, l, m.r.valOff, m.enc[:m.r.valW]); err != nil {
		m.freeStr(f, m.r.valW)
		return err
	}
	if n := int(*(*uint32)(unsafe.Pointer(&old))); n > mapStrInline(m.r.valW) {
		m.arena.Free(*(*strarena.Handle)(unsafe.Pointer(&old[8])))
	}
	return nil
}

// insert stores a new record for k in the free slot l.
func (m *Map[K, V]) insert(t *mapTable, l mapLoc, empty bool, k *K, v *V, h uint64) error {
	rec := unsafe.Pointer(&m.enc[0])
	clear(m.enc)
	if m.strK {
		*(*uint64)(unsafe.Add(rec, m.r.hashOff)) = h
		if err := m.encStr(unsafe.Add(rec, m.r.keyOff), m.r.keyW, *(*string)(unsafe.Pointer(k))); err != nil {
			return err
		}
	} else {
		*(*K)(unsafe.Add(rec, m.r.keyOff)) = *k
	}
	if m.strV {
		if err := m.encStr(unsafe.Add(rec, m.r.valOff), m.r.valW, *(*string)(unsafe.Pointer(v))); err != nil {
			m.freeStrings(rec)
			return err
		}
	} else {
		*(*V)(unsafe.Add(rec, m.r.valOff)) = *v
	}
	if err := m.store(t, l, 0, m.enc); err != nil {
		m.freeStrings(rec)
		return err
	}
	t.setFP(l.b, l.i, byte(h&0x7f), m.r.p)
	if empty {
		t.growthLeft--
	} else {
		t.tombs--
	}
	if d := l.b - mapHome(h, t.nb); d > t.maxDisp {
		t.maxDisp = d
	}
	m.n++
	return nil
}

// freeStrings releases the arena parts of the record image rec.
func (m *Map[K, V]) freeStrings(rec unsafe.Pointer) {
	if m.strK {
		m.freeStr(unsafe.Add(rec, m.r.keyOff), m.r.keyW)
	}
	if m.strV {
		m.freeStr(unsafe.Add(rec, m.r.valOff), m.r.valW)
	}
}

// Delete removes k and reports whether it was present. Deleting a missing
// key does nothing. It panics if the map is closed.
func (m *Map[K, V]) Delete(k K) bool {
	if m.t == nil {
		m.badRead()
	}
	if m.writing {
		m.badWrite()
	}
	m.writing = true
	if len(m.wb.keys) > 0 {
		// A recorded Put of k must not come back after the Delete.
		if err := m.settle(); err != nil {
			m.setErr(err)
		}
	}
	h := m.hash(&k)
	found := m.delete(&k, h)
	if m.tier != nil {
		m.tierDelete(&k, h)
	}
	m.writing = false
	m.version++
	if buildconst.Invariants {
		m.mustCheck()
	}
	return found
}

func (m *Map[K, V]) delete(k *K, h uint64) bool {
	t := m.t
	f, err := m.findW(t, k, h)
	if err != nil {
		m.setErr(err)
		return false
	}
	if !f.found {
		return false
	}
	m.freeStrings(f.rec)
	// A bucket that has an empty slot stops every probe, so no key lies
	// past it on a probe through it: the slot can become empty again.
	// Otherwise a tombstone keeps later keys reachable.
	if mapMatchEmpty(m.group(t, f.loc.b))&m.r.lowMask != 0 {
		t.setFP(f.loc.b, f.loc.i, mapEmpty, m.r.p)
		t.growthLeft++
	} else {
		t.setFP(f.loc.b, f.loc.i, mapDeleted, m.r.p)
		t.tombs++
	}
	m.n--
	return true
}

// Clear removes every entry and keeps the table's memory, like Go's clear.
// It panics if the map is closed.
func (m *Map[K, V]) Clear() {
	t := m.t
	if t == nil {
		m.badRead()
	}
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
}

// Close frees the map's memory. It is idempotent; the map is invalid
// afterwards: Get, GetMany, Delete, Clear and iteration panic, Put and
// PutMany return ErrClosed, Len returns 0.
func (m *Map[K, V]) Close() error {
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
	m.n = 0
	if m.arena != nil {
		return m.arena.Close()
	}
	return nil
}

// Keys returns the keys in table order (see All).
func (m *Map[K, V]) Keys() iter.Seq[K] {
	return func(yield func(K) bool) {
		for k := range m.All() {
			if !yield(k) {
				return
			}
		}
	}
}

// Values returns the values in table order (see All).
func (m *Map[K, V]) Values() iter.Seq[V] {
	return func(yield func(V) bool) {
		for _, v := range m.All() {
			if !yield(v) {
				return
			}
		}
	}
}
