package collections

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/govram/govram/vmem"
)

// check walks the whole tree and panics on the first broken invariant. The
// invariants build calls it after every write; tests call it directly.
func (t *BTree[K, V]) check() {
	if err := t.verify(); err != nil && !errors.Is(err, vmem.ErrDeviceLost) {
		panic(fmt.Sprintf("collections: BTree invariant: %v", err))
	}
}

func (t *BTree[K, V]) eq(a, b K) bool { return !t.less(a, b) && !t.less(b, a) }

// verify returns the first broken invariant, nil if none.
func (t *BTree[K, V]) verify() error {
	x := &t.idx
	if x.height == 0 {
		if t.n != 0 || x.root != btNil || x.first != btNil || x.last != btNil {
			return fmt.Errorf("empty index but n=%d root=%d first=%d last=%d", t.n, x.root, x.first, x.last)
		}
		return t.verifyTier()
	}
	if err := t.verifyLevels(); err != nil {
		return err
	}
	if err := t.verifyLeaves(); err != nil {
		return err
	}
	return t.verifyTier()
}

// verifyLevels checks the index level by level, top down: each node's
// fill and key order, children's bounds against their separators, and the
// bottom level's links.
func (t *BTree[K, V]) verifyLevels() error {
	x := &t.idx
	// Levels, top down: bounds and fill.
	level := []uint32{x.root}
	for h := x.height - 1; h >= 0; h-- {
		var below []uint32
		for pos, id := range level {
			nd := x.nodes[id]
			if nd.n < 1 || int(nd.n) > x.fan {
				return fmt.Errorf("node %d at level %d has %d children", id, h, nd.n)
			}
			for i := 2; i < int(nd.n); i++ {
				if !t.less(nd.keys[i-1], nd.keys[i]) {
					return fmt.Errorf("node %d at level %d: keys %d and %d out of order", id, h, i-1, i)
				}
			}
			if h == 0 {
				want := btNil
				if pos+1 < len(level) {
					want = level[pos+1]
				}
				if nd.next != want {
					return fmt.Errorf("bottom node %d links to %d, want %d", id, nd.next, want)
				}
				continue
			}
			for i := range int(nd.n) {
				c := x.nodes[nd.kids[i]]
				if !t.eq(c.keys[0], nd.keys[i]) {
					return fmt.Errorf("node %d at level %d: child %d's bound differs from its separator", id, h, i)
				}
				below = append(below, nd.kids[i])
			}
		}
		if h == 0 {
			if level[0] != x.first || level[len(level)-1] != x.last {
				return fmt.Errorf("first/last %d/%d, want %d/%d", x.first, x.last, level[0], level[len(level)-1])
			}
		} else {
			level = below
		}
	}
	return nil
}

// verifyLeaves walks the leaves in key order: each in a used slot of a live
// extent, an extent's leaves together, keys ascending within their bounds,
// hints current, and the counts matching Len and the extents'.
func (t *BTree[K, V]) verifyLeaves() error {
	x := &t.idx
	g := &t.g
	// Leaves in key order.
	seen := map[uint32]bool{}
	runs := map[uint32]int{}
	lastExt := btNil
	total := 0
	var prev K
	havePrev := false
	for b := x.first; b != btNil; b = x.nodes[b].next {
		nd := x.nodes[b]
		if nd.next != btNil && x.nodes[nd.next].prev != b {
			return fmt.Errorf("bottom node %d: back link broken", nd.next)
		}
		for i := range int(nd.n) {
			id, cnt := nd.kids[i], int(nd.cnts[i])
			if seen[id] {
				return fmt.Errorf("leaf %d appears twice", id)
			}
			seen[id] = true
			ei := id >> g.xShift
			if int(ei) >= len(t.lv.ext) || t.lv.ext[ei].blk.IsZero() {
				return fmt.Errorf("leaf %d in missing extent %d", id, ei)
			}
			e := &t.lv.ext[ei]
			s := id & g.xMask
			if s >= uint32(e.cap) || e.bits[s/64]&(1<<(s%64)) == 0 {
				return fmt.Errorf("leaf %d: slot not in use", id)
			}
			if ei != lastExt {
				if _, ok := runs[ei]; ok {
					return fmt.Errorf("extent %d's leaves are not together in key order", ei)
				}
				lastExt = ei
			}
			runs[ei]++
			if cnt < 1 || cnt > g.cap {
				return fmt.Errorf("leaf %d holds %d entries", id, cnt)
			}
			img, err := t.image(id, 2, cnt)
			if err != nil {
				return fmt.Errorf("leaf %d: %w", id, err)
			}
			lb := nd.keys[i]
			if h := nd.hint[i]; h.sh != 0 && h != t.hintFor(unsafe.Add(img, g.keyOff), cnt, lb) {
				return fmt.Errorf("leaf %d: stale hint", id)
			} else if h.sh != 0 && !t.hint {
				return fmt.Errorf("leaf %d: a hint in a tree without hints", id)
			}
			isFirst := b == x.first && i == 0
			for j := range cnt {
				k := *(*K)(unsafe.Add(img, g.keyAt(j)))
				if havePrev && !t.less(prev, k) {
					return fmt.Errorf("leaf %d: key %d not above the previous key", id, j)
				}
				if !isFirst && t.less(k, lb) {
					return fmt.Errorf("leaf %d: key %d below the leaf's bound", id, j)
				}
				prev, havePrev = k, true
			}
			if nb, ni := x.next(b, i); nb != btNil && !t.less(prev, x.nodes[nb].keys[ni]) {
				return fmt.Errorf("leaf %d: last key not below the next leaf's bound", id)
			}
			total += cnt
		}
	}
	if total != t.n {
		return fmt.Errorf("leaves hold %d entries, Len is %d", total, t.n)
	}
	live := 0
	for ei := range t.lv.ext {
		e := &t.lv.ext[ei]
		if e.blk.IsZero() {
			continue
		}
		live++
		if runs[uint32(ei)] != int(e.used) {
			return fmt.Errorf("extent %d: %d slots used, %d leaves in the index", ei, e.used, runs[uint32(ei)])
		}
	}
	if live != t.lv.live {
		return fmt.Errorf("%d extents with memory, %d counted", live, t.lv.live)
	}
	return nil
}
