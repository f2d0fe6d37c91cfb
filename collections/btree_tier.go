package collections

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/hostmem"
	"github.com/govram/govram/internal/prefetch"
)

// The BTree's hot tiers: an entry tier of (key, value) pairs for Get and
// Has, and a leaf cache (tier.go's tierCore, keyed by leaf id) for scans.
//
// The entry tier (tier_pair.go's slots, as the Map's: 16 bytes for uint64
// pairs) exists when the keys are integers (NewBTreeOrdered: equality
// under < is ==, so a hash of the key's bits is exact) and V has a fixed
// size. A Get looks its key up there first, before the host index: a hit
// costs neither the index walk nor the device. A miss goes on as without
// it, and a key found is offered to the entry tier as the Map's misses are
// (sampled, the doorkeeper, TinyLFU against the victim). Per byte it
// serves far more hot keys than the leaf cache when they are spread over
// the tree (a cached 512-byte leaf may hold one hot key; its bytes hold 32
// pairs). Writes update (ReplaceOrInsert of a present key) or drop
// (Delete, DeleteMin, DeleteMax) the key's copy; BulkLoad, Clear, a failed
// write and a lost device drop them all. With an entry tier, the budget is
// split in halves between the two, and a Get's miss admits no leaf: leaves
// are admitted by scans only (and still answer the Gets of their keys).
// Stats sums the two tiers' counters: a Get that the entry tier misses and
// a cached leaf answers counts as a miss and a hit.
//
// The leaf cache:
//
// A slot holds one whole leaf, laid out as in device memory behind an
// 8-byte header:
//
//	off 0  id   uint32  the leaf's id
//	off 4  cnt  uint32  its entry count when it was copied
//	off 8  the leaf's bytes (g.leafSize; only the lines of live entries
//	       are meaningful)
//
// A Get finds the leaf's id and count in the host index as before, then
// looks the leaf up here: on a hit it searches the copied keys and reads
// the value from host memory, with no device access. A slot whose count
// differs from the index's is not used. A scan's window of few leaves (the
// streamed windows, not the large DMA ones) takes every leaf it finds here
// from host memory.
//
// Admission. A miss is sampled as the Map's (tierAdmitSample) and counts
// the leaf in the sketch. A Get admits when the set has a free way, or
// when the sketch says the leaf beats the set's victim: it then loads all
// the leaf's live lines in one batch of independent loads (one round trip,
// as the lookup itself would take) and answers from them. A scan admits leaves it has already read,
// a window's leaves together or none of them (fetchTiered).
//
// Coherence. Device memory stays authoritative and a cached leaf is always
// clean: every store to a leaf (btLeaves.store, BTree.commit), a slot freed
// or taken, and the leaves renamed by an extent split drop their copies by
// id; Clear, BulkLoad, a freed extent, a failed write and a lost device
// drop the whole tier (a generation bump). Writers exclude readers (the
// BTree's concurrency contract), so a drop needs no more than the set's
// lock against admissions. The common writes (an overwrite, an insert
// into a leaf with room, a delete that leaves it a third full) then put
// the leaf back with its new bytes (tierWritten, "Writes and the leaf
// tier" below).
const (
	btTierHdr = 8
	// btTierMaxLeaf: larger leaves are not cached (a slot per leaf of
	// kilobytes would hold few leaves for its memory).
	btTierMaxLeaf = 1024
	// btTierKeyBuf is the stack buffer a hit copies its keys into (larger
	// key arrays use the heap): four lines, the default leaf's keys.
	btTierKeyBuf = 256
)

// applyBTree sizes a tree's hot tier (WithHostCache): copies of the most
// used entries (integer keys, fixed-size values) and leaves in host
// memory, so that a Get or a short scan of hot keys costs host-memory
// reads instead of round trips to the device. The budget is split in
// halves between entries and leaves where there are both; leaves larger
// than 1 KiB are not cached.
func (h hostCache) applyBTree(c *btConfig) { c.cache, c.cacheSet = max(int(h), 0), true }

// btTierSpread hashes a leaf id into the tier's spread hash.
func btTierSpread(id uint32) uint64 {
	return tierSpread(uint64(id)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019)
}

// btTierHead is a slot's header word for leaf id with cnt entries.
func btTierHead(id uint32, cnt int) uint64 { return uint64(id) | uint64(cnt)<<32 }

