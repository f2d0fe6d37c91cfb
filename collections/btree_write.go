package collections

import (
	"fmt"
	"unsafe"

	"github.com/govram/govram/collections/internal/strarena"
	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/buildconst"
)

// Writers change a leaf through an image: the leaf itself where memory is
// ordinary (changes are in place), else a host copy of the lines that hold
// live entries, whose changed lines then go back through the batcher
// (mapped VRAM) or by DMA (private VRAM). Everything an operation may need
// to allocate (host index nodes, a leaf slot) is taken before anything
// changes, so that out of memory leaves the tree as it was.

// scratch returns writer image w.
func (t *BTree[K, V]) scratch(w int) unsafe.Pointer {
	if t.img[w] == nil {
		t.img[w] = make([]uint64, t.g.leafSize/8)
	}
	return unsafe.Pointer(unsafe.SliceData(t.img[w]))
}

// image returns leaf id for changing, with its entries [0, cnt) readable,
// read from the device.
func (t *BTree[K, V]) image(id uint32, w, cnt int) (unsafe.Pointer, error) {
	if t.lv.extentOf(id).Kind == access.Direct {
		return t.lv.ptr(id), nil
	}
	img := t.scratch(w)
	if cnt == 0 {
		return img, nil
	}
	return img, t.loadImage(id, cnt, img)
}

// writeImage is image for a write: the leaf's copy in the tier, if the
// tier holds one, instead of a device read (a write to a hot leaf, or to
// its neighbour when they even out, then costs no round trip). hot reports
// that the tier held the leaf; a write that keeps the leaf passes it to
// tierWritten once it is done.
func (t *BTree[K, V]) writeImage(id uint32, w, cnt int) (img unsafe.Pointer, hot bool, err error) {
	if t.lv.extentOf(id).Kind == access.Direct {
		return t.lv.ptr(id), t.tierHolds(id, cnt), nil
	}
	img = t.scratch(w)
	if cnt == 0 {
		return img, false, nil
	}
	if t.tierImage(id, cnt, img) {
		return img, true, nil
	}
	t.imgReads++
	return img, false, t.loadImage(id, cnt, img)
}

// loadImage reads the live lines of leaf id (cnt > 0 entries) from the
// device into img.
func (t *BTree[K, V]) loadImage(id uint32, cnt int, img unsafe.Pointer) error {
	g := &t.g
	if err := t.lv.load(id, img, g.keyAt(0), g.keyAt(cnt)); err != nil {
		return err
	}
	if g.vs > 0 {
		return t.lv.load(id, img, g.valAt(0), g.valAt(cnt-1)+g.vs)
	}
	return nil
}

// commit writes entries [a, b) of img back to leaf id.
func (t *BTree[K, V]) commit(id uint32, img unsafe.Pointer, a, b int) error {
	t.lv.drop(id) // also when no line changes: the leaf's count does
	if b <= a {
		return nil
	}
	g := &t.g
	if err := t.lv.store(id, img, g.keyAt(a), g.keyAt(b)); err != nil {
		return err
	}
	if g.vs == 0 {
		return nil
	}
	return t.lv.store(id, img, g.valAt(a), g.valAt(b-1)+g.vs)
}

// move copies n entries from slot sj of src to slot dj of dst (which may be
// the same image, overlapping).
func (t *BTree[K, V]) move(dst unsafe.Pointer, dj int, src unsafe.Pointer, sj int, n int) {
	if n <= 0 {
		return
	}
	g := &t.g
	copy(btBytes(unsafe.Add(dst, g.keyAt(dj)), uintptr(n)*g.ks), btBytes(unsafe.Add(src, g.keyAt(sj)), uintptr(n)*g.ks))
	if g.vs == 0 {
		return
	}
	if g.vdense || t.strV {
		copy(btBytes(unsafe.Add(dst, g.valAt(dj)), uintptr(n)*g.vs), btBytes(unsafe.Add(src, g.valAt(sj)), uintptr(n)*g.vs))
		return
	}
	if dst == src && dj > sj {
		for i := n - 1; i >= 0; i-- {
			*(*V)(unsafe.Add(dst, g.valAt(dj+i))) = *(*V)(unsafe.Add(src, g.valAt(sj+i)))
		}
		return
	}
	for i := range n {
		*(*V)(unsafe.Add(dst, g.valAt(dj+i))) = *(*V)(unsafe.Add(src, g.valAt(sj+i)))
	}
}

