package collections

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/strarena"
	"github.com/govram/govram/internal/waithook"
	"github.com/govram/govram/vmem"
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

// image returns leaf id for changing, with its entries [0, cnt) readable.
func (t *BTree[K, V]) image(id uint32, w, cnt int) (unsafe.Pointer, error) {
	if t.lv.extentOf(id).kind == btDirect {
		return t.lv.ptr(id), nil
	}
	img := t.scratch(w)
	if cnt == 0 {
		return img, nil
	}
	g := &t.g
	if err := t.lv.load(id, img, g.keyAt(0), g.keyAt(cnt)); err != nil {
		return nil, err
	}
	if g.vs > 0 {
		if err := t.lv.load(id, img, g.valAt(0), g.valAt(cnt-1)+g.vs); err != nil {
			return nil, err
		}
	}
	return img, nil
}

// commit writes entries [a, b) of img back to leaf id.
func (t *BTree[K, V]) commit(id uint32, img unsafe.Pointer, a, b int) error {
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

// done ends a writing method: stores left in the batcher mark the tree for
// the next reader, and the invariants build checks the whole structure.
func (t *BTree[K, V]) done() {
	t.markDirty()
	if btInvariants {
		t.check()
	}
}

// ReplaceOrInsert stores value under key. If key was present it returns
// the value it replaces and true. On error (out of memory, device lost)
// the tree is unchanged.
func (t *BTree[K, V]) ReplaceOrInsert(key K, value V) (old V, replaced bool, err error) {
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
	t.done()
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
	img, err := t.image(id, 0, cnt)
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
	if t.lv.extentOf(id).kind == btDirect {
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

// Delete removes key and returns its value and true, or false if key was
// absent. The error reports device loss (private-tier leaves).
func (t *BTree[K, V]) Delete(key K) (old V, deleted bool, err error) {
	if err := t.btUsable(); err != nil {
		return old, false, err
	}
	if t.idx.height == 0 {
		return old, false, nil
	}
	var p btPath
	t.idx.descend(key, &p)
	_, old, deleted, err = t.deleteAt(&p, key, true, 0)
	t.done()
	return old, deleted, err
}

// DeleteMin removes the smallest entry and returns it, and false if the
// tree is empty.
func (t *BTree[K, V]) DeleteMin() (key K, value V, ok bool, err error) {
	return t.deleteEdge(false)
}

// DeleteMax removes the largest entry and returns it, and false if the
// tree is empty.
func (t *BTree[K, V]) DeleteMax() (key K, value V, ok bool, err error) {
	return t.deleteEdge(true)
}

func (t *BTree[K, V]) deleteEdge(right bool) (k K, v V, ok bool, err error) {
	if err := t.btUsable(); err != nil {
		return k, v, false, err
	}
	if t.idx.height == 0 {
		return k, v, false, nil
	}
	var p btPath
	t.idx.edge(right, &p)
	slot := 0
	if right {
		slot = -1
	}
	k, v, ok, err = t.deleteAt(&p, k, false, slot)
	t.done()
	return k, v, ok, err
}

// freeString gives a removed string value's space back to the arena.
func (t *BTree[K, V]) freeString(h strarena.Handle) {
	if t.strV {
		t.arena.Free(h)
	}
}

func (t *BTree[K, V]) minLeaf() int { return (t.g.cap + 2) / 3 }

// deleteAt removes from the leaf at the bottom of p the entry with key k
// (byKey) or at slot (-1: the last).
func (t *BTree[K, V]) deleteAt(p *btPath, k K, byKey bool, slot int) (K, V, bool, error) {
	var zk K
	var zv V
	b := t.idx.nodes[p.id[0]]
	ix := int(p.ix[0])
	id, cnt := b.kids[ix], int(b.cnts[ix])
	img, err := t.image(id, 0, cnt)
	if err != nil {
		return zk, zv, false, err
	}
	j := slot
	if slot < 0 {
		j = cnt - 1
	}
	if byKey {
		var found bool
		if j, found = t.lower(unsafe.Add(img, t.g.keyOff), cnt, k); !found {
			return zk, zv, false, nil
		}
	}
	vp := unsafe.Add(img, t.g.valAt(j))
	ok, ov := t.keyIn(img, j), t.vOut(vp)
	var oh strarena.Handle
	if t.strV {
		oh = *(*strarena.Handle)(vp)
	}
	if cnt == 1 {
		t.idx.removeAt(p, 0)
		t.lv.freeSlot(id)
		t.n--
		t.freeString(oh)
		return ok, ov, true, nil
	}
	t.move(img, j, img, j+1, cnt-1-j)
	if err := t.commit(id, img, j, cnt-1); err != nil {
		return zk, zv, false, err
	}
	b.cnts[ix]--
	t.setHint(b, ix, img)
	t.n--
	t.freeString(oh)
	if cnt-1 < t.minLeaf() {
		if err := t.rebalance(p, img); err != nil {
			return ok, ov, true, err
		}
	}
	return ok, ov, true, nil
}

// rebalance joins the underfull leaf at the bottom of p (image img) with a
// neighbour under the same index node: merged when both fit in three
// quarters of a leaf, else evened out.
func (t *BTree[K, V]) rebalance(p *btPath, img unsafe.Pointer) error {
	b := t.idx.nodes[p.id[0]]
	ix := int(p.ix[0])
	if b.n < 2 {
		return nil
	}
	li := ix
	if ix+1 >= int(b.n) {
		li = ix - 1
	}
	lid, rid := b.kids[li], b.kids[li+1]
	lc, rc := int(b.cnts[li]), int(b.cnts[li+1])
	var limg, rimg unsafe.Pointer
	var err error
	if li == ix {
		limg = img
		rimg, err = t.image(rid, 1, rc)
	} else {
		rimg = img
		limg, err = t.image(lid, 1, lc)
	}
	if err != nil {
		return err
	}
	if lc+rc <= t.g.cap*3/4 {
		t.move(limg, lc, rimg, 0, rc)
		if err := t.commit(lid, limg, lc, lc+rc); err != nil {
			return err
		}
		b.cnts[li] = uint8(lc + rc)
		t.setHint(b, li, limg)
		p.ix[0] = int32(li + 1)
		t.idx.removeAt(p, 0)
		t.lv.freeSlot(rid)
		return nil
	}
	return t.even(b, li, limg, rimg)
}

// even moves entries between neighbours li and li+1 of bottom node b
// (images limg and rimg, their entries readable) so that they hold halves,
// and moves the separator between them.
func (t *BTree[K, V]) even(b *btNode[K], li int, limg, rimg unsafe.Pointer) error {
	lid, rid := b.kids[li], b.kids[li+1]
	lc, rc := int(b.cnts[li]), int(b.cnts[li+1])
	want := (lc + rc) / 2
	if lc < want {
		m := want - lc
		t.move(limg, lc, rimg, 0, m)
		t.move(rimg, 0, rimg, m, rc-m)
		if err := t.commit(lid, limg, lc, want); err != nil {
			return err
		}
		if err := t.commit(rid, rimg, 0, rc-m); err != nil {
			return err
		}
	} else {
		m := lc - want
		t.move(rimg, m, rimg, 0, rc)
		t.move(rimg, 0, limg, want, m)
		if err := t.commit(rid, rimg, 0, rc+m); err != nil {
			return err
		}
	}
	b.cnts[li], b.cnts[li+1] = uint8(want), uint8(lc+rc-want)
	b.keys[li+1] = t.keyIn(rimg, 0)
	t.setHint(b, li, limg)
	t.setHint(b, li+1, rimg)
	return nil
}

// share makes room in the full leaf at the bottom of p (image img) by
// evening it out with a neighbour under the same index node that is at
// most three quarters full. It reports whether it did. Leaves then fill
// to about 80% under random inserts instead of 69%: less VRAM, less host
// index and fewer bytes for scans to move.
func (t *BTree[K, V]) share(p *btPath, img unsafe.Pointer) (bool, error) {
	b := t.idx.nodes[p.id[0]]
	ix := int(p.ix[0])
	// At most three quarters full, and room for both halves to take the
	// new entry.
	limit := uint8(min(t.g.cap*3/4, t.g.cap-2))
	var li int
	var limg, rimg unsafe.Pointer
	var err error
	switch {
	case ix+1 < int(b.n) && b.cnts[ix+1] <= limit:
		li, limg = ix, img
		rimg, err = t.image(b.kids[ix+1], 1, int(b.cnts[ix+1]))
	case ix > 0 && b.cnts[ix-1] <= limit:
		li, rimg = ix-1, img
		limg, err = t.image(b.kids[ix-1], 1, int(b.cnts[ix-1]))
	default:
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, t.even(b, li, limg, rimg)
}

// BulkLoad adds entries whose keys are strictly ascending and all above
// the tree's maximum (any keys, for an empty tree): keys[i] gets vals[i].
// Leaves are filled completely and written sequentially, in fresh extents,
// with non-temporal stores on mapped VRAM and by DMA on private VRAM; the
// index is appended at its right edge. It returns ErrUnsorted (and changes
// nothing) when the keys are out of order, an error matching ErrRange when
// keys and vals differ in length, and ErrOutOfMemory (changing nothing)
// when memory runs out.
func (t *BTree[K, V]) BulkLoad(keys []K, vals []V) error {
	if err := t.btUsable(); err != nil {
		return err
	}
	if len(keys) != len(vals) {
		return fmt.Errorf("collections: BTree.BulkLoad: %d keys but %d values: %w", len(keys), len(vals), vmem.ErrRange)
	}
	if len(keys) == 0 {
		return nil
	}
	if t.n > 0 {
		mk, _, ok := t.Max()
		if !ok {
			return t.Err()
		}
		if !t.less(mk, keys[0]) {
			return fmt.Errorf("collections: BTree.BulkLoad: first key not above the tree's maximum: %w", ErrUnsorted)
		}
	}
	var hs []strarena.Handle
	if t.strV {
		// Strings go to the arena first, all or none.
		hs = make([]strarena.Handle, len(vals))
		for i := range vals {
			h, err := t.arena.PutString(*(*string)(unsafe.Pointer(&vals[i])))
			if err != nil {
				for _, h := range hs[:i] {
					t.arena.Free(h)
				}
				return err
			}
			hs[i] = h
		}
	}
	err := t.bulk(keys, vals, hs)
	if err != nil {
		for _, h := range hs {
			t.arena.Free(h)
		}
	}
	t.done()
	return err
}

// bulk appends the entries; for string values hs holds their handles.
func (t *BTree[K, V]) bulk(keys []K, vals []V, hs []strarena.Handle) error {
	g := &t.g
	lv := &t.lv
	e := g.cap
	leaves := (len(keys) + e - 1) / e
	per := g.extentLeaves()
	// Index nodes: full nodes per level, plus a partial one and a new root.
	need := t.idx.growNeed() + 1
	for n := leaves; n > 1; n = (n + t.idx.fan - 1) / t.idx.fan {
		need += (n+t.idx.fan-1)/t.idx.fan + 1
	}
	if err := t.idx.reserve(need); err != nil {
		return err
	}
	var exts []int
	undo := func() {
		for _, i := range exts {
			lv.freeExtent(i)
		}
	}
	for len(exts)*per < leaves {
		n := min(per, leaves-len(exts)*per)
		if len(exts) == 0 && t.n == 0 && lv.live > 0 {
			// A tree emptied by deletes keeps one extent; start over in
			// a full-size one.
			if i := lv.anyExtent(); i >= 0 && lv.ext[i].used == 0 {
				lv.freeExtent(i)
			}
		}
		i, err := lv.newExtent(max(n, min(btFirstExtent, per)))
		if err != nil {
			undo()
			return err
		}
		exts = append(exts, i)
	}
	for k, i := range exts {
		lv.takeRun(i, min(per, leaves-k*per))
	}
	// Leaves are written by several goroutines over disjoint runs of
	// leaves (sequential non-temporal stores: one core moves 22
	// GB/s into VRAM, two or more 33), each checking the order of its
	// keys and computing its leaves' hints; the index is then appended
	// in one pass.
	hints := make([]btHint, leaves)
	workers := btBulkWorkers(leaves)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for wk := range workers {
		l0, l1 := leaves*wk/workers, leaves*(wk+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[wk] = t.bulkLeaves(keys, vals, hs, exts, hints, l0, l1)
		}()
	}
	waithook.Run()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			undo()
			return err
		}
	}
	x := &t.idx
	for li := range leaves {
		a, b := li*e, min((li+1)*e, len(keys))
		id := uint32(exts[li/per])<<g.xShift | uint32(li%per)
		if x.height == 0 {
			x.start(keys[a], id, b-a, hints[li])
			continue
		}
		if nd := x.nodes[x.last]; int(nd.n) < x.fan {
			// Appending to the last bottom node changes no separator.
			n := nd.n
			nd.keys[n], nd.kids[n], nd.cnts[n], nd.hint[n] = keys[a], id, uint8(b-a), hints[li]
			nd.n++
			continue
		}
		var p btPath
		x.edge(true, &p)
		x.insertAt(&p, 0, int(p.ix[0])+1, keys[a], id, b-a, hints[li])
	}
	t.n += len(keys)
	return nil
}

// btBulkWorkers is how many goroutines write a bulk load of leaves leaves:
// one per 512 leaves (256 KiB of uint64 pairs), at most GOMAXPROCS and 8
// (two already fill the link; more help compose and check).
func btBulkWorkers(leaves int) int {
	return max(min(runtime.GOMAXPROCS(0), 8, leaves/512), 1)
}

// bulkLeaves writes leaves [l0, l1) of a bulk load and their hints.
func (t *BTree[K, V]) bulkLeaves(keys []K, vals []V, hs []strarena.Handle, exts []int, hints []btHint, l0, l1 int) error {
	g := &t.g
	e := g.cap
	per := g.extentLeaves()
	w := t.newBulkWriter()
	defer w.close()
	for li := l0; li < l1; li++ {
		a, b := li*e, min((li+1)*e, len(keys))
		if err := t.bulkCheck(keys, a, b); err != nil {
			w.abort()
			return err
		}
		id := uint32(exts[li/per])<<g.xShift | uint32(li%per)
		var hr []strarena.Handle
		if hs != nil {
			hr = hs[a:b]
		}
		if err := w.leaf(id, keys[a:b], vals[a:b], hr); err != nil {
			w.abort()
			return err
		}
		hints[li] = t.hintFor(unsafe.Pointer(&keys[a]), b-a, keys[a])
	}
	if err := w.finish(); err != nil {
		w.abort()
		return err
	}
	return nil
}

// bulkCheck verifies that keys[a:b] ascend strictly from keys[a-1].
func (t *BTree[K, V]) bulkCheck(keys []K, a, b int) error {
	if a > 0 {
		a--
	}
	s := keys[a:b]
	bad := -1
	if t.kk != btKGeneric {
		bad = btUnsortedOrdered(t.kk, unsafe.Pointer(unsafe.SliceData(s)), len(s))
	} else {
		for i := 1; i < len(s); i++ {
			if !t.less(s[i-1], s[i]) {
				bad = i
				break
			}
		}
	}
	if bad >= 0 {
		return fmt.Errorf("collections: BTree.BulkLoad: key %d not above key %d: %w", a+bad, a+bad-1, ErrUnsorted)
	}
	return nil
}

// btUnsortedOrdered returns the first i with a[i] <= a[i-1], or -1.
func btUnsortedOrdered(kk btKeyKind, p unsafe.Pointer, n int) int {
	switch kk {
	case btKU64, btKI64:
		a := unsafe.Slice((*uint64)(p), n)
		var flip uint64
		if kk == btKI64 {
			flip = btSign64
		}
		for i := 1; i < n; i++ {
			if a[i]^flip <= a[i-1]^flip {
				return i
			}
		}
	default:
		a := unsafe.Slice((*uint32)(p), n)
		var flip uint32
		if kk == btKI32 {
			flip = 1 << 31
		}
		for i := 1; i < n; i++ {
			if a[i]^flip <= a[i-1]^flip {
				return i
			}
		}
	}
	return -1
}

// btBulkWriter writes freshly composed leaves: in place on ordinary
// memory; composed in a host line buffer and written with non-temporal
// stores on mapped VRAM (a run of leaves at a time: sequential whole lines,
// the ideal pattern for write-combining); composed in a pinned host buffer
// and written by one DMA per run on private VRAM.
type btBulkWriter[K, V any] struct {
	t    *BTree[K, V]
	buf  []byte
	pin  vmem.Block // pinned buffer for DMA runs
	run  uint32     // first leaf id in buf
	n    int        // leaves in buf
	kind btKind
	// unfenced: leaves were streamed straight from the caller's arrays
	// and want a fence.
	unfenced bool
}

// btBulkRun is how much a bulk writer composes before writing: 64 KiB
// stays in the L2 cache between composing and the streaming stores.
const btBulkRun = 64 << 10

func (t *BTree[K, V]) newBulkWriter() *btBulkWriter[K, V] {
	return &btBulkWriter[K, V]{t: t}
}

func (w *btBulkWriter[K, V]) leaf(id uint32, keys []K, vals []V, hs []strarena.Handle) error {
	t := w.t
	g := &t.g
	e := t.lv.extentOf(id)
	if e.kind == btDirect {
		t.compose(t.lv.ptr(id), keys, vals, hs)
		return nil
	}
	if e.kind == btWC && len(keys) == g.cap && g.wholeLines() {
		// Keys and values fill whole lines exactly as the caller's arrays
		// hold them: stream them from there, no composing.
		if err := w.finish(); err != nil {
			return err
		}
		leaf := t.lv.ptr(id)
		lineio.StoreLines(unsafe.Add(leaf, g.keyOff), unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(keys))), uintptr(len(keys))*g.ks))
		vb := unsafe.Pointer(unsafe.SliceData(vals))
		if t.strV {
			vb = unsafe.Pointer(unsafe.SliceData(hs))
		}
		if g.vs > 0 {
			lineio.StoreLines(unsafe.Add(leaf, g.valOff), unsafe.Slice((*byte)(vb), uintptr(len(keys))*g.vs))
		}
		w.unfenced = true
		return nil
	}
	if w.n > 0 && (id != w.run+uint32(w.n) || id>>g.xShift != w.run>>g.xShift || e.kind != w.kind || uintptr(w.n+1)*g.leafSize > uintptr(len(w.buf))) {
		if err := w.finish(); err != nil {
			return err
		}
	}
	if w.buf == nil {
		size := max(btBulkRun, g.leafSize)
		if e.kind == btDMA {
			size = max(4<<20, g.leafSize)
			if b, err := t.mem.alloc(vmem.Host, uint64(size)); err == nil {
				w.pin = b
				w.buf = b.Bytes()
			}
		}
		if w.buf == nil {
			w.buf = make([]byte, size)
		}
	}
	if w.n == 0 {
		w.run, w.kind = id, e.kind
	}
	t.compose(unsafe.Pointer(&w.buf[uintptr(w.n)*g.leafSize]), keys, vals, hs)
	w.n++
	return nil
}