// btTierFind returns the way of the set at p holding leaf id (any count),
// or -1. Readers call it under the set's sequence (the caller checks it
// again), writers under its lock.
func btTierFind(c *tierCore, p unsafe.Pointer, s uint64, id uint32) int {
	for mt := c.candidates(p, tierTag(s), c.gen.Load()); mt != 0; mt &= mt - 1 {
		w := bits.TrailingZeros64(mt) >> 3
		if uint32(atomic.LoadUint64((*uint64)(c.slotAt(p, w)))) == id {
			return w
		}
	}
	return -1
}

// tierSlot is the slot size of the tree's tier, 0 if its leaves are too
// large to cache.
func (t *BTree[K, V]) tierSlot() uintptr {
	if t.g.leafSize > btTierMaxLeaf {
		return 0
	}
	return btTierHdr + t.g.leafSize
}

// tierBudget is the tier's budget for the tree as it is now (0: none).
func (t *BTree[K, V]) tierBudget() uint64 {
	if t.cacheSet {
		return uint64(t.cache)
	}
	if !kdev(t.dev).OnGPU() || t.lv.naive {
		return 0
	}
	var dev uint64
	for i := range t.lv.ext {
		dev += t.lv.ext[i].blk.Size()
	}
	b := dev / tierDefaultDiv
	if ram := hostmem.TotalRAM(); ram > 0 {
		b = min(b, ram/tierRAMDiv)
	}
	return max(b, tierMinBytes)
}

// etSlot is the slot size of the tree's entry tier, 0 if it has none: the
// keys are not integers, V is a string, or a pair is too large.
func (t *BTree[K, V]) etSlot() uintptr {
	if t.kk == btKGeneric || t.strV {
		return 0
	}
	return tierPairSlot[uint64, V]()
}

// tierSplit divides budget between the leaf tier and the entry tier.
func (t *BTree[K, V]) tierSplit(budget uint64) (leaves, entries uint64) {
	switch {
	case t.etSlot() == 0:
		return budget, 0
	case t.tierSlot() == 0:
		return 0, budget
	}
	return budget - budget/2, budget / 2
}

// tierInit makes the tree's tiers, or none (see tierBudget).
func (t *BTree[K, V]) tierInit() {
	budget := t.tierBudget()
	if budget == 0 {
		return
	}
	lb, eb := t.tierSplit(budget)
	if slot := t.tierSlot(); slot != 0 {
		t.tierSet(newTierCore(t.mem, lb, slot))
	}
	if slot := t.etSlot(); slot != 0 {
		t.etSet(newTierCore(t.mem, eb, slot))
		t.etSeed = rand.Uint64()
	}
}

// tierSet installs c (nil: none) as the tier, freeing the one before.
// Writers only: no reader may be in the old tier.
func (t *BTree[K, V]) tierSet(c *tierCore) {
	if old := t.lv.hot; old != nil {
		if c != nil {
			// The counters go on (Stats reports them since the start).
			copy(unsafe.Slice((*byte)(c.cnt), tierStripes*64), unsafe.Slice((*byte)(old.cnt), tierStripes*64))
		}
		old.free()
	}
	t.lv.hot = c
}

// etSet installs c (nil: none) as the entry tier, freeing the one before.
// Writers only.
func (t *BTree[K, V]) etSet(c *tierCore) {
	if old := t.et; old != nil {
		if c != nil {
			copy(unsafe.Slice((*byte)(c.cnt), tierStripes*64), unsafe.Slice((*byte)(old.cnt), tierStripes*64))
		}
		old.free()
	}
	t.et = c
}

// tierGrow follows the tree's growth with a tier twice as large or more
// (default budget only); the new tier starts empty. Writers call it.
func (t *BTree[K, V]) tierGrow() {
	if t.cacheSet || t.tierEpoch == t.lv.epoch {
		return
	}
	t.tierEpoch = t.lv.epoch
	c, e := t.lv.hot, t.et
	if c == nil && e == nil {
		return // the default is off here
	}
	lb, eb := t.tierSplit(t.tierBudget())
	if c != nil && lb >= 2*c.size {
		if nc := newTierCore(t.mem, lb, c.slot); nc != nil {
			t.tierSet(nc)
		}
	}
	if e != nil && eb >= 2*e.size {
		if nc := newTierCore(t.mem, eb, e.slot); nc != nil {
			t.etSet(nc)
		}
	}
}