// put stores entry (k, v) at slot j of img; for string values h is v's
// handle, which the leaf stores instead.
func (t *BTree[K, V]) put(img unsafe.Pointer, j int, k K, v V, h strarena.Handle) {
	*(*K)(unsafe.Add(img, t.g.keyAt(j))) = k
	if t.strV {
		*(*strarena.Handle)(unsafe.Add(img, t.g.valAt(j))) = h
		return
	}
	*(*V)(unsafe.Add(img, t.g.valAt(j))) = v
}

func (t *BTree[K, V]) keyIn(img unsafe.Pointer, j int) K { return *(*K)(unsafe.Add(img, t.g.keyAt(j))) }

// done ends a writing method that returned err: stores left in the
// batcher mark the tree for the next reader, a failure drops the hot tier,
// the tier follows the tree's size, and the invariants build checks the
// whole structure.
func (t *BTree[K, V]) done(err error) {
	t.markDirty()
	t.tierFail(err)
	t.tierGrow()
	if buildconst.Invariants {
		t.check()
	}
}

// Put stores value under key, replacing any value key had: Map's Put, for
// code written against both containers. ReplaceOrInsert does the same and
// also returns the value it replaced. On error (out of memory, device lost,
// vmem.ErrClosed) the tree is unchanged.
func (t *BTree[K, V]) Put(key K, value V) error {
	_, _, err := t.ReplaceOrInsert(key, value)
	return err
}

// ReplaceOrInsert stores value under key. If key was present it returns
// the value it replaces and true, and the tree keeps the stored key's bits
// (google/btree would store the new key; only keys equal under the order
// with other bits, as +0.0 and -0.0, can tell). On error (out of memory,
// device lost) the tree is unchanged.
func (t *BTree[K, V]) ReplaceOrInsert(key K, value V) (old V, replaced bool, err error) {
	if t.sh != nil {
		return t.sh.ReplaceOrInsert(key, value)
	}
	if t.sk != nil {
		return t.sk.replaceOrInsert(key, value)
	}
	if err := t.btUsable(); err != nil {
		return old, false, err
	}
	var h strarena.Handle
	if t.strV {
		// The string goes to the arena first: out of memory there
		// changes nothing.
		if h, err = t.arena.PutString(*(*string)(unsafe.Pointer(&value))); err != nil {
			return old, false, err
		}
	}
	old, replaced, err = t.insert(key, value, h, false)
	if err != nil && t.strV {
		t.arena.Free(h)
	}
	if replaced && err == nil {
		t.etPut(&key, &value) // a key not in the tree has no copy
	}
	t.done(err)
	return old, replaced, err
}