// finish writes the composed run.
func (w *btBulkWriter[K, V]) finish() error {
	if w.unfenced {
		lineio.Fence()
		w.unfenced = false
	}
	if w.n == 0 {
		return nil
	}
	t := w.t
	g := &t.g
	e := t.lv.extentOf(w.run)
	size := uintptr(w.n) * g.leafSize
	off := uintptr(w.run&g.xMask) * g.leafSize
	w.n = 0
	if w.kind == btWC {
		lineio.StoreLines(unsafe.Add(e.base, off), w.buf[:size])
		lineio.Fence()
		return nil
	}
	return t.dev.Write(e.blk, uint64(off), w.buf[:size])
}

// abort drops the composed run; stores already streamed are fenced so that
// none lands after the extents are given back.
func (w *btBulkWriter[K, V]) abort() {
	w.n = 0
	if w.unfenced {
		lineio.Fence()
		w.unfenced = false
	}
}

func (w *btBulkWriter[K, V]) close() {
	if !w.pin.IsZero() {
		w.t.mem.free(w.pin)
	}
}

// wholeLines reports whether a full leaf's keys and values each fill whole
// lines, laid out as in Go arrays.
func (g *btGeom) wholeLines() bool {
	if g.keyOff%64 != 0 || uintptr(g.cap)*g.ks%64 != 0 {
		return false
	}
	return g.vs == 0 || (g.vdense && g.valOff%64 == 0 && uintptr(g.cap)*g.vs%64 == 0)
}

// compose writes a leaf's entries into img (string values: their handles
// hs).
func (t *BTree[K, V]) compose(img unsafe.Pointer, keys []K, vals []V, hs []strarena.Handle) {
	g := &t.g
	n := len(keys)
	copy(unsafe.Slice((*K)(unsafe.Add(img, g.keyOff)), n), keys)
	if g.vs == 0 {
		return
	}
	if t.strV {
		copy(unsafe.Slice((*strarena.Handle)(unsafe.Add(img, g.valOff)), n), hs)
		return
	}
	if g.vdense {
		copy(unsafe.Slice((*V)(unsafe.Add(img, g.valOff)), n), vals)
		return
	}
	for j, v := range vals {
		*(*V)(unsafe.Add(img, g.valAt(j))) = v
	}
}