// tierFail drops the whole tier after a failed write: what the device
// holds is not known for sure.
func (t *BTree[K, V]) tierFail(err error) {
	if err != nil {
		t.lv.invalidate()
		t.etInvalidate()
	}
}

// etInvalidate drops every entry of the entry tier.
func (t *BTree[K, V]) etInvalidate() {
	if t.et != nil {
		t.et.invalidateAll()
	}
}

// tierSpreadOf is the entry tier's spread hash of a key's order bits.
func (t *BTree[K, V]) tierSpreadOf(kb uint64) uint64 { return mapMix(kb, t.etSeed) }

// etPut keeps the entry tier coherent with a write of k: its copy, if
// any, takes the value v, or is dropped when v is nil (a delete). Writers
// call it before the method returns.
func (t *BTree[K, V]) etPut(k *K, v *V) {
	c := t.et
	if c == nil {
		return
	}
	kb := btOrderBits(t.kk, unsafe.Pointer(k))
	tierPairPut(c, t.tierSpreadOf(kb), &kb, v)
}

// drop removes leaf id's copy from the tier, if any. Writers call it
// before or while they change the leaf, and before the method returns.
func (lv *btLeaves) drop(id uint32) {
	c := lv.hot
	if c == nil {
		return
	}
	s := btTierSpread(id)
	p := c.set(s)
	if c.candidates(p, tierTag(s), c.gen.Load()) == 0 {
		return
	}
	seq := c.lockWait(p)
	if w := btTierFind(c, p, s, id); w >= 0 {
		c.drop(p, w)
	}
	c.unlock(p, seq)
}

// invalidate drops every leaf in the tier.
func (lv *btLeaves) invalidate() {
	if lv.hot != nil {
		lv.hot.invalidateAll()
	}
}

// tierUsable reports whether the tier may answer: not once the device is
// lost (what the tier holds is then no longer confirmed; the tier is
// dropped and Err says why).
func (t *BTree[K, V]) tierUsable(c *tierCore) bool {
	if err := t.dev.Err(); err != nil {
		t.tierLost(err)
		return false
	}
	return true
}

// tierLost drops both tiers after the device was lost (err) and notes it.
func (t *BTree[K, V]) tierLost(err error) {
	t.lv.invalidate()
	t.etInvalidate()
	t.noteErr(err)
}

// getTiered is the leaf tier's part of a lookup of k in leaf id (cnt
// entries). done reports that it answered (a hit, or an admission that
// read the leaf); otherwise the lookup goes to the device as without a
// tier. With an entry tier a miss admits nothing (the entry tier takes
// the key: one round trip, not a leaf's lines as well).
func (t *BTree[K, V]) getTiered(c *tierCore, id uint32, cnt int, k K, val bool) (v V, found, done bool) {
	if !t.tierUsable(c) {
		return v, false, false
	}
	s := btTierSpread(id)
	p := c.set(s)
	if v, found, hit := t.tierLook(c, p, s, id, cnt, k, val); hit {
		return v, found, true
	}
	if t.et != nil {
		return v, false, false
	}
	est, ok := btTierOffer(c, p, s)
	if !ok {
		return v, false, false
	}
	// Admitted: the leaf's live lines in one batch of independent loads
	// (one round trip, as the lookup itself), and the answer from them.
	var buf [btTierMaxLeaf / 8]uint64
	leaf := unsafe.Pointer(&buf)
	if err := t.readLive(id, cnt, leaf); err != nil {
		t.noteErr(err)
		return v, false, true
	}
	g := &t.g
	j, found := t.lower(unsafe.Add(leaf, g.keyOff), cnt, k)
	if found && val && g.vs > 0 {
		v = t.vOut(unsafe.Add(leaf, g.valAt(j)))
	}
	btTierInsert(c, p, s, id, cnt, leaf, g, est)
	return v, found, true
}

