package collections

import (
	"math/bits"
	"unsafe"
)

// Hints: the host index keeps, per leaf, four bytes that name the key line
// of the leaf that holds a given key, so that a lookup loads that key line
// and the value line beside it in one batch of streaming loads (one round
// trip, two lines) instead of all the leaf's key lines and then the value
// (two round trips, five lines). Four bytes a leaf of 32 entries are 0.125
// bytes an entry, which keeps the index under a byte per entry; a full
// separator key per key line would take 0.75.
//
// A hint maps keys to buckets: d(k) = (k - lb) >> shift, saturated to
// [0, 255], where lb is the leaf's bound in the index (integer keys only,
// compared as order-preserving uint64s). d is monotone, so boundary j
// (between key lines j-1 and j) is described by a threshold t: a key with
// d(k) > t lies in line j or later, one with d(k) < t before line j, and
// one with d(k) == t in either, so both lines are loaded (still one round
// trip, three lines). t is d(first of line j) - 1 when the last key of
// line j-1 and the first of line j fall in different buckets, so only the
// last key of line j-1 can meet t, when it sits in the bucket just below;
// when the two share a bucket (keys closer than a bucket), t is that
// bucket. The shift is the smallest that fits the leaf's last key line
// into 256 buckets, so a key meets a threshold rarely for spread keys
// (about one lookup in thirty for random uint64 keys) and never for dense
// keys (counters, timestamps).
//
// A hint is relative to the leaf's bound; the few index operations that
// lower a bound without the leaf at hand clear the hint (the lookup then
// loads every key line), and the next write of the leaf recomputes it.

// btHintBounds is how many line boundaries a hint describes: leaves of up
// to four key lines (every default leaf).
const btHintBounds = 3

// btHint is one leaf's hint. The zero value means none.
type btHint struct {
	t  [btHintBounds]uint8 // threshold of boundary j+1
	sh uint8               // shift+1; 0: no hint
}

// btBucket is d(k) for the key bits kv and bound bits lv.
func btBucket(kv, lv uint64, sh uint) uint8 {
	if kv < lv {
		return 0
	}
	d := (kv - lv) >> sh
	if d > 255 {
		return 255
	}
	return uint8(d)
}

// btHintsFor reports whether a tree keeps hints: integer keys (which map
// to buckets) in leaves of at most btHintBounds+1 whole key lines.
func btHintsFor(kk btKeyKind, g *btGeom) bool {
	return kk != btKGeneric && g.keysPerLine > 0 && (g.cap+g.keysPerLine-1)/g.keysPerLine <= btHintBounds+1
}

// hintFor computes the hint of a leaf with bound lb whose cnt keys lie
// back to back at keys (a leaf image's key array, or a caller's slice).
func (t *BTree[K, V]) hintFor(keys unsafe.Pointer, cnt int, lb K) btHint {
	var h btHint
	if !t.hint || cnt <= 0 {
		return h
	}
	g := &t.g
	kpl := g.keysPerLine
	nl := (cnt + kpl - 1) / kpl
	lv := btOrderBits(t.kk, unsafe.Pointer(&lb))
	key := func(j int) uint64 { return btOrderBits(t.kk, unsafe.Add(keys, uintptr(j)*g.ks)) }
	var span uint64
	if nl > 1 {
		if f := key((nl - 1) * kpl); f > lv {
			span = f - lv
		}
	}
	sh := uint(max(bits.Len64(span)-8, 0))
	h.sh = uint8(sh + 1)
	for j := 1; j < nl; j++ {
		a := btBucket(key(j*kpl-1), lv, sh)
		b := btBucket(key(j*kpl), lv, sh)
		if a < b {
			h.t[j-1] = b - 1
		} else {
			h.t[j-1] = b
		}
	}
	return h
}

// lines returns the key lines [lo, hi] of a leaf of nl key lines that may
// hold k (bits kv; lv the leaf's bound). The hint must be set.
func (h *btHint) lines(kv, lv uint64, nl int) (lo, hi int) {
	d := btBucket(kv, lv, uint(h.sh-1))
	for j := 1; j < nl; j++ {
		tj := h.t[j-1]
		switch {
		case d > tj:
			lo, hi = j, j
		case d == tj:
			hi = j
		default:
			return lo, hi
		}
	}
	return lo, hi
}

// setHint recomputes the hint of leaf ix of bottom node b from its image.
func (t *BTree[K, V]) setHint(b *btNode[K], ix int, img unsafe.Pointer) {
	if t.hint {
		b.hint[ix] = t.hintFor(unsafe.Add(img, t.g.keyOff), int(b.cnts[ix]), b.keys[ix])
	}
}
