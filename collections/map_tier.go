package collections

import (
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/hostmem"
)

// The Map's hot tier (tier.go): slots and their codecs.
//
// A slot of a map of fixed-size keys and values is the pair itself
// (tierPair). With a string key or value it is
//
//	[hash uint64][key length uint32][value length uint32][key][value]
//
// with the key's and value's regions 8-aligned: a string key is matched by
// its full hash and length before its bytes. An entry larger than the slot
// is not cached (counted as a rejection).

const (
	tierMaxSlot = 256 // larger fixed-size records are not cached
	tierStrSlot = 128 // slot of maps with strings: room for URL-sized keys
	tierVarHdr  = 16
	// Batch writes of more keys than this drop the whole tier instead of
	// looking each key up in it.
	tierBatchDrop = 256
)

// tierAdmitSample: one miss in this many (a power of two) is counted and
// offered to the tier while offers succeed; tierAdmitSparse times fewer
// while they fail (tierCore.admitMask). Every key is sampled alike, so the
// sketch still ranks keys by frequency. Every miss, while offers succeed:
// a key needs two counted misses to enter, so sampling one in four made
// the tier learn a skewed stream four times more slowly (fewer hits and
// slower Gets after as many Gets: BenchmarkMapMissPath's s4 rows against
// tier), and under uniform keys offers are as sparse as before
// (one in 32), which keeps those misses short: the work of an offer on
// every miss made a miss cost twice as much.
var tierAdmitSample uint32 = 1 // a variable: benchmarks compare settings

// tierAdmitMin: the sketch's estimate a key needs (counting this offer)
// to displace an entry: two, its doorkeeper bits and a counter, so keys
// seen once since the sketch last aged cost no eviction. A free way takes
// any key found: it displaces nothing, and a tier larger than the keys
// seen twice so far fills at once instead of after many passes. On the
// host, 10^7 keys, a tier of a tenth of the table's bytes warmed by
// 3.2*10^6 Zipf 0.99 Gets hits 78.2% instead of 75.9%; one of a fifth,
// 81.1% instead of 75.8% (BenchmarkMapTierPolicy, VMEM_BENCH_BUDGETS).
var tierAdmitMin uint8 = 2

type tierPair[K comparable, V any] struct {
	k K
	v V
}

// WithHostCache sizes the hot tier of a Map or a BTree: a copy of the most
// used entries (and, for a tree, leaves) in host memory, so that a Get of
// a hot key costs a host-memory lookup instead of a round trip to the
// device. bytes is the tier's budget; 0 turns the tier off. Without this
// option the tier is on where the container's data is in device memory
// (the Vulkan backend), with a fiftieth of its device bytes, at most a
// sixteenth of the machine's RAM, and it grows with the container; on the
// host backend it is off, the data being in host memory already.
func WithHostCache(bytes int) interface {
	MapOption
	BTreeOption
} {
	return hostCache(bytes)
}

// hostCache is WithHostCache's option: one value for both containers.
type hostCache int

func (h hostCache) applyMap(c *mapConfig) { c.cache, c.cacheSet = max(int(h), 0), true }

// tierSlot returns the slot size of the map's tier, 0 if its entries are
// too large to cache.
func (m *Map[K, V]) tierSlot() uintptr {
	var zk K
	var zv V
	if !m.strK && !m.strV {
		return tierPairSlot[K, V]()
	}
	fixed := uintptr(tierVarHdr)
	if !m.strK {
		fixed += mapRoundUp(unsafe.Sizeof(zk), 8)
	}
	if !m.strV {
		fixed += mapRoundUp(unsafe.Sizeof(zv), 8)
	}
	n := max(uintptr(tierStrSlot), fixed+32)
	if n > tierMaxSlot {
		return 0
	}
	return n
}

// tierBudget returns the tier's budget for the current table (0: none).
func (m *Map[K, V]) tierBudget() uint64 {
	if m.cfg.cacheSet {
		return uint64(m.cfg.cache)
	}
	if !kdev(m.dev).OnGPU() || m.cfg.plain {
		return 0
	}
	b := m.tableBytes() / tierDefaultDiv
	if ram := hostmem.TotalRAM(); ram > 0 {
		b = min(b, ram/tierRAMDiv)
	}
	return max(b, tierMinBytes)
}