// tierLook looks k up in the tier's copy of leaf id without a lock (see
// tier.go): the key lines and the value's words are copied with word loads
// and used only if the set's sequence did not change meanwhile. hit is
// false when the leaf is not there (with this count).
func (t *BTree[K, V]) tierLook(c *tierCore, p unsafe.Pointer, s uint64, id uint32, cnt int, k K, val bool) (v V, found, hit bool) {
	g := &t.g
	want := btTierHead(id, cnt)
	klo := g.keyOff &^ (64 - 1)
	khi := (g.keyAt(cnt) + 63) &^ 63
	var stack [btTierKeyBuf / 8]uint64
	buf := unsafe.Pointer(&stack)
	if khi-klo > btTierKeyBuf || g.vs+16 > btTierKeyBuf {
		buf = unsafe.Pointer(unsafe.SliceData(make([]uint64, g.leafSize/8)))
	}
	var raw unsafe.Pointer // the value's bytes in buf
	for range tierSpins {
		seq := atomic.LoadUint32(tierSeq(p))
		if seq&1 != 0 {
			continue
		}
		w := btTierFind(c, p, s, id)
		var sp unsafe.Pointer
		if w >= 0 {
			sp = c.slotAt(p, w)
			if atomic.LoadUint64((*uint64)(sp)) != want {
				w = -1
			}
		}
		if w < 0 {
			if atomic.LoadUint32(tierSeq(p)) != seq {
				continue
			}
			return v, false, false
		}
		leaf := unsafe.Add(sp, btTierHdr)
		tierLoad(buf, unsafe.Add(leaf, klo), khi-klo)
		j, ok := t.lower(unsafe.Add(buf, g.keyOff-klo), cnt, k)
		raw = nil
		if ok && val && g.vs > 0 {
			// The words holding value j (the keys are no longer needed).
			vlo := g.valAt(j) &^ 7
			tierLoad(buf, unsafe.Add(leaf, vlo), (g.valAt(j)+g.vs+7)&^7-vlo)
			raw = unsafe.Add(buf, g.valAt(j)-vlo)
		}
		if atomic.LoadUint32(tierSeq(p)) != seq {
			continue
		}
		c.touch(p, w, s)
		c.countHit(s)
		if raw != nil {
			v = t.vOut(raw)
		}
		return v, ok, true
	}
	return v, false, false
}

// tierCopy copies the tier's copy of leaf id (cnt entries), if it holds
// one, into the leaf image at dst: its live lines, under the set's
// sequence. It reports whether it did.
func (t *BTree[K, V]) tierCopy(c *tierCore, p unsafe.Pointer, s uint64, id uint32, cnt int, dst unsafe.Pointer) bool {
	g := &t.g
	want := btTierHead(id, cnt)
	for range tierSpins {
		seq := atomic.LoadUint32(tierSeq(p))
		if seq&1 != 0 {
			continue
		}
		w := btTierFind(c, p, s, id)
		if w < 0 || atomic.LoadUint64((*uint64)(c.slotAt(p, w))) != want {
			if atomic.LoadUint32(tierSeq(p)) != seq {
				continue
			}
			return false
		}
		btLiveLines(g, cnt, func(lo, hi uintptr) {
			tierLoad(unsafe.Add(dst, lo), unsafe.Add(c.slotAt(p, w), btTierHdr+lo), hi-lo)
		})
		if atomic.LoadUint32(tierSeq(p)) != seq {
			continue
		}
		c.touch(p, w, s)
		c.countHit(s)
		return true
	}
	return false
}

// btLiveLines calls f with the line-aligned byte ranges of a leaf that
// hold the keys and the values of cnt entries (cnt > 0).
func btLiveLines(g *btGeom, cnt int, f func(lo, hi uintptr)) {
	f(g.keyOff&^63, (g.keyAt(cnt)+63)&^63)
	if g.vs > 0 {
		f(g.valAt(0)&^63, (g.valAt(cnt-1)+g.vs+63)&^63)
	}
}

// btTierOffer counts a miss of the leaf of spread hash s (set p) and
// decides, as the Map's tier does (tierCore.admitMask, tierAdmitMin),
// whether it is offered and admitted: it returns the leaf's sketch
// estimate and true when the leaf should be copied in.
func btTierOffer(c *tierCore, p unsafe.Pointer, s uint64) (uint8, bool) {
	if uint32(c.countMiss(s))&c.admitMask(s) != 0 {
		return 0, false
	}
	est := c.sk.increment(s)
	if !btTierRoom(c, p, est) {
		c.count(s, cntRejects, 1)
		return est, false
	}
	return est, true
}

