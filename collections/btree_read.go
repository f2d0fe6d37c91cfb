package collections

import (
	"math/bits"
	"unsafe"

	"github.com/govram/govram/collections/internal/strarena"
	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/recs"
)

// btStackLines is how many key lines a lookup loads into a buffer on its
// stack (512 bytes); larger leaves use the heap.
const btStackLines = 8

// Get returns the value stored under key and whether there is one.
//
// Cost on mapped VRAM: the host index (no VRAM), then for integer keys
// (NewBTreeOrdered) one round trip: the leaf's hint in the index names
// the key line, which is loaded together with its values' line (two
// streaming loads in one batch). A leaf whose hint was cleared predicts
// the slot from its bounds instead (one round trip when the guess holds).
// Other keys: one batch of streaming loads for the leaf's key lines, then
// one load for the value's line.
//
// Once the device is lost Get panics with an error matching vmem.ErrDeviceLost
// (GetBatch returns it instead), rather than report absent a key that may
// be there.
func (t *BTree[K, V]) Get(key K) (V, bool) {
	if t.sh != nil {
		return t.sh.Get(key)
	}
	if t.sk != nil {
		return t.sk.get(key)
	}
	t.readable("Get")
	t.sync()
	if t.idx.height == 0 {
		var zero V
		return zero, false
	}
	v, ok := t.get(key, true)
	if !ok {
		t.readCheck("Get") // a loss met on the way (a DMA)
	}
	return v, ok
}

// Has reports whether key is in the tree; it loads no value. It panics
// as Get does.
func (t *BTree[K, V]) Has(key K) bool {
	if t.sh != nil {
		return t.sh.Has(key)
	}
	if t.sk != nil {
		return t.sk.has(key)
	}
	t.readable("Has")
	t.sync()
	if t.idx.height == 0 {
		return false
	}
	_, ok := t.get(key, false)
	if !ok {
		t.readCheck("Has")
	}
	return ok
}

// readable is the entry check of reads without an error result: a closed
// tree, then a lost device, panics.
func (t *BTree[K, V]) readable(op string) {
	if t.closed || t.dev == nil {
		t.usedAfterClose()
	}
	t.readCheck(op)
}

// get looks k up in a tree that is not empty: in the entry tier first,
// which needs only the key (a hit skips the index walk too), then in the
// leaf.
func (t *BTree[K, V]) get(k K, val bool) (v V, ok bool) {
	c := t.et
	if c == nil {
		return t.getLeaf(k, val)
	}
	if err := t.dev.Err(); err != nil {
		t.tierLost(err)
		return t.getLeaf(k, val)
	}
	kb := btOrderBits(t.kk, unsafe.Pointer(&k))
	s := t.tierSpreadOf(kb)
	p := c.set(s)
	if v, ok = tierPairGet[uint64, V](c, p, s, &kb); ok {
		return v, true
	}
	// The stripe's miss count picks the misses offered, as the Map's.
	n := c.countMiss(s)
	offer := val && uint32(n)&c.admitMask(s) == 0
	if offer {
		tierPairPrefetch[uint64, V](c, p, s, t) // during the device read
	}
	v, ok = t.getLeaf(k, val)
	if ok && offer {
		tierPairAdmit(c, p, s, &kb, &v, t)
	}
	return v, ok
}