// tableBytes is the device memory of the table's slots.
func (m *Map[K, V]) tableBytes() uint64 {
	if m.t == nil {
		return 0
	}
	return m.t.nbAll * uint64(m.r.bucket)
}

// tierInit makes the map's tier, or none (see tierBudget).
func (m *Map[K, V]) tierInit() {
	slot := m.tierSlot()
	budget := m.tierBudget()
	if slot == 0 || budget == 0 {
		return
	}
	if !m.cfg.cacheSet {
		// No larger than the table could use: a small map gets a small tier.
		per := (tierHdr + tierWays*slot + 63) &^ 63
		budget = min(budget, uint64(m.t.capacity/tierWays+2)*uint64(per+tierWays*tierSketchPer)+tierFixedBytes)
	}
	m.tier = newTierCore(m.held, budget, slot)
	m.tvar = m.strK || m.strV
}

// tierGrow follows the table's growth with a larger tier (default budget
// only), moving the entries it holds.
func (m *Map[K, V]) tierGrow() {
	old := m.tier
	if old == nil || m.cfg.cacheSet {
		return
	}
	per := uint64(old.setBytes) + tierWays*tierSketchPer
	if m.tierBudget() < 2*old.sets*per {
		return
	}
	m.tier = nil
	m.tierInit()
	nc := m.tier
	if nc == nil {
		m.tier = old
		return
	}
	copy(unsafe.Slice((*byte)(nc.cnt), tierStripes*64), unsafe.Slice((*byte)(old.cnt), tierStripes*64))
	g := old.gen.Load()
	for i := uint64(0); i < old.sets; i++ {
		p := unsafe.Add(old.mem, uintptr(i)*old.setBytes)
		if atomic.LoadUint32(tierGen(p)) != g {
			continue
		}
		for valid := atomic.LoadUint32(tierMeta(p)) & 0xff; valid != 0; valid &= valid - 1 {
			sp := old.slotAt(p, bits.TrailingZeros32(valid))
			s := tierSpread(m.tierHashAt(sp))
			q := nc.set(s)
			seq := nc.lockWait(q)
			if w, evict := nc.victim(q); !evict {
				copy(unsafe.Slice((*byte)(nc.slotAt(q, w)), nc.slot), unsafe.Slice((*byte)(sp), old.slot))
				nc.fill(q, w, tierTag(s))
			}
			nc.unlock(q, seq)
		}
	}
	old.free()
}

// tierFree releases the tier (Close).
func (m *Map[K, V]) tierFree() {
	if m.tier != nil {
		m.tier.free()
		m.tier = nil
	}
}

// getTiered is Get with a tier: the tier first, then the table, and an
// entry found in the table is offered to the tier.
func (m *Map[K, V]) getTiered(k *K, h uint64) (V, bool) {
	c := m.tier
	// Get checked the device just before: once it is lost, readLost drops
	// the tier and no lookup reaches it.
	s := tierSpread(h)
	p := c.set(s)
	var v V
	var ok bool
	if m.tvar {
		v, ok = m.tierGet(c, p, s, k, h)
	} else {
		v, ok = tierPairGet[K, V](c, p, s, k)
	}
	if ok {
		return v, true
	}
	// The stripe's miss count also picks the misses offered to the tier:
	// cheaper than a random number, and as unrelated to the key.
	offer := uint32(c.countMiss(s))&c.admitMask(s) == 0
	if offer {
		m.tierPrefetch(c, p, s)
	}
	v, ok = m.lookup(k, h)
	if ok && offer {
		m.tierAdmit(c, p, s, k, h, &v)
	}
	return v, ok
}

// tierPrefetch starts fetching the sketch lines that an offer of spread
// hash s to the set at p reads (tierCore.prefetchOffer): the key's, and
// the victim's if the set is full.
func (m *Map[K, V]) tierPrefetch(c *tierCore, p unsafe.Pointer, s uint64) {
	if !m.tvar {
		tierPairPrefetch[K, V](c, p, s, m)
		return
	}
	w, full := c.peekVictim(p)
	var vs uint64
	if full {
		vs = tierSpread(m.tierHashAt(c.slotAt(p, w)))
	}
	c.prefetchOffer(s, vs, full)
}