// btTierRoom reports whether an admission with sketch estimate est may
// take a way of the set at p: a free one, or a victim used less often.
// It takes no lock (a locked instruction here would cost the next
// lookup's device load; see tierCore.count).
func btTierRoom(c *tierCore, p unsafe.Pointer, est uint8) bool {
	w, full := c.peekVictim(p)
	if !full {
		return true
	}
	if est < tierAdmitMin {
		return false
	}
	vid := uint32(atomic.LoadUint64((*uint64)(c.slotAt(p, w))))
	return tierBeats(est, c.sk.estimate(btTierSpread(vid)))
}

// btTierInsert copies leaf id (cnt entries, its live lines at the leaf
// offsets of src) into the set at p and returns its way, or -1. It runs on
// a reader's miss: a set held by another admission is skipped.
func btTierInsert(c *tierCore, p unsafe.Pointer, s uint64, id uint32, cnt int, src unsafe.Pointer, g *btGeom, est uint8) int {
	seq, ok := c.lock(p)
	if !ok {
		return -1
	}
	defer c.unlock(p, seq)
	w, evict := btTierFind(c, p, s, id), false
	if w >= 0 {
		if atomic.LoadUint64((*uint64)(c.slotAt(p, w))) == btTierHead(id, cnt) {
			return w // admitted by another reader meanwhile
		}
	} else {
		w, evict = c.victim(p)
		if evict {
			vid := uint32(atomic.LoadUint64((*uint64)(c.slotAt(p, w))))
			if !tierBeats(est, c.sk.estimate(btTierSpread(vid))) {
				c.count(s, cntRejects, 1)
				return -1
			}
			c.drop(p, w)
		}
	}
	sp := c.slotAt(p, w)
	*(*uint64)(sp) = btTierHead(id, cnt)
	btLiveLines(g, cnt, func(lo, hi uintptr) {
		copy(btBytes(unsafe.Add(sp, btTierHdr+lo), hi-lo), btBytes(unsafe.Add(src, lo), hi-lo))
	})
	c.fill(p, w, tierTag(s))
	c.count(s, cntAdmits, 1)
	if evict {
		c.count(s, cntEvicts, 1)
	}
	return w
}

// Writes and the leaf tier. A write changes a leaf through an image of its
// live lines (btree_write.go). Where the tier holds the leaf, the image is
// its copy there (tierImage), not a device read: a write to a hot leaf
// costs no round trip. Every store to the device drops the leaf's copy
// first, so that a failed write leaves none the device does not confirm;
// once the write is done, tierWritten puts the new image back where the
// leaf was held, and otherwise offers the leaf as a miss offers it. So
// writes to hot keys keep their leaves in the tier (a Range after them
// still finds them there), and a write-heavy tree with no scans uses the
// leaf tier for the leaves it writes most. Writers exclude readers, and
// admissions come from readers only, so none of this races with the sets'
// other writers; the sets' locks are taken all the same.

// btTierWrites turns the above off (false: a write reads its leaf from
// the device and drops its copy, as reads' admissions alone fill the
// tier). A variable: benchmarks compare the two.
var btTierWrites = true

// tierHolds reports whether the tier holds leaf id with cnt entries.
// Writers only.
func (t *BTree[K, V]) tierHolds(id uint32, cnt int) bool {
	c := t.lv.hot
	if c == nil || cnt == 0 {
		return false
	}
	s := btTierSpread(id)
	p := c.set(s)
	w := btTierFind(c, p, s, id)
	return w >= 0 && atomic.LoadUint64((*uint64)(c.slotAt(p, w))) == btTierHead(id, cnt)
}

// tierImage copies the tier's copy of leaf id (cnt > 0 entries), if it
// holds one, into the writer's image dst and reports whether it did. A
// write is a use: the copy's reference bit is set, but no hit is counted
// (Stats' hits and misses are lookups'). Writers only.
func (t *BTree[K, V]) tierImage(id uint32, cnt int, dst unsafe.Pointer) bool {
	c := t.lv.hot
	if c == nil || !btTierWrites || !t.tierUsable(c) {
		return false
	}
	s := btTierSpread(id)
	p := c.set(s)
	w := btTierFind(c, p, s, id)
	if w < 0 || atomic.LoadUint64((*uint64)(c.slotAt(p, w))) != btTierHead(id, cnt) {
		return false
	}
	sp := unsafe.Add(c.slotAt(p, w), btTierHdr)
	btLiveLines(&t.g, cnt, func(lo, hi uintptr) {
		copy(btBytes(unsafe.Add(dst, lo), hi-lo), btBytes(unsafe.Add(sp, lo), hi-lo))
	})
	c.touch(p, w, s)
	return true
}