// getLeaf looks k up through the host index: in the leaf tier's copy of
// its leaf, else in the leaf on the device.
func (t *BTree[K, V]) getLeaf(k K, val bool) (v V, ok bool) {
	x := &t.idx
	b, i := x.find(k)
	nd := x.nodes[b]
	id, cnt := nd.kids[i], int(nd.cnts[i])
	if c := t.lv.hot; c != nil {
		if v, ok, done := t.getTiered(c, id, cnt, k, val); done {
			return v, ok
		}
	}
	g := &t.g
	e := t.lv.extentOf(id)
	switch e.Kind {
	case access.Direct:
		leaf := t.lv.ptr(id)
		s0, s1 := 0, cnt
		if h := &nd.hint[i]; h.sh != 0 {
			// Only the key line the hint names (on a miss of the cache,
			// one line instead of four).
			lo, hi := h.lines(btOrderBits(t.kk, unsafe.Pointer(&k)), btOrderBits(t.kk, unsafe.Pointer(&nd.keys[i])), (cnt+g.keysPerLine-1)/g.keysPerLine)
			s0, s1 = lo*g.keysPerLine, min((hi+1)*g.keysPerLine, cnt)
		}
		j, found := t.lower(unsafe.Add(leaf, g.keyAt(s0)), s1-s0, k)
		if found && val {
			v = t.vOut(unsafe.Add(leaf, g.valAt(s0+j)))
		}
		return v, found
	case access.WC:
		leaf := t.lv.ptr(id)
		if h := &nd.hint[i]; h.sh != 0 {
			// The hint names the key line: it and its values' line come
			// in one batch of streaming loads, one round trip.
			lo, hi := h.lines(btOrderBits(t.kk, unsafe.Pointer(&k)), btOrderBits(t.kk, unsafe.Pointer(&nd.keys[i])), (cnt+g.keysPerLine-1)/g.keysPerLine)
			if hi-lo < 2 {
				if v, found, sure := t.lookLines(leaf, cnt, k, lo, hi-lo+1, true, val); sure {
					return v, found
				}
			}
		}
		if t.kk != btKGeneric && cnt > g.predictMin {
			// The next leaf's bound caps this leaf's keys.
			var ub *K
			if i+1 < int(nd.n) {
				ub = &nd.keys[i+1]
			} else if nd.next != btNil {
				ub = &x.nodes[nd.next].keys[0]
			}
			if ub != nil {
				if v, found, sure := t.predict(leaf, cnt, k, nd.keys[i], *ub, val); sure {
					return v, found
				}
			}
		}
		return t.getWC(leaf, cnt, k, val)
	}
	return t.getDMA(id, cnt, k, val)
}

// getWC looks k up in a mapped-VRAM leaf: all its key lines, then the
// value's line.
func (t *BTree[K, V]) getWC(leaf unsafe.Pointer, cnt int, k K, val bool) (v V, ok bool) {
	g := &t.g
	lo := g.keyOff &^ (recs.LineSize - 1)
	hi := (g.keyAt(cnt) + recs.LineSize - 1) &^ (recs.LineSize - 1)
	var buf [btStackLines * recs.LineSize / 8]uint64
	var kb []byte
	if n := hi - lo; n <= unsafe.Sizeof(buf) {
		kb = unsafe.Slice((*byte)(unsafe.Pointer(&buf)), n)
	} else {
		kb = make([]byte, n)
	}
	lineio.LoadLines(kb, unsafe.Add(leaf, lo))
	j, found := t.lower(unsafe.Add(unsafe.Pointer(unsafe.SliceData(kb)), g.keyOff-lo), cnt, k)
	if found && val {
		v = t.vLoadWC(unsafe.Add(leaf, g.valAt(j)))
	}
	return v, found
}

// btPredictLines bounds the lines one predicted lookup loads together.
const btPredictLines = 6

// predict interpolates k's slot between the leaf's bound lb and the next
// leaf's ub (integer keys only), loads the two key lines around it and
// their values' lines in one batch of streaming loads, and searches
// there. It reports sure when those lines settle the lookup: the key is
// among them, or it lies strictly between keys they hold. Correctness
// never depends on the bounds; they only steer the guess. For keys spread
// evenly over their range (counters, timestamps, hashes) the guess is
// almost always right, and a lookup costs one round trip instead of two.
func (t *BTree[K, V]) predict(leaf unsafe.Pointer, cnt int, k, lb, ub K, val bool) (v V, found, sure bool) {
	g := &t.g
	kv, lv, uv := btOrderBits(t.kk, unsafe.Pointer(&k)), btOrderBits(t.kk, unsafe.Pointer(&lb)), btOrderBits(t.kk, unsafe.Pointer(&ub))
	if kv < lv || kv >= uv {
		return v, false, false
	}
	hi, lo := bits.Mul64(kv-lv, uint64(cnt))
	p, _ := bits.Div64(hi, lo, uv-lv)
	kpl := g.keysPerLine
	nl := (cnt + kpl - 1) / kpl
	l0 := int(p) / kpl
	if int(p)%kpl < kpl/2 {
		l0--
	}
	l0 = min(max(l0, 0), nl-2)
	return t.lookLines(leaf, cnt, k, l0, 2, false, val)
}