// tierGet looks k up in the set at p without a lock (see tier.go): the
// string layout; fixed-size pairs use tierPairGet.
func (m *Map[K, V]) tierGet(c *tierCore, p unsafe.Pointer, s uint64, k *K, h uint64) (v V, ok bool) {
	tag, gen := tierTag(s), c.gen.Load()
	for range tierSpins {
		seq := atomic.LoadUint32(tierSeq(p))
		mt := c.candidates(p, tag, gen)
		if mt == 0 {
			return v, false // a miss needs no validation (see tierPairGet)
		}
		if seq&1 != 0 {
			continue
		}
		way := -1
		for ; mt != 0; mt &= mt - 1 {
			w := bits.TrailingZeros64(mt) >> 3
			if v, ok = m.tierGetVar(c, c.slotAt(p, w), k, h); ok {
				way = w
				break
			}
		}
		if atomic.LoadUint32(tierSeq(p)) != seq {
			var zero V
			v, ok = zero, false
			continue
		}
		if ok {
			c.touch(p, way, s)
			c.countHit(s)
		}
		return v, ok
	}
	var zero V
	return zero, false
}

// tierGetVar matches and decodes a slot of the string layout. What it
// reads may be torn by a writer (the caller checks the sequence after),
// so every length is bounded by the slot before it is used.
func (m *Map[K, V]) tierGetVar(c *tierCore, sp unsafe.Pointer, k *K, h uint64) (v V, ok bool) {
	off, vlen, ok := m.tierKeyVar(c, sp, k, h)
	if !ok {
		return v, false
	}
	if !m.strV {
		tierLoad(unsafe.Pointer(&v), unsafe.Add(sp, off), unsafe.Sizeof(v))
		return v, true
	}
	if off+vlen > c.slot {
		return v, false
	}
	var buf [tierMaxSlot]byte
	tierLoad(unsafe.Pointer(&buf), unsafe.Add(sp, off), mapRoundUp(vlen, 8))
	*(*string)(unsafe.Pointer(&v)) = string(buf[:vlen])
	return v, true
}

// tierKeyVar reports whether the slot at sp (string layout) holds k, and
// where its value is and how long: matching a key decodes no value (a
// writer finding its copy allocates nothing).
func (m *Map[K, V]) tierKeyVar(c *tierCore, sp unsafe.Pointer, k *K, h uint64) (off, vlen uintptr, ok bool) {
	if atomic.LoadUint64((*uint64)(sp)) != h {
		return 0, 0, false
	}
	lens := atomic.LoadUint64((*uint64)(unsafe.Add(sp, 8)))
	klen := uintptr(uint32(lens))
	vlen = uintptr(lens >> 32)
	off = uintptr(tierVarHdr)
	if m.strK {
		ks := *(*string)(unsafe.Pointer(k))
		kr := mapRoundUp(klen, 8)
		if klen != uintptr(len(ks)) || off+kr > c.slot || !tierEqualString(unsafe.Add(sp, off), ks) {
			return 0, 0, false
		}
		return off + kr, vlen, true
	}
	var kk K
	tierLoad(unsafe.Pointer(&kk), unsafe.Add(sp, off), unsafe.Sizeof(kk))
	if kk != *k {
		return 0, 0, false
	}
	return off + mapRoundUp(unsafe.Sizeof(kk), 8), vlen, true
}

// tierEqualString reports whether the slot bytes at p (8-byte aligned,
// at least len(s) rounded up to 8 of them) begin with s, compared a word
// at a time in place: the slot may be changing (the caller checks the
// set's sequence after), so it is read with word loads, not copied.
func tierEqualString(p unsafe.Pointer, s string) bool {
	n := uintptr(len(s))
	sp := unsafe.Pointer(unsafe.StringData(s))
	i := uintptr(0)
	for ; i+8 <= n; i += 8 {
		if atomic.LoadUint64((*uint64)(unsafe.Add(p, i))) != *(*uint64)(unsafe.Add(sp, i)) {
			return false
		}
	}
	if i == n {
		return true
	}
	// The tail: the string's last bytes, gathered so as not to read past
	// its end; the slot's bytes past the key are not compared.
	var w uint64
	for j := n; j > i; j-- {
		w = w<<8 | uint64(*(*byte)(unsafe.Add(sp, j-1)))
	}
	mask := uint64(1)<<(8*(n-i)) - 1
	return atomic.LoadUint64((*uint64)(unsafe.Add(p, i)))&mask == w
}