// tierWritten follows a successful write that left leaf id with cnt
// entries, img its image (its live lines at their leaf offsets): a leaf
// the tier held before the write (hot) goes back in with its new bytes,
// marked as used; any other is offered as a reader's miss is (sampled,
// the sketch against the set's victim). Writers only.
func (t *BTree[K, V]) tierWritten(id uint32, img unsafe.Pointer, cnt int, hot bool) {
	c := t.lv.hot
	if c == nil || cnt == 0 || !btTierWrites || !t.tierUsable(c) {
		return
	}
	s := btTierSpread(id)
	p := c.set(s)
	if hot {
		// The store dropped the copy, so its set has a free way.
		if w := btTierInsert(c, p, s, id, cnt, img, &t.g, tierAdmitMin); w >= 0 {
			atomic.OrUint32(tierRef(p), 1<<w)
		}
		return
	}
	t.wOffers++
	if t.wOffers&c.admitMask(s) != 0 {
		return
	}
	est := c.sk.increment(s)
	if !btTierRoom(c, p, est) {
		c.count(s, cntRejects, 1)
		return
	}
	btTierInsert(c, p, s, id, cnt, img, &t.g, est)
}

// readLive reads the live lines of leaf id (cnt entries) into the leaf
// image at dst (leafSize bytes): on mapped VRAM by streaming loads that do
// not depend on one another, so they overlap (one round trip).
func (t *BTree[K, V]) readLive(id uint32, cnt int, dst unsafe.Pointer) error {
	g := &t.g
	e := t.lv.extentOf(id)
	db := btBytes(dst, g.leafSize)
	switch e.Kind {
	case access.Direct:
		leaf := t.lv.ptr(id)
		btLiveLines(g, cnt, func(lo, hi uintptr) { copy(db[lo:hi], btBytes(unsafe.Add(leaf, lo), hi-lo)) })
	case access.WC:
		t.streamLeaf(e, btWin{id: id, cnt: int32(cnt)}, db)
	default:
		end := (g.keyAt(cnt) + 63) &^ 63
		if g.vs > 0 {
			end = max(end, (g.valAt(cnt-1)+g.vs+63)&^63)
		}
		return e.Read(db[:end], uint64(id&g.xMask)*uint64(g.leafSize))
	}
	return nil
}