// lookLines loads key lines l0 .. l0+nk-1 of a mapped leaf (nk <= 2) and
// the lines of their values in one batch of streaming loads, and searches
// there. exact says that k, if present, is in those lines; otherwise sure
// reports whether the lines settled the lookup.
func (t *BTree[K, V]) lookLines(leaf unsafe.Pointer, cnt int, k K, l0, nk int, exact, val bool) (v V, found, sure bool) {
	g := &t.g
	kpl := g.keysPerLine
	s0, s1 := l0*kpl, min((l0+nk)*kpl, cnt)
	// Key lines, then the lines holding values s0..s1-1.
	var srcs [btPredictLines]unsafe.Pointer
	n := 0
	kl := unsafe.Add(leaf, g.keyOff+uintptr(s0)*g.ks)
	for ; n < nk && s0+n*kpl < s1; n++ {
		srcs[n] = unsafe.Add(kl, n*recs.LineSize)
	}
	keyLines := n
	var v0, v1 uintptr
	if val && g.vs > 0 {
		v0 = g.valAt(s0) &^ (recs.LineSize - 1)
		v1 = (g.valAt(s1-1) + g.vs + recs.LineSize - 1) &^ (recs.LineSize - 1)
		if int((v1-v0)/recs.LineSize) > btPredictLines-keyLines {
			return v, false, false
		}
		for o := v0; o < v1; o += recs.LineSize {
			srcs[n] = unsafe.Add(leaf, o)
			n++
		}
	}
	var buf [btPredictLines * recs.LineSize / 8]uint64
	bb := unsafe.Slice((*byte)(unsafe.Pointer(&buf)), n*recs.LineSize)
	lineio.Gather(bb, srcs[:n])
	j, found := t.lower(unsafe.Pointer(&buf), s1-s0, k)
	switch {
	case found:
	case exact:
		return v, false, true
	case j == 0 && s0 > 0, j == s1-s0 && s1 < cnt:
		return v, false, false // k may lie outside the loaded lines
	default:
		return v, false, true
	}
	if val && g.vs > 0 {
		o := g.valAt(s0+j) - v0
		v = t.vOut(unsafe.Add(unsafe.Pointer(&buf), uintptr(keyLines)*recs.LineSize+o))
	}
	return v, true, true
}

// btOrderBits maps an integer key to a uint64 in the same order.
func btOrderBits(kk btKeyKind, p unsafe.Pointer) uint64 {
	switch kk {
	case btKU64:
		return *(*uint64)(p)
	case btKI64:
		return *(*uint64)(p) ^ btSign64
	case btKU32:
		return uint64(*(*uint32)(p))
	default:
		return uint64(*(*uint32)(p) ^ 1<<31)
	}
}

// getDMA looks k up in a private-tier leaf with one DMA of the leaf's live
// bytes (the round trip's fixed cost dominates, docs/physics.md; the
// bytes hardly matter).
func (t *BTree[K, V]) getDMA(id uint32, cnt int, k K, val bool) (v V, ok bool) {
	g := &t.g
	e := t.lv.extentOf(id)
	off := uint64(id&g.xMask) * uint64(g.leafSize)
	end := g.keyAt(cnt)
	if val && g.vs > 0 && cnt > 0 {
		end = max(end, g.valAt(cnt-1)+g.vs)
	}
	lb := make([]byte, g.leafSize)
	if err := e.Read(lb[:end], off); err != nil {
		t.noteErr(err)
		return v, false
	}
	leaf := unsafe.Pointer(unsafe.SliceData(lb))
	j, found := t.lower(unsafe.Add(leaf, g.keyOff), cnt, k)
	if found && val {
		v = t.vOut(unsafe.Add(leaf, g.valAt(j)))
	}
	return v, found
}