// tierFind returns the way of the set at p that holds k (string layout), or
// -1. The caller holds the set's lock, or is a writer (no reader runs).
func (m *Map[K, V]) tierFind(c *tierCore, p unsafe.Pointer, s uint64, k *K, h uint64) int {
	for mt := c.candidates(p, tierTag(s), c.gen.Load()); mt != 0; mt &= mt - 1 {
		w := bits.TrailingZeros64(mt) >> 3
		if _, _, ok := m.tierKeyVar(c, c.slotAt(p, w), k, h); ok {
			return w
		}
	}
	return -1
}

// tierEncode writes k and v into the slot at sp (string layout); false if
// they do not fit.
func (m *Map[K, V]) tierEncode(c *tierCore, sp unsafe.Pointer, k *K, h uint64, v *V) bool {
	var kr, vlen, klen uintptr
	if m.strK {
		klen = uintptr(len(*(*string)(unsafe.Pointer(k))))
	} else {
		klen = unsafe.Sizeof(*k)
	}
	kr = mapRoundUp(klen, 8)
	if m.strV {
		vlen = uintptr(len(*(*string)(unsafe.Pointer(v))))
	} else {
		vlen = unsafe.Sizeof(*v)
	}
	if tierVarHdr+kr+vlen > c.slot {
		return false
	}
	*(*uint64)(sp) = h
	*(*uint64)(unsafe.Add(sp, 8)) = uint64(klen) | uint64(vlen)<<32
	kp, vp := unsafe.Add(sp, tierVarHdr), unsafe.Add(sp, tierVarHdr+kr)
	if m.strK {
		copy(unsafe.Slice((*byte)(kp), klen), *(*string)(unsafe.Pointer(k)))
	} else {
		*(*K)(kp) = *k
	}
	if m.strV {
		copy(unsafe.Slice((*byte)(vp), vlen), *(*string)(unsafe.Pointer(v)))
	} else {
		*(*V)(vp) = *v
	}
	return true
}

// tierSpreadOf is the tier's spread hash of k (a fixed-size key).
func (m *Map[K, V]) tierSpreadOf(k K) uint64 { return tierSpread(m.hash(&k)) }

// tierHashAt returns the map's hash of the key in the slot at sp.
func (m *Map[K, V]) tierHashAt(sp unsafe.Pointer) uint64 {
	if m.tvar {
		return atomic.LoadUint64((*uint64)(sp))
	}
	var e tierPair[K, V]
	tierLoad(unsafe.Pointer(&e), sp, unsafe.Sizeof(e))
	return m.hash(&e.k)
}

// tierAdmit offers k (found in the table with value v) to the tier. It
// runs on a reader's miss: a set held by another admission is skipped.
// Fixed-size pairs go through tierPairAdmit, the string layout here.
func (m *Map[K, V]) tierAdmit(c *tierCore, p unsafe.Pointer, s uint64, k *K, h uint64, v *V) {
	if !m.tvar {
		tierPairAdmit(c, p, s, k, v, m)
		return
	}
	est := c.sk.increment(s)
	if w, full := c.peekVictim(p); full && (est < tierAdmitMin || !tierBeats(est, c.sk.estimate(tierSpread(m.tierHashAt(c.slotAt(p, w)))))) {
		// Missed once so far (among the offers), or the entry CLOCK would
		// evict is used at least as often: rejected without taking the
		// set's lock (see tierPairAdmit).
		c.count(s, cntRejects, 1)
		return
	}
	seq, ok := c.lock(p)
	if !ok {
		return
	}
	defer c.unlock(p, seq)
	if m.tierFind(c, p, s, k, h) >= 0 {
		return // admitted by another reader meanwhile
	}
	w, evict := c.victim(p)
	if evict && !tierBeats(est, c.sk.estimate(tierSpread(m.tierHashAt(c.slotAt(p, w))))) {
		c.count(s, cntRejects, 1)
		return
	}
	if evict {
		c.drop(p, w)
	}
	if !m.tierEncode(c, c.slotAt(p, w), k, h, v) {
		c.count(s, cntRejects, 1)
		return
	}
	c.fill(p, w, tierTag(s))
	c.count(s, cntAdmits, 1)
	if evict {
		c.count(s, cntEvicts, 1)
	}
}