// fetchTiered reads a window of few leaves (what fetch would stream, or
// read in place on ordinary memory) through the tier: each leaf found
// there comes from host memory, the others are read from the device and
// offered to the tier (sampled, as misses of Get). The device reads of
// the window are issued together, with no tier work between them, so
// that they overlap as fetch's own do: a locked instruction or a read of
// loaded data between two leaves would make each leaf a round trip.
func (t *BTree[K, V]) fetchTiered(c *tierCore, s *btScan) bool {
	g := &t.g
	_, span := t.windowSpan(s)
	lo := s.lo
	buf := t.buffer(s, span)
	s.base, s.min = unsafe.Pointer(unsafe.SliceData(buf)), lo
	if !t.tierUsable(c) {
		c = nil
	}
	dstOf := func(w btWin) unsafe.Pointer {
		return unsafe.Pointer(&buf[uintptr((w.id&g.xMask)-lo)*g.leafSize])
	}
	if c != nil {
		t.tierPrefetchWindow(c, s)
	}
	var missed uint64 // bit i: s.win[i] is read from the device
	for i, w := range s.win {
		if w.cnt == 0 {
			continue
		}
		if c != nil && i < 64 {
			sh := btTierSpread(w.id)
			if t.tierCopy(c, c.set(sh), sh, w.id, int(w.cnt), dstOf(w)) {
				continue
			}
		}
		missed |= 1 << min(i, 63)
	}
	split := false
	if missed != 0 {
		// Counted only where a window may be cut (fetch says why).
		count := btScanParts >= 2
		var r int32
		if count {
			r = t.reading.Add(1)
		}
		if count && len(s.win) < 64 && missed&(missed-1) != 0 {
			lines := 0
			for m := missed; m != 0; m &= m - 1 {
				lines += g.liveLines(int(s.win[bits.TrailingZeros64(m)].cnt))
			}
			e := t.lv.extentOf(s.win[0].id)
			split = splitWorth(e, bits.OnesCount64(missed), lines, r) && t.streamSplit(e, s, missed)
		}
		for i, w := range s.win {
			if split || w.cnt == 0 || missed&(1<<min(i, 63)) == 0 {
				continue
			}
			if err := t.readLive(w.id, int(w.cnt), dstOf(w)); err != nil {
				if count {
					t.reading.Add(-1)
				}
				t.noteErr(err)
				return false
			}
		}
		if count {
			t.reading.Add(-1)
		}
	}
	if c == nil {
		return true
	}
	// A window's leaves are admitted together or not at all: a Range that
	// finds only some of its leaves here still pays the round trip, so
	// leaves taken without their neighbours would hold slots for little.
	// Every missed leaf is offered first (its miss and sketch count); one
	// offered and refused keeps the rest out. 1.6*10^7 entries, Ranges of
	// 100 from Zipf 1.1 (0.99) starts, the default budget: 60.0% (37.4%)
	// read no leaf from the device instead of 57.6% (32.0%); an ideal
	// tier 65.2% (42.5%) (BenchmarkBTreeTierPolicy).
	var ests [63]uint8
	var admit uint64
	refused := false
	for i, w := range s.win {
		if i >= 63 || w.cnt == 0 || missed&(1<<i) == 0 {
			continue
		}
		sh := btTierSpread(w.id)
		est, ok := btTierOffer(c, c.set(sh), sh)
		switch {
		case ok:
			admit |= 1 << i
			ests[i] = est
		case est > 0:
			refused = true
		}
	}
	if refused {
		return true
	}
	for i, w := range s.win {
		if i >= 63 || admit&(1<<i) == 0 {
			continue
		}
		sh := btTierSpread(w.id)
		btTierInsert(c, c.set(sh), sh, w.id, int(w.cnt), dstOf(w), g, ests[i])
	}
	return true
}

// btTierPrefetchMax bounds the leaves of a window whose tier lines
// tierPrefetchWindow fetches ahead.
const btTierPrefetchMax = 32

// tierPrefetchWindow starts fetching the tier's lines that copying the
// window's leaves out of it reads: every leaf's set header at once, then,
// as they arrive, the lines of each slot whose tag matches. Copied leaf
// after leaf, a hit paid three cache misses one after the other (the
// set's header, the slot's header, its lines), about a dozen for a Range
// of 100 entries; fetched ahead, the window pays about two. What it reads
// is a hint only: tierCopy checks the set's sequence.
func (t *BTree[K, V]) tierPrefetchWindow(c *tierCore, s *btScan) {
	var sets [btTierPrefetchMax]unsafe.Pointer
	var tags [btTierPrefetchMax]uint64
	win := s.win[:min(len(s.win), btTierPrefetchMax)]
	for i, w := range win {
		if w.cnt > 0 {
			sh := btTierSpread(w.id)
			sets[i], tags[i] = c.set(sh), tierTag(sh)
			prefetch.Span(sets[i], tierHdr)
		}
	}
	g, gen := &t.g, c.gen.Load()
	for i, w := range win {
		if sets[i] == nil {
			continue
		}
		for mt := c.candidates(sets[i], tags[i], gen); mt != 0; mt &= mt - 1 {
			sp := c.slotAt(sets[i], bits.TrailingZeros64(mt)>>3)
			prefetch.Line(sp)
			btLiveLines(g, int(w.cnt), func(lo, hi uintptr) {
				prefetch.Span(unsafe.Add(sp, btTierHdr+lo), hi-lo)
			})
		}
	}
}

// tierScans reports whether fetch reads window s through the tier: a
// window that would be streamed (mapped VRAM, few lines) or read in place
// (ordinary memory, few leaves; only when a tier was asked for there).
func (t *BTree[K, V]) tierScans(e *btExtent, s *btScan) bool {
	switch e.Kind {
	case access.Direct:
		return len(s.win) <= btTierScanLeaves
	case access.WC:
		return !t.fetchByDMA(s)
	}
	return false
}

// btTierScanLeaves bounds the windows of ordinary memory read through the
// tier (the streamed windows of mapped VRAM are bounded by the planner).
const btTierScanLeaves = 16