// btLoadWC reads a T at p in mapped VRAM with streaming loads only: one
// line when the T lies in one line (layout keeps values and, in practice,
// keys so), else whole lines by lineio.Copy.
func btLoadWC[T any](p unsafe.Pointer) T {
	var v T
	size := unsafe.Sizeof(v)
	if size == 0 {
		return v
	}
	o := uintptr(p) & (recs.LineSize - 1)
	if o+size <= recs.LineSize {
		var line [recs.LineSize / 8]uint64
		lineio.Load((*[recs.LineSize]byte)(unsafe.Pointer(&line)), unsafe.Add(p, -int(o)))
		return *(*T)(unsafe.Add(unsafe.Pointer(&line), o))
	}
	lineio.Copy(unsafe.Pointer(&v), p, size)
	return v
}

// entry reads key j and value j of leaf id; on mapped VRAM the two loads
// are independent and overlap.
func (t *BTree[K, V]) entry(id uint32, j int) (k K, v V, ok bool) {
	g := &t.g
	e := t.lv.extentOf(id)
	switch e.Kind {
	case access.Direct:
		leaf := t.lv.ptr(id)
		return *(*K)(unsafe.Add(leaf, g.keyAt(j))), t.vOut(unsafe.Add(leaf, g.valAt(j))), true
	case access.WC:
		leaf := t.lv.ptr(id)
		return btLoadWC[K](unsafe.Add(leaf, g.keyAt(j))), t.vLoadWC(unsafe.Add(leaf, g.valAt(j))), true
	}
	off := uint64(id&g.xMask) * uint64(g.leafSize)
	if err := e.Read(btBytes(unsafe.Pointer(&k), g.ks), off+uint64(g.keyAt(j))); err != nil {
		t.noteErr(err)
		return k, v, false
	}
	vb := make([]byte, max(g.vs, 1))
	if err := e.Read(vb[:g.vs], off+uint64(g.valAt(j))); err != nil {
		t.noteErr(err)
		return k, v, false
	}
	return k, t.vOut(unsafe.Pointer(unsafe.SliceData(vb))), true
}

// vOut returns the value stored at p in host-readable memory: the value
// itself, or for string values the string its handle names (read from the
// arena).
func (t *BTree[K, V]) vOut(p unsafe.Pointer) V {
	if !t.strV {
		return *(*V)(p)
	}
	return t.vString(*(*strarena.Handle)(p))
}

// vLoadWC is vOut for a value in mapped VRAM.
func (t *BTree[K, V]) vLoadWC(p unsafe.Pointer) V {
	if !t.strV {
		return btLoadWC[V](p)
	}
	return t.vString(btLoadWC[strarena.Handle](p))
}

// vString reads handle h's string as a V (a string type: same layout).
func (t *BTree[K, V]) vString(h strarena.Handle) V {
	var v V
	s, err := t.arena.String(h)
	if err != nil {
		t.noteErr(err)
	}
	*(*string)(unsafe.Pointer(&v)) = s
	return v
}

// Min returns the smallest key and its value, and false if the tree is
// empty.
func (t *BTree[K, V]) Min() (K, V, bool) {
	if t.sh != nil {
		return t.sh.Min()
	}
	if t.sk != nil {
		return t.sk.minMax(false)
	}
	t.readable("Min")
	k, v, ok := t.edge(false)
	if !ok {
		t.readCheck("Min")
	}
	return k, v, ok
}

// Max returns the largest key and its value, and false if the tree is
// empty.
func (t *BTree[K, V]) Max() (K, V, bool) {
	if t.sh != nil {
		return t.sh.Max()
	}
	if t.sk != nil {
		return t.sk.minMax(true)
	}
	t.readable("Max")
	k, v, ok := t.edge(true)
	if !ok {
		t.readCheck("Max")
	}
	return k, v, ok
}

// edge is Max (right) or Min without the loss checks, for the methods
// with an error result: false if the tree is empty or a read failed
// (kept for Err).
func (t *BTree[K, V]) edge(right bool) (k K, v V, ok bool) {
	if t.sk != nil {
		return t.sk.edge(right)
	}
	t.sync()
	if t.idx.height == 0 {
		return k, v, false
	}
	if !right {
		return t.entry(t.idx.nodes[t.idx.first].kids[0], 0)
	}
	nd := t.idx.nodes[t.idx.last]
	i := nd.n - 1
	return t.entry(nd.kids[i], int(nd.cnts[i])-1)
}