// tierPut keeps the tier coherent with a Put of v for k: a copy there is
// updated (or dropped if the new value does not fit). Keys not in the tier
// are left out: admission is by reads. A nil v drops k's copy (Delete).
// Fixed-size pairs go through tierPairPut.
func (m *Map[K, V]) tierPut(k *K, h uint64, v *V) {
	c := m.tier
	s := tierSpread(h)
	if !m.tvar {
		tierPairPut(c, s, k, v)
		return
	}
	p := c.set(s)
	if c.candidates(p, tierTag(s), c.gen.Load()) == 0 {
		return
	}
	seq := c.lockWait(p)
	if w := m.tierFind(c, p, s, k, h); w >= 0 && (v == nil || !m.tierEncode(c, c.slotAt(p, w), k, h, v)) {
		c.drop(p, w)
	}
	c.unlock(p, seq)
}

// tierDelete drops k's copy, if any.
func (m *Map[K, V]) tierDelete(k *K, h uint64) { m.tierPut(k, h, nil) }

// tierWriteMany keeps the tier coherent with a batch write of keys: each
// key's copy is dropped, or, for a large batch, the whole tier.
func (m *Map[K, V]) tierWriteMany(keys []K) {
	if m.tier == nil || len(keys) == 0 {
		return
	}
	if len(keys) > tierBatchDrop {
		m.tier.invalidateAll()
		return
	}
	for i := range keys {
		m.tierDelete(&keys[i], m.hash(&keys[i]))
	}
}

// MapStats describes a map's memory and its hot tier.
type MapStats struct {
	Len         int    // entries
	Capacity    int    // entries the table takes before it grows
	DeviceBytes uint64 // the table's slots and the string arena
	// HostBytes is the host memory of the control bytes, the recorded
	// Puts' buffer and the hot tier (Cache.Bytes).
	HostBytes uint64
	Cache     CacheStats
	// Batch counts how GetBatch calls were answered: each call picks CPU
	// line loads or GPU rounds by its size and where the table lives, and
	// these counts show which path a program's batches take.
	Batch struct {
		CPUCalls    uint64 // calls answered by CPU line loads
		GPUCalls    uint64 // calls answered by GPU rounds
		SharedCalls uint64 // GPU calls whose round was shared with other calls
		Rounds      uint64 // GPU rounds run (a submission and a wait each)
		RoundKeys   uint64 // keys those rounds looked up
	}
	// CombinedGets counts the Gets that missed the tier while other
	// goroutines were in Get, and were looked up together with theirs in
	// one batch of overlapped line loads (map_getcomb.go; off unless
	// VMEM_COMBINE_GETS=1).
	CombinedGets uint64
	// Shards holds each shard's own MapStats, in the pool's order, for a
	// map on a pool (the fields above are then their sums); nil for a map
	// on one device.
	Shards []MapStats
}

// addBatch adds a shard's batch counts to s's.
func (s *MapStats) addBatch(o *MapStats) {
	s.Batch.CPUCalls += o.Batch.CPUCalls
	s.Batch.GPUCalls += o.Batch.GPUCalls
	s.Batch.SharedCalls += o.Batch.SharedCalls
	s.Batch.Rounds += o.Batch.Rounds
	s.Batch.RoundKeys += o.Batch.RoundKeys
}

// Stats returns the map's memory use and its hot tier's counters; on a
// pool, the shards' sums, with each shard's own in Shards. It is a read:
// it may run beside other reads, not beside a write.
func (m *Map[K, V]) Stats() MapStats {
	if m.sh != nil {
		return m.sh.Stats()
	}
	s := MapStats{Len: m.Len()}
	if t := m.t; t != nil {
		s.Capacity = t.capacity
		for i := range t.segs {
			s.DeviceBytes += t.segs[i].slots.Size()
			s.HostBytes += t.segs[i].fpBlk.Size()
		}
	}
	if m.arena != nil {
		s.DeviceBytes += m.arena.Stats().Reserved
	}
	if !m.wb.blk.IsZero() {
		s.HostBytes += m.wb.blk.Size()
	}
	s.Cache = m.tier.stats()
	s.HostBytes += s.Cache.Bytes
	if m.comb != nil {
		s.CombinedGets = m.comb.shared.Load()
	}
	b := &m.gpu.stats
	s.Batch.CPUCalls = b.cpuPath.Load()
	s.Batch.GPUCalls = b.gpuPath.Load()
	s.Batch.SharedCalls = b.combined.Load()
	s.Batch.Rounds = b.rounds.Load()
	s.Batch.RoundKeys = b.keys.Load()
	return s
}