// verifyTier checks that every leaf in the tier is a leaf of the index
// with the count and the live bytes the device holds, and that every
// entry of the entry tier is in the tree with its value.
func (t *BTree[K, V]) verifyTier() error {
	if err := t.verifyEntries(); err != nil {
		return err
	}
	c := t.lv.hot
	if c == nil {
		return nil
	}
	cnts := map[uint32]int{}
	x := &t.idx
	if x.height > 0 {
		for b := x.first; b != btNil; b = x.nodes[b].next {
			nd := x.nodes[b]
			for i := range int(nd.n) {
				cnts[nd.kids[i]] = int(nd.cnts[i])
			}
		}
	}
	g := &t.g
	gen := c.gen.Load()
	for i := uint64(0); i < c.sets; i++ {
		p := unsafe.Add(c.mem, uintptr(i)*c.setBytes)
		if atomic.LoadUint32(tierGen(p)) != gen {
			continue
		}
		for valid := atomic.LoadUint32(tierMeta(p)) & 0xff; valid != 0; valid &= valid - 1 {
			sp := c.slotAt(p, bits.TrailingZeros32(valid))
			head := *(*uint64)(sp)
			id, cnt := uint32(head), int(head>>32)
			want, ok := cnts[id]
			if !ok {
				return fmt.Errorf("tier holds leaf %d, which is not in the index", id)
			}
			if cnt != want {
				return fmt.Errorf("tier holds leaf %d with %d entries, the index %d", id, cnt, want)
			}
			img, err := t.image(id, 2, cnt)
			if err != nil {
				return err
			}
			same := func(off, n uintptr) bool {
				return string(btBytes(unsafe.Add(sp, btTierHdr+off), n)) == string(btBytes(unsafe.Add(img, off), n))
			}
			bad := !same(g.keyOff, uintptr(cnt)*g.ks)
			for j := 0; j < cnt && g.vs > 0; j++ {
				bad = bad || !same(g.valAt(j), g.vs)
			}
			if bad {
				return fmt.Errorf("tier's copy of leaf %d differs from the device", id)
			}
		}
	}
	return nil
}

// verifyEntries checks that every pair in the entry tier is in the tree
// with the value the device holds.
func (t *BTree[K, V]) verifyEntries() error {
	c := t.et
	if c == nil {
		return nil
	}
	gen := c.gen.Load()
	for i := uint64(0); i < c.sets; i++ {
		p := unsafe.Add(c.mem, uintptr(i)*c.setBytes)
		if atomic.LoadUint32(tierGen(p)) != gen {
			continue
		}
		for valid := atomic.LoadUint32(tierMeta(p)) & 0xff; valid != 0; valid &= valid - 1 {
			e := (*tierPair[uint64, V])(c.slotAt(p, bits.TrailingZeros32(valid)))
			k := btFromOrderBits[K](t.kk, e.k)
			if t.idx.height == 0 {
				return fmt.Errorf("entry tier holds key %v of an empty tree", k)
			}
			var path btPath
			t.idx.descend(k, &path)
			nd := t.idx.nodes[path.id[0]]
			ix := int(path.ix[0])
			id, cnt := nd.kids[ix], int(nd.cnts[ix])
			img, err := t.image(id, 2, cnt)
			if err != nil {
				return err
			}
			g := &t.g
			j, ok := t.lower(unsafe.Add(img, g.keyOff), cnt, k)
			if !ok {
				return fmt.Errorf("entry tier holds key %v, which is not in the tree", k)
			}
			if string(btBytes(unsafe.Add(img, g.valAt(j)), g.vs)) != string(btBytes(unsafe.Pointer(&e.v), g.vs)) {
				return fmt.Errorf("entry tier's value of key %v differs from the tree's", k)
			}
		}
	}
	return nil
}

// btFromOrderBits is the key whose btOrderBits are b.
func btFromOrderBits[K any](kk btKeyKind, b uint64) (k K) {
	p := unsafe.Pointer(&k)
	switch kk {
	case btKU64:
		*(*uint64)(p) = b
	case btKI64:
		*(*uint64)(p) = b ^ btSign64
	case btKU32:
		*(*uint32)(p) = uint32(b)
	default:
		*(*uint32)(p) = uint32(b) ^ 1<<31
	}
	return k
}
