package collections

// Routing a GetBatch's keys to their leaves on the GPU.
//
// Finding each key's leaf in the host index costs the CPU a walk of a few
// nodes per key, which bounds a batch at a few tens of millions of keys a
// second on all cores. The bottom of the index is small (per leaf one
// fence key, its address and its entry count: 20 bytes for tens of
// entries), so the GPU keeps a copy of it (the route table) and finds the
// leaves itself (bt_route.comp) before bt_get searches them: the CPU only
// copies the keys in and the answers out.
//
// The table copies the tree as of a count of its writes (BTree.writes);
// any write makes it stale at no cost to the write, and the next batch
// that routes on the GPU rebuilds it (a walk of the bottom nodes and one
// upload: about a millisecond for a million leaves). A batch too small to
// pay for a rebuild routes on the CPU instead.

import (
	"errors"
	"sync"
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/vmem"
)

type btRoutePush struct {
	keys, q, fences, addrs, cnts uint64
	n, ks, sgn, nl               uint32
}

var btRouteKernel = newKernel("bt_route", btRoutePush{})

// btRouteOff routes every batch on the CPU (benchmarks compare both).
var btRouteOff = false

// errRouteCount: the leaves of the index and of the extents differ in
// number, which the invariants forbid; the batch routes on the CPU.
var errRouteCount = errors.New("collections: BTree route table: leaf counts disagree")

// btRoute is a tree's route table: nl leaves' fences, addresses and counts
// in one device block, in step with the tree when ver == BTree.writes.
type btRoute struct {
	mu     sync.Mutex
	blk    block.Block
	room   int // leaves blk has room for
	nl     int
	ver    uint64
	inStep bool
}

// btRouteMin: a batch routes on the GPU when the table is in step, or
// when it has at least this many keys per leaf of the tree over 1/8 (so
// that a rebuild costs the batch little).
const btRouteMin = 8

// routeTable returns the route table's block and leaf count, rebuilt first
// if the tree was written since, or false when a batch of n keys should
// route on the CPU (a rebuild would cost it more than it saves, or no
// device memory is left for the table).
func (t *BTree[K, V]) routeTable(n int) (block.Block, int, bool) {
	if btRouteOff {
		return block.Block{}, 0, false
	}
	rt := &t.rt
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.inStep && rt.ver == t.writes {
		return rt.blk, rt.nl, true
	}
	// The leaves in use, from the extents (a few of them), not from a walk
	// of the index: a batch that routes on the CPU pays nothing here.
	nl := 0
	for i := range t.lv.ext {
		nl += int(t.lv.ext[i].used)
	}
	if nl == 0 || n*btRouteMin < nl {
		return block.Block{}, 0, false
	}
	if err := t.routeBuild(nl); err != nil {
		return block.Block{}, 0, false
	}
	return rt.blk, rt.nl, true
}

// routeBuild writes the table for the nl leaves of the index, walking its
// bottom nodes once (the caller holds rt.mu).
func (t *BTree[K, V]) routeBuild(nl int) error {
	rt := &t.rt
	rt.inStep = false
	size := uint64(nl) * 20
	if rt.room < nl {
		if !rt.blk.IsZero() {
			t.mem.Free(rt.blk)
			rt.blk, rt.room = block.Block{}, 0
		}
		room := nl + nl/4 // a tree that grows rebuilds without reallocating
		b, err := t.mem.Alloc(block.Private, uint64(room)*20)
		if err != nil && errors.Is(err, vmem.ErrOutOfMemory) {
			b, err = t.mem.Alloc(block.Mapped, uint64(room)*20)
		}
		if err != nil {
			return err
		}
		rt.blk, rt.room = b, room
	}
	kd := kdev(t.dev)
	// Written in host memory, then one copy to the device.
	tmp, err := t.mem.Alloc(block.Host, size)
	if err != nil {
		return err
	}
	defer t.mem.Free(tmp)
	fences := unsafe.Slice((*uint64)(tmp.Ptr()), nl)
	addrs := unsafe.Slice((*uint64)(unsafe.Add(tmp.Ptr(), nl*8)), nl)
	cnts := unsafe.Slice((*uint32)(unsafe.Add(tmp.Ptr(), nl*16)), nl)
	flip := uint64(0)
	if t.kk == btKI64 {
		flip = 1 << 63
	} else if t.kk == btKI32 {
		flip = 1 << 31
	}
	x := &t.idx
	j := 0
	for id := x.first; id != btNil; id = x.nodes[id].next {
		nd := x.nodes[id]
		for i := range int(nd.n) {
			k := nd.keys[i]
			var bits uint64
			if t.g.ks == 8 {
				bits = *(*uint64)(unsafe.Pointer(&k))
			} else {
				bits = uint64(*(*uint32)(unsafe.Pointer(&k)))
			}
			if j == nl {
				return errRouteCount // the extents and the index disagree: route on the CPU
			}
			leaf := nd.kids[i]
			e := t.lv.extentOf(leaf)
			fences[j] = bits ^ flip
			addrs[j] = kd.BlockAddr(e.blk, uint64(leaf&t.g.xMask)*uint64(t.g.leafSize))
			cnts[j] = uint32(nd.cnts[i])
			j++
		}
	}
	if j != nl {
		return errRouteCount
	}
	if err := kdev(t.dev).Copy(rt.blk, 0, tmp, 0, size); err != nil {
		return err
	}
	rt.nl, rt.ver, rt.inStep = nl, t.writes, true
	return nil
}

// routeRecord records bt_route for n keys at device address keys, writing
// bt_get's queries at q.
func (t *BTree[K, V]) routeRecord(kb kern.Batch, blk block.Block, nl int, keys, q uint64, n int) {
	base := kdev(t.dev).BlockAddr(blk, 0)
	nn := uint64(nl)
	p := btRoutePush{keys: keys, q: q, fences: base, addrs: base + nn*8, cnts: base + nn*16,
		n: uint32(n), ks: uint32(t.g.ks), nl: uint32(nl)}
	if t.kk == btKI64 || t.kk == btKI32 {
		p.sgn = 1
	}
	kb.Dispatch(btRouteKernel, uint64(n), &p)
}

// routeDrop frees the route table (Clear, Close).
func (t *BTree[K, V]) routeDrop() {
	rt := &t.rt
	rt.mu.Lock()
	if !rt.blk.IsZero() {
		t.mem.Free(rt.blk)
	}
	rt.blk, rt.room, rt.nl, rt.inStep = block.Block{}, 0, 0, false
	rt.mu.Unlock()
}
