package collections

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// The pair tier: a hot tier (tier.go) whose slot is one fixed-size
// key-value pair (tierPair), written once for every container that caches
// entries by key: the Map's fixed-size keys and values, and the BTree's
// entry tier (integer keys, fixed-size values).
//
// The functions take the key's spread hash s (tierSpread of a Map's hash;
// the BTree's mix of the key) and the set p = c.set(s), which the caller
// has computed already: the lookup path makes no call through a function
// value. Admission needs the spread hash of the key it would evict, which
// only the container knows how to compute: it passes spread, called on
// admissions only.

// tierPairSlot is the slot size of pairs of K and V, 0 if a pair is too
// large to cache (tierMaxSlot).
func tierPairSlot[K comparable, V any]() uintptr {
	n := max(mapRoundUp(unsafe.Sizeof(tierPair[K, V]{}), 8), 8)
	if n > tierMaxSlot {
		return 0
	}
	return n
}

// tierPairGet looks k up in the set at p without a lock (see tier.go).
func tierPairGet[K comparable, V any](c *tierCore, p unsafe.Pointer, s uint64, k *K) (v V, ok bool) {
	tag, gen := tierTag(s), c.gen.Load()
	for range tierSpins {
		seq := atomic.LoadUint32(tierSeq(p))
		mt := c.candidates(p, tag, gen)
		if mt == 0 {
			// No way has k's tag: a miss, which needs no validation (a
			// miss read while a writer changes the set only sends the
			// lookup to the device, which is authoritative). The common
			// miss is short: the fewer instructions a miss adds, the more
			// lookups' device loads the CPU keeps in flight at once.
			return v, false
		}
		if seq&1 != 0 {
			continue
		}
		way := -1
		for ; mt != 0; mt &= mt - 1 {
			w := bits.TrailingZeros64(mt) >> 3
			var e tierPair[K, V]
			tierLoad(unsafe.Pointer(&e), c.slotAt(p, w), unsafe.Sizeof(e))
			if e.k == *k {
				v, ok, way = e.v, true, w
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

// tierPairFind returns the way of the set at p that holds k, or -1. The
// caller holds the set's lock, or is a writer (no reader runs).
func tierPairFind[K comparable, V any](c *tierCore, p unsafe.Pointer, s uint64, k *K) int {
	for mt := c.candidates(p, tierTag(s), c.gen.Load()); mt != 0; mt &= mt - 1 {
		w := bits.TrailingZeros64(mt) >> 3
		if (*tierPair[K, V])(c.slotAt(p, w)).k == *k {
			return w
		}
	}
	return -1
}

// tierPairKeyAt returns the key of the slot at sp, read with word loads
// (the slot may be changing: a caller without the set's lock uses it only
// to decide whether to try).
func tierPairKeyAt[K comparable, V any](sp unsafe.Pointer) K {
	var e tierPair[K, V]
	tierLoad(unsafe.Pointer(&e), sp, unsafe.Sizeof(e))
	return e.k
}

// tierPairAdmit offers k (found on the device with value v) to the tier.
// It runs on a reader's miss, sampled by the caller (tierCore.countMiss,
// tierCore.admitMask): a set held by another admission is skipped. spread
// returns the spread hash of a key in the tier (the victim's).
// tierSpreader is the container that gives a key's spread hash (Map,
// BTree); a type parameter, not a func value, and the key by value, so an
// offer allocates nothing (a method value passed as a func, or a pointer
// passed through a generic call, escapes: one allocation each).
type tierSpreader[K any] interface{ tierSpreadOf(K) uint64 }

// tierPairPrefetch is tierCore.prefetchOffer for a set of pairs: the
// victim's spread hash comes from its key.
func tierPairPrefetch[K comparable, V any, H tierSpreader[K]](c *tierCore, p unsafe.Pointer, s uint64, h H) {
	w, full := c.peekVictim(p)
	var vs uint64
	if full {
		vs = h.tierSpreadOf(tierPairKeyAt[K, V](c.slotAt(p, w)))
	}
	c.prefetchOffer(s, vs, full)
}

func tierPairAdmit[K comparable, V any, H tierSpreader[K]](c *tierCore, p unsafe.Pointer, s uint64, k *K, v *V, h H) {
	est := c.sk.increment(s)
	if w, full := c.peekVictim(p); full {
		// Missed once so far (among the offers): not yet a candidate; or
		// the entry CLOCK would evict is used at least as often. Rejected
		// without taking the set's lock (a locked instruction here would
		// cost the next lookup's device load; see tierCore.count).
		if est < tierAdmitMin {
			c.count(s, cntRejects, 1)
			return
		}
		if vk := tierPairKeyAt[K, V](c.slotAt(p, w)); !tierBeats(est, c.sk.estimate(h.tierSpreadOf(vk))) {
			c.count(s, cntRejects, 1)
			return
		}
	}
	seq, ok := c.lock(p)
	if !ok {
		return
	}
	defer c.unlock(p, seq)
	if tierPairFind[K, V](c, p, s, k) >= 0 {
		return // admitted by another reader meanwhile
	}
	w, evict := c.victim(p)
	if evict {
		vk := (*tierPair[K, V])(c.slotAt(p, w)).k
		if !tierBeats(est, c.sk.estimate(h.tierSpreadOf(vk))) {
			c.count(s, cntRejects, 1)
			return
		}
	}
	if evict {
		c.drop(p, w)
	}
	*(*tierPair[K, V])(c.slotAt(p, w)) = tierPair[K, V]{*k, *v}
	c.fill(p, w, tierTag(s))
	c.count(s, cntAdmits, 1)
	if evict {
		c.count(s, cntEvicts, 1)
	}
}

// tierPairPut keeps the tier coherent with a write of v for k: a copy
// there is updated. Keys not in the tier are left out: admission is by
// reads. A nil v drops k's copy (a delete).
func tierPairPut[K comparable, V any](c *tierCore, s uint64, k *K, v *V) {
	p := c.set(s)
	if c.candidates(p, tierTag(s), c.gen.Load()) == 0 {
		return
	}
	seq := c.lockWait(p)
	if w := tierPairFind[K, V](c, p, s, k); w >= 0 {
		if v == nil {
			c.drop(p, w)
		} else {
			(*tierPair[K, V])(c.slotAt(p, w)).v = *v
		}
	}
	c.unlock(p, seq)
}