// insert stores (k, v); again is set for the second attempt after share.
func (t *BTree[K, V]) insert(k K, v V, h strarena.Handle, again bool) (V, bool, error) {
	var zero V
	if t.idx.height == 0 {
		return zero, false, t.insertFirst(k, v, h)
	}
	var p btPath
	t.idx.descend(k, &p)
	b := t.idx.nodes[p.id[0]]
	ix := int(p.ix[0])
	id, cnt := b.kids[ix], int(b.cnts[ix])
	img, hot, err := t.writeImage(id, 0, cnt)
	if err != nil {
		return zero, false, err
	}
	g := &t.g
	j, found := t.lower(unsafe.Add(img, g.keyOff), cnt, k)
	if found && t.strV {
		vp := unsafe.Add(img, g.valAt(j))
		oh := *(*strarena.Handle)(vp)
		*(*strarena.Handle)(vp) = h
		if err := t.lv.store(id, img, g.valAt(j), g.valAt(j)+g.vs); err != nil {
			*(*strarena.Handle)(vp) = oh
			return zero, false, err
		}
		t.tierWritten(id, img, cnt, hot)
		old := t.vString(oh)
		t.arena.Free(oh)
		return old, true, nil
	}
	if found {
		vp := unsafe.Add(img, g.valAt(j))
		old := *(*V)(vp)
		*(*V)(vp) = v
		if err := t.lv.store(id, img, g.valAt(j), g.valAt(j)+g.vs); err != nil {
			*(*V)(vp) = old
			return zero, false, err
		}
		t.tierWritten(id, img, cnt, hot)
		return old, true, nil
	}
	if cnt < g.cap {
		t.move(img, j+1, img, j, cnt-j)
		t.put(img, j, k, v, h)
		if err := t.commit(id, img, j, cnt+1); err != nil {
			return zero, false, err
		}
		b.cnts[ix]++
		t.setHint(b, ix, img)
		t.n++
		t.tierWritten(id, img, cnt+1, hot)
		return zero, false, nil
	}
	if !again && !(j == g.cap && b.next == btNil && ix == int(b.n)-1) {
		// Not an append at the right edge: a neighbour with room takes
		// some entries, and the insert starts over.
		if ok, err := t.share(&p, img); err != nil || ok {
			if err != nil {
				return zero, false, err
			}
			return t.insert(k, v, h, true)
		}
	}
	return zero, false, t.split(&p, id, img, j, k, v, h)
}

// insertFirst starts the tree with one leaf.
func (t *BTree[K, V]) insertFirst(k K, v V, h strarena.Handle) error {
	if err := t.idx.reserve(1); err != nil {
		return err
	}
	ei := t.lv.anyExtent()
	if ei < 0 {
		var err error
		if ei, err = t.lv.newExtent(min(btFirstExtent, t.g.extentLeaves())); err != nil {
			return err
		}
	}
	id := t.lv.takeSlot(ei)
	img := t.blank(id, 0)
	t.put(img, 0, k, v, h)
	if err := t.commit(id, img, 0, 1); err != nil {
		t.lv.freeSlot(id)
		return err
	}
	t.idx.start(k, id, 1, t.hintFor(unsafe.Pointer(&k), 1, k))
	t.n = 1
	return nil
}

// blank returns an image for a leaf whose old bytes do not matter.
func (t *BTree[K, V]) blank(id uint32, w int) unsafe.Pointer {
	if t.lv.extentOf(id).Kind == access.Direct {
		return t.lv.ptr(id)
	}
	return t.scratch(w)
}

// split inserts (k, v) at slot j of the full leaf id (image img) by moving
// its upper half, or for an append at the tree's right edge only the new
// entry, into a new leaf next to it.
func (t *BTree[K, V]) split(p *btPath, id uint32, img unsafe.Pointer, j int, k K, v V, sh strarena.Handle) error {
	g := &t.g
	e := g.cap
	b := t.idx.nodes[p.id[0]]
	ix := int(p.ix[0])
	if err := t.idx.reserve(t.idx.growNeed()); err != nil {
		return err
	}
	appendEnd := j == e && b.next == btNil && ix == int(b.n)-1
	nid, moved, err := t.newLeafNear(p, id, appendEnd)
	if err != nil {
		return err
	}
	if moved {
		// The leaf's extent grew or split: its bytes (unchanged so far)
		// are now elsewhere, maybe under another id.
		id = b.kids[ix]
		if img, err = t.image(id, 0, e); err != nil {
			t.lv.freeSlot(nid)
			return err
		}
	}
	h := (e + 1) / 2
	if appendEnd {
		h = e
	}
	rimg := t.blank(nid, 1)
	if j < h {
		t.move(rimg, 0, img, h-1, e-h+1)
		t.move(img, j+1, img, j, h-1-j)
		t.put(img, j, k, v, sh)
		if err := t.commit(id, img, j, h); err != nil {
			return err
		}
	} else {
		t.move(rimg, 0, img, h, j-h)
		t.put(rimg, j-h, k, v, sh)
		t.move(rimg, j-h+1, img, j, e-j)
	}
	rc := e + 1 - h
	if err := t.commit(nid, rimg, 0, rc); err != nil {
		return err
	}
	t.lv.drop(id) // its count changes even where no line of it does
	b.cnts[ix] = uint8(h)
	t.setHint(b, ix, img)
	rk := t.keyIn(rimg, 0)
	t.idx.insertAt(p, 0, ix+1, rk, nid, rc, t.hintFor(unsafe.Add(rimg, g.keyOff), rc, rk))
	t.n++
	return nil
}

