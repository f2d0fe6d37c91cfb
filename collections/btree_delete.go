package collections

// BTree deletes: Delete, DeleteMin and DeleteMax find the entry, remove it
// through a leaf image (see btree_write.go), and merge or rebalance a leaf
// that falls below a third full with a neighbour.

import (
	"unsafe"

	"github.com/govram/govram/collections/internal/strarena"
)

// Delete removes key and returns its value and true, or false if key was
// absent. The error reports device loss (private-tier leaves).
func (t *BTree[K, V]) Delete(key K) (old V, deleted bool, err error) {
	if t.sh != nil {
		return t.sh.Delete(key)
	}
	if t.sk != nil {
		return t.sk.delete(key)
	}
	if err := t.btUsable(); err != nil {
		return old, false, err
	}
	if t.idx.height == 0 {
		return old, false, nil
	}
	var p btPath
	t.idx.descend(key, &p)
	_, old, deleted, err = t.deleteAt(&p, key, true, 0)
	if deleted {
		t.etPut(&key, nil)
	}
	t.done(err)
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
	if t.sh != nil {
		if right {
			return t.sh.DeleteMax()
		}
		return t.sh.DeleteMin()
	}
	if t.sk != nil {
		return t.sk.deleteEdge(right)
	}
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
	if ok {
		t.etPut(&k, nil)
	}
	t.done(err)
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
	img, hot, err := t.writeImage(id, 0, cnt)
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
		return ok, ov, true, nil
	}
	t.tierWritten(id, img, cnt-1, hot)
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
		rimg, _, err = t.writeImage(rid, 1, rc)
	} else {
		rimg = img
		limg, _, err = t.writeImage(lid, 1, lc)
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
	t.lv.drop(lid) // its count changes even where no line of it does
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
		rimg, _, err = t.writeImage(b.kids[ix+1], 1, int(b.cnts[ix+1]))
	case ix > 0 && b.cnts[ix-1] <= limit:
		li, rimg = ix-1, img
		limg, _, err = t.writeImage(b.kids[ix-1], 1, int(b.cnts[ix-1]))
	default:
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, t.even(b, li, limg, rimg)
}
