package collections

import (
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/vmem"
)

// The host index: a B+tree over the leaves, in vmem.Host blocks.
//
// A node holds up to fan children. keys[i] is a lower bound of child i's
// keys and, for i >= 1, above every key of child i-1; keys[0] equals the
// node's own bound in its parent (for the leftmost node of a level it is
// only some key once inserted). Bottom nodes (level 0) have leaves as
// children, with each leaf's entry count in cnts, and link to their
// neighbours so that scans walk leaves in key order without a stack.

const (
	btFan  = 64 // children per node: 512 bytes of uint64 keys
	btNil  = ^uint32(0)
	btMaxH = 16 // levels; fan-out 64 at one-third fill reaches 2^32 leaves in 8
)

type btNode[K any] struct {
	n    int32
	next uint32 // bottom level: the next node in key order, btNil at the end
	prev uint32
	keys [btFan]K
	kids [btFan]uint32
	cnts [btFan]uint8
	// hint: bottom level, per leaf, which key line holds a key (see
	// btHint); upper levels leave it zero.
	hint [btFan]btHint
}

// btPath records a descent: the node and the child taken at each level
// (level 0 is the bottom).
type btPath struct {
	id [btMaxH]uint32
	ix [btMaxH]int32
}

type btIndex[K any] struct {
	less   func(a, b K) bool
	kk     btKeyKind
	fan    int
	dev    *vmem.Device
	mem    *owner
	nodes  []*btNode[K]
	free   []uint32
	blocks []block.Block
	root   uint32
	height int // levels; 0 when the tree is empty
	first  uint32
	last   uint32
}

func (x *btIndex[K]) init(dev *vmem.Device, mem *owner, less func(a, b K) bool, kk btKeyKind, fan int) {
	*x = btIndex[K]{less: less, kk: kk, fan: fan, dev: dev, mem: mem, root: btNil, first: btNil, last: btNil}
}

func (x *btIndex[K]) nodeSize() uintptr { return unsafe.Sizeof(btNode[K]{}) }

// hostBytes is the memory of the node blocks and the Go-side tables.
func (x *btIndex[K]) hostBytes() uint64 {
	var n uint64
	for _, b := range x.blocks {
		n += b.Size()
	}
	return n + uint64(cap(x.nodes))*8 + uint64(cap(x.free))*4
}

func (x *btIndex[K]) reset() {
	for _, b := range x.blocks {
		x.mem.Free(b)
	}
	fan := x.fan
	x.init(x.dev, x.mem, x.less, x.kk, fan)
}

// reserve makes sure k nodes can be taken without allocating, so that an
// operation that fails for want of memory fails before it changes anything.
func (x *btIndex[K]) reserve(k int) error {
	for len(x.free) < k {
		// A quarter more nodes at a time (a bulk load: what it needs), so
		// that few reserved nodes sit unused.
		n := max(k-len(x.free), min(max(len(x.nodes)/4, 4), 256))
		sz := x.nodeSize()
		b, err := x.mem.Alloc(block.Host, uint64(n)*uint64(sz))
		if err != nil {
			return err
		}
		x.blocks = append(x.blocks, b)
		base := len(x.nodes)
		for i := range n {
			x.nodes = append(x.nodes, (*btNode[K])(unsafe.Add(b.Ptr(), uintptr(i)*sz)))
		}
		for i := n - 1; i >= 0; i-- {
			x.free = append(x.free, uint32(base+i))
		}
	}
	return nil
}

// newNode takes a reserved node.
func (x *btIndex[K]) newNode() uint32 {
	id := x.free[len(x.free)-1]
	x.free = x.free[:len(x.free)-1]
	nd := x.nodes[id]
	nd.n, nd.next, nd.prev = 0, btNil, btNil
	return id
}

func (x *btIndex[K]) freeNode(id uint32) { x.free = append(x.free, id) }