// newLeafNear takes a leaf slot for the right neighbour of leaf id (at the
// bottom of path p) in id's extent, growing or splitting the extent when it
// is full; an append at the tree's right edge may start a fresh extent
// instead. moved reports that id's bytes moved (grow or split).
func (t *BTree[K, V]) newLeafNear(p *btPath, id uint32, appendEnd bool) (nid uint32, moved bool, err error) {
	lv := &t.lv
	ei := int(id >> t.g.xShift)
	full := t.g.extentLeaves()
	switch {
	case !lv.full(ei):
	case int(lv.ext[ei].cap) < full:
		if err := lv.grow(ei); err != nil {
			return 0, false, err
		}
		moved = true
	case appendEnd:
		fi, err := lv.newExtent(full)
		if err != nil {
			return 0, false, err
		}
		return lv.takeSlot(fi), false, nil
	default:
		if err := t.splitExtent(p, ei); err != nil {
			return 0, false, err
		}
		moved = true
		ei = int(t.idx.nodes[p.id[0]].kids[p.ix[0]] >> t.g.xShift)
	}
	return lv.takeSlot(ei), moved, nil
}

// splitExtent moves the upper half (in key order) of extent ei's leaves to
// a new extent: one device copy of the block, then the moved leaves are
// renamed in the index. Leaf (p.id[0], p.ix[0]) belongs to ei; the
// extent's leaves are a contiguous run of the leaf order around it.
func (t *BTree[K, V]) splitExtent(p *btPath, ei int) error {
	x := &t.idx
	b, i := p.id[0], int(p.ix[0])
	for {
		pb, pi := x.prev(b, i)
		if pb == btNil || int(x.nodes[pb].kids[pi]>>t.g.xShift) != ei {
			break
		}
		b, i = pb, pi
	}
	type pos struct {
		b uint32
		i int
	}
	var run []pos
	for b != btNil && int(x.nodes[b].kids[i]>>t.g.xShift) == ei {
		run = append(run, pos{b, i})
		b, i = x.next(b, i)
	}
	if len(run) != int(t.lv.ext[ei].used) {
		panic(fmt.Sprintf("collections: BTree: extent %d holds %d leaves but %d lie together in key order", ei, t.lv.ext[ei].used, len(run)))
	}
	upper := run[len(run)/2:]
	ids := make([]uint32, len(upper))
	for k, q := range upper {
		ids[k] = x.nodes[q.b].kids[q.i]
	}
	fi, err := t.lv.splitCopy(ei, ids)
	if err != nil {
		return err
	}
	for k, q := range upper {
		x.nodes[q.b].kids[q.i] = uint32(fi)<<t.g.xShift | ids[k]&t.g.xMask
	}
	return nil
}

// anyExtent returns an extent with a free slot, or -1.
func (lv *btLeaves) anyExtent() int {
	for i := range lv.ext {
		if e := &lv.ext[i]; !e.blk.IsZero() && e.used < e.cap {
			return i
		}
	}
	return -1
}