// route returns the child of nd whose range holds k: the number of keys in
// keys[1:n] that are <= k.
func (x *btIndex[K]) route(nd *btNode[K], k K) int {
	n := int(nd.n)
	if n <= 1 {
		return 0
	}
	switch x.kk {
	case btKU64, btKI64:
		// One branch-free vector count over the node's slots: several
		// times faster than a binary search over the walk (docs/btree.md
		// has the figures; BenchmarkBTreeGet measures it).
		var flip uint64
		if x.kk == btKI64 {
			flip = btSign64
		}
		return lineio.CountLE((*[btFan]uint64)(unsafe.Pointer(&nd.keys)), n, *(*uint64)(unsafe.Pointer(&k))^flip, flip)
	case btKGeneric:
	default:
		return btRouteOrdered(x.kk, unsafe.Pointer(&nd.keys[1]), n-1, unsafe.Pointer(&k))
	}
	lo, hi := 1, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x.less(k, nd.keys[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo - 1
}

// find returns the bottom node and the index of the leaf whose range holds
// k. The tree must not be empty.
func (x *btIndex[K]) find(k K) (uint32, int) {
	id := x.root
	for h := x.height - 1; h > 0; h-- {
		nd := x.nodes[id]
		id = nd.kids[x.route(nd, k)]
	}
	return id, x.route(x.nodes[id], k)
}

// descend is find recording the path.
func (x *btIndex[K]) descend(k K, p *btPath) {
	id := x.root
	for h := x.height - 1; h >= 0; h-- {
		nd := x.nodes[id]
		i := x.route(nd, k)
		p.id[h], p.ix[h] = id, int32(i)
		id = nd.kids[i]
	}
}

// edge records the path to the first (right false) or last leaf.
func (x *btIndex[K]) edge(right bool, p *btPath) {
	id := x.root
	for h := x.height - 1; h >= 0; h-- {
		nd := x.nodes[id]
		i := 0
		if right {
			i = int(nd.n) - 1
		}
		p.id[h], p.ix[h] = id, int32(i)
		id = nd.kids[i]
	}
}

// next steps from leaf (b, i) to the following one; b is btNil past the end.
func (x *btIndex[K]) next(b uint32, i int) (uint32, int) {
	nd := x.nodes[b]
	if i+1 < int(nd.n) {
		return b, i + 1
	}
	return nd.next, 0
}

// prev steps back; b is btNil before the start.
func (x *btIndex[K]) prev(b uint32, i int) (uint32, int) {
	if i > 0 {
		return b, i - 1
	}
	p := x.nodes[b].prev
	if p == btNil {
		return btNil, 0
	}
	return p, int(x.nodes[p].n) - 1
}

// start makes the index of a tree with one leaf.
func (x *btIndex[K]) start(k K, leaf uint32, cnt int, h btHint) {
	id := x.newNode()
	nd := x.nodes[id]
	nd.n, nd.keys[0], nd.kids[0], nd.cnts[0], nd.hint[0] = 1, k, leaf, uint8(cnt), h
	x.root, x.height, x.first, x.last = id, 1, id, id
}

// growNeed is how many nodes an insertion may take: one per level plus a
// new root.
func (x *btIndex[K]) growNeed() int { return x.height + 1 }

// rightmost reports whether the node at level of path p is the last of its
// level.
func (x *btIndex[K]) rightmost(p *btPath, level int) bool {
	for h := level + 1; h < x.height; h++ {
		if int(p.ix[h]) != int(x.nodes[p.id[h]].n)-1 {
			return false
		}
	}
	return true
}

// insertAt puts child kid with bound key at position pos of the node at
// level of path p, splitting nodes up the path as needed (reserve first).
// The path is stale afterwards.
func (x *btIndex[K]) insertAt(p *btPath, level, pos int, key K, kid uint32, cnt int, h btHint) {
	id := p.id[level]
	nd := x.nodes[id]
	if int(nd.n) < x.fan {
		nd.insert(pos, key, kid, cnt, h)
		return
	}
	if x.shareWithSibling(p, level, pos, key, kid, cnt, h) {
		return
	}
	rid := x.newNode()
	r := x.nodes[rid]
	// Appending at the right edge (ascending inserts, BulkLoad) leaves the
	// full node full and starts a new one; otherwise halve.
	mid := x.fan / 2
	if pos == x.fan && x.rightmost(p, level) {
		mid = x.fan
	}
	m := x.fan - mid
	copy(r.keys[:m], nd.keys[mid:x.fan])
	copy(r.kids[:m], nd.kids[mid:x.fan])
	copy(r.cnts[:m], nd.cnts[mid:x.fan])
	copy(r.hint[:m], nd.hint[mid:x.fan])
	r.n, nd.n = int32(m), int32(mid)
	if pos < mid || (pos == mid && mid < x.fan) {
		nd.insert(pos, key, kid, cnt, h)
	} else {
		r.insert(pos-mid, key, kid, cnt, h)
	}
	if level == 0 {
		r.next, r.prev = nd.next, id
		if nd.next != btNil {
			x.nodes[nd.next].prev = rid
		} else {
			x.last = rid
		}
		nd.next = rid
	}
	sep := r.keys[0]
	if level == x.height-1 {
		nr := x.newNode()
		root := x.nodes[nr]
		root.n = 2
		root.keys[0], root.kids[0] = nd.keys[0], id
		root.keys[1], root.kids[1] = sep, rid
		x.root = nr
		x.height++
		return
	}
	x.insertAt(p, level+1, int(p.ix[level+1])+1, sep, rid, 0, btHint{})
}

// shareWithSibling makes room in the full node at level of path p by
// moving children to a neighbour under the same parent that has room, then
// inserts; it reports false (and does nothing) when neither neighbour has
// room or the insertion appends at the right edge. Nodes then fill to
// about 80% under random inserts instead of 69%, which is what keeps the
// host index under a byte per entry.
func (x *btIndex[K]) shareWithSibling(p *btPath, level, pos int, key K, kid uint32, cnt int, h btHint) bool {
	if level == x.height-1 || (pos == x.fan && x.rightmost(p, level)) {
		return false
	}
	nd := x.nodes[p.id[level]]
	parent := x.nodes[p.id[level+1]]
	pi := int(p.ix[level+1])
	if pi > 0 {
		if l := x.nodes[parent.kids[pi-1]]; int(l.n) < x.fan-1 {
			ln := int(l.n)
			btEven(l, nd)
			moved := int(l.n) - ln
			parent.keys[pi] = nd.keys[0]
			if pos <= moved {
				l.insert(ln+pos, key, kid, cnt, h)
			} else {
				nd.insert(pos-moved, key, kid, cnt, h)
			}
			return true
		}
	}
	if pi+1 < int(parent.n) {
		if r := x.nodes[parent.kids[pi+1]]; int(r.n) < x.fan-1 {
			btEven(nd, r)
			if pos <= int(nd.n) {
				nd.insert(pos, key, kid, cnt, h)
			} else {
				r.insert(pos-int(nd.n), key, kid, cnt, h)
			}
			parent.keys[pi+1] = r.keys[0]
			return true
		}
	}
	return false
}

func (nd *btNode[K]) insert(pos int, key K, kid uint32, cnt int, h btHint) {
	n := int(nd.n)
	copy(nd.keys[pos+1:n+1], nd.keys[pos:n])
	copy(nd.kids[pos+1:n+1], nd.kids[pos:n])
	copy(nd.cnts[pos+1:n+1], nd.cnts[pos:n])
	copy(nd.hint[pos+1:n+1], nd.hint[pos:n])
	nd.keys[pos], nd.kids[pos], nd.cnts[pos], nd.hint[pos] = key, kid, uint8(cnt), h
	nd.n++
}

// remove drops child i. Child i's range goes to its left neighbour, or for
// i = 0 to the new first child, whose bound becomes the node's.
func (nd *btNode[K]) remove(i int) {
	n := int(nd.n)
	if i == 0 {
		k0 := nd.keys[0]
		copy(nd.keys[0:n-1], nd.keys[1:n])
		nd.keys[0] = k0
		// The new first child's bound went down: a leaf's hint is
		// relative to its bound, so it no longer holds.
		nd.hint[1] = btHint{}
	} else {
		copy(nd.keys[i:n-1], nd.keys[i+1:n])
	}
	copy(nd.kids[i:n-1], nd.kids[i+1:n])
	copy(nd.cnts[i:n-1], nd.cnts[i+1:n])
	copy(nd.hint[i:n-1], nd.hint[i+1:n])
	nd.n--
}

// minNode is the fill under which a node is rebalanced.
func (x *btIndex[K]) minNode() int { return (x.fan + 2) / 3 }

// removeAt drops the child at level of path p, rebalancing nodes that fall
// under a third full with a sibling (merging when both fit in three
// quarters of a node, else evening them out).
func (x *btIndex[K]) removeAt(p *btPath, level int) {
	id := p.id[level]
	nd := x.nodes[id]
	i := int(p.ix[level])
	nd.remove(i)
	if i == 0 && level > 0 && nd.n > 0 {
		x.fixSpine(nd.kids[0], level-1, nd.keys[0])
	}
	if level == x.height-1 {
		switch {
		case nd.n == 0:
			x.freeNode(id)
			x.root, x.height, x.first, x.last = btNil, 0, btNil, btNil
		case nd.n == 1 && level > 0:
			x.root = nd.kids[0]
			x.height--
			x.freeNode(id)
		}
		return
	}
	if int(nd.n) >= x.minNode() {
		return
	}
	parent := x.nodes[p.id[level+1]]
	pi := int(p.ix[level+1])
	if nd.n == 0 {
		x.unlink(id, level)
		x.freeNode(id)
		x.removeAt(p, level+1)
		return
	}
	if parent.n < 2 {
		return
	}
	li := pi
	if pi+1 >= int(parent.n) {
		li = pi - 1
	}
	lid, rid := parent.kids[li], parent.kids[li+1]
	l, r := x.nodes[lid], x.nodes[rid]
	if int(l.n+r.n) <= x.fan*3/4 {
		n := int(l.n)
		m := int(r.n)
		copy(l.keys[n:n+m], r.keys[:m])
		copy(l.kids[n:n+m], r.kids[:m])
		copy(l.cnts[n:n+m], r.cnts[:m])
		copy(l.hint[n:n+m], r.hint[:m])
		l.n += r.n
		x.unlink(rid, level)
		x.freeNode(rid)
		p.ix[level+1] = int32(li + 1)
		x.removeAt(p, level+1)
		return
	}
	btEven(l, r)
	parent.keys[li+1] = r.keys[0]
}

// fixSpine sets the bound of the first node at each level below, starting
// with node id at level, to k: after child 0 of a node is removed, its
// range starts lower.
func (x *btIndex[K]) fixSpine(id uint32, level int, k K) {
	for ; level >= 0; level-- {
		nd := x.nodes[id]
		nd.keys[0] = k
		if level == 0 {
			nd.hint[0] = btHint{} // relative to the old bound
		}
		id = nd.kids[0]
	}
}

// unlink takes a bottom node out of the level's list.
func (x *btIndex[K]) unlink(id uint32, level int) {
	if level != 0 {
		return
	}
	nd := x.nodes[id]
	if nd.prev != btNil {
		x.nodes[nd.prev].next = nd.next
	} else {
		x.first = nd.next
	}
	if nd.next != btNil {
		x.nodes[nd.next].prev = nd.prev
	} else {
		x.last = nd.prev
	}
}

// btEven moves children between neighbours l and r so that they hold
// halves; r's bound (keys[0]) becomes its new first child's.
func btEven[K any](l, r *btNode[K]) {
	ln, rn := int(l.n), int(r.n)
	want := (ln + rn) / 2
	if ln < want {
		m := want - ln
		copy(l.keys[ln:ln+m], r.keys[:m])
		copy(l.kids[ln:ln+m], r.kids[:m])
		copy(l.cnts[ln:ln+m], r.cnts[:m])
		copy(l.hint[ln:ln+m], r.hint[:m])
		copy(r.keys[:rn-m], r.keys[m:rn])
		copy(r.kids[:rn-m], r.kids[m:rn])
		copy(r.cnts[:rn-m], r.cnts[m:rn])
		copy(r.hint[:rn-m], r.hint[m:rn])
		l.n, r.n = int32(ln+m), int32(rn-m)
		return
	}
	m := ln - want
	if m == 0 {
		return
	}
	copy(r.keys[m:rn+m], r.keys[:rn])
	copy(r.kids[m:rn+m], r.kids[:rn])
	copy(r.cnts[m:rn+m], r.cnts[:rn])
	copy(r.hint[m:rn+m], r.hint[:rn])
	copy(r.keys[:m], l.keys[ln-m:ln])
	copy(r.kids[:m], l.kids[ln-m:ln])
	copy(r.cnts[:m], l.cnts[ln-m:ln])
	copy(r.hint[:m], l.hint[ln-m:ln])
	l.n, r.n = int32(ln-m), int32(rn+m)
}
