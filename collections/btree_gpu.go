package collections

// BTree.GetBatch: many lookups, the leaves searched by a GPU kernel.
//
// One Get walks the host index (host memory, no VRAM) and then reads the
// leaf's key lines and the value's line: one or two PCIe round trips. For
// a batch, each key's leaf is found either by a kernel (bt_route.comp, on
// the GPU's copy of the index's bottom: btree_route.go) or, for batches
// too small to pay for bringing that copy in step, by the CPU walking the
// host index on all cores and writing, per key, the leaf's device
// address, the key and the leaf's entry count into pinned host memory.
// Then one kernel (bt_get.comp) binary-searches each leaf in VRAM and
// writes the values and found flags back: one round trip per two million
// keys, and no VRAM read by the CPU at all.
//
// The kernel compares keys as integers, so it takes the ordered integer
// keys of NewBTreeOrdered (int32, uint32, int64, uint64 and types defined
// on them) with values that are whole 4-byte words (not strings); other
// trees, and devices without kernels, look up on the CPU (Get on all
// cores).

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/vmem"
)

type btGetPush struct {
	q, vals, found                                         uint64
	n, ks, vs, keyOff, valOff, perLine, group, stride, sgn uint32
}

var btGetKernel = newKernel("bt_get", btGetPush{})

// btGPUChunk bounds the keys of one kernel round (tests shrink it).
var btGPUChunk = 1 << 21

// btGPUOff keeps GetBatch on its CPU path (benchmarks compare both).
var btGPUOff = false

// GetBatch looks up every key: vals[i] gets the value of keys[i] (the
// zero value if absent) and, when found is not nil, found[i] whether it is
// there. vals and found must be at least as long as keys (else an error
// matching vmem.ErrRange).
//
// On a GPU, for integer keys (NewBTreeOrdered) and values of whole 4-byte
// words, kernels find each key's leaf (from a device copy of the index's
// bottom, rebuilt by the first large batch after writes; smaller batches
// find leaves on the CPU) and search the leaves in VRAM: one round trip
// per two million keys. Elsewhere the keys are looked up with Get on all cores. Errors:
// vmem.ErrClosed, vmem.ErrDeviceLost.
//
// GetBatch is a read: it may run together with other reads.
func (t *BTree[K, V]) GetBatch(keys []K, vals []V, found []bool) error {
	if t.sh != nil {
		err := t.sh.GetBatch(keys, vals, found)
		runtime.KeepAlive(t) // the caller's tree stays reachable for the call, as on one device
		return err
	}
	if t.sk != nil {
		return t.sk.getBatch(keys, vals, found) // string keys: btree_strkey_ops.go
	}
	if t.closed {
		return vmem.ErrClosed
	}
	if len(vals) < len(keys) || (found != nil && len(found) < len(keys)) {
		return fmt.Errorf("collections: BTree.GetBatch: %d keys, %d values, %d found flags: %w", len(keys), len(vals), len(found), vmem.ErrRange)
	}
	if len(keys) == 0 {
		return nil
	}
	t.sync()
	if t.idx.height == 0 {
		clear(vals[:len(keys)])
		if found != nil {
			clear(found[:len(keys)])
		}
		return nil
	}
	if !btGPUOff && t.gpuOK() {
		err := t.gpuGet(keys, vals, found)
		if !errors.Is(err, kern.ErrNoKernels) {
			return err
		}
	}
	before := t.Err()
	par.Ranges(len(keys), 1<<12, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v, ok := t.get(keys[i], true)
			vals[i] = v
			if found != nil {
				found[i] = ok
			}
		}
	})
	if err := t.Err(); err != nil && before == nil {
		return err
	}
	return nil
}

// gpuOK reports whether bt_get can search this tree's leaves.
func (t *BTree[K, V]) gpuOK() bool {
	g := &t.g
	if t.kk == btKGeneric || t.strV || g.vs%4 != 0 || g.keyOff%4 != 0 || g.valOff%4 != 0 {
		return false
	}
	if !g.vdense && (g.vrec.Stride%4 != 0 || g.vrec.PerLine == 0) {
		return false
	}
	return true
}

func (t *BTree[K, V]) gpuGet(keys []K, vals []V, found []bool) error {
	kb, err := kdev(t.dev).NewBatch()
	if err != nil {
		return err
	}
	defer kb.Close()
	g := &t.g
	c := uint64(min(len(keys), btGPUChunk))
	vs := uint64(g.vs)
	offV := c * 24
	offF := offV + mapRoundUp64(c*vs, 64)
	size := offF + mapRoundUp64(c, 4)
	st, err := kb.Staging(size)
	if err != nil {
		return err
	}
	// Routed on the GPU, the staging memory's first bytes hold the keys,
	// which go to a region of their own past the answers on the device.
	rblk, nl, route := t.routeTable(len(keys))
	offK := mapRoundUp64(size, 64)
	dsize := size
	if route {
		dsize = offK + c*uint64(g.ks)
	}
	// The kernel reads the queries from, and writes the answers to, a
	// device-local twin of the staging layout; one copy each way moves
	// them (as Map.GetBatch does).
	dv, err := kb.Scratch(dsize)
	if err != nil {
		return err
	}
	base := st.Ptr
	p := btGetPush{q: dv, vals: dv + offV, found: dv + offF, ks: uint32(g.ks), vs: uint32(vs),
		keyOff: uint32(g.keyOff), valOff: uint32(g.valOff)}
	if !g.vdense {
		p.perLine, p.group, p.stride = uint32(g.vrec.PerLine), uint32(g.vrec.LinesPer*64), uint32(g.vrec.Stride)
	}
	if t.kk == btKI64 || t.kk == btKI32 {
		p.sgn = 1
	}
	kd := kdev(t.dev) // once, not per key
	for lo := 0; lo < len(keys); lo += int(c) {
		hi := min(lo+int(c), len(keys))
		n := hi - lo
		p.n = uint32(n)
		if route {
			mapParCopy(base, unsafe.Pointer(&keys[lo]), uint64(n)*uint64(g.ks))
			kb.Upload(dv+offK, st, 0, uint64(n)*uint64(g.ks))
			kb.Barrier()
			t.routeRecord(kb, rblk, nl, dv+offK, dv, n)
		} else {
			q := unsafe.Slice((*btQuery)(base), n)
			par.Ranges(n, 1<<12, func(a, b int) {
				for i := a; i < b; i++ {
					q[i] = t.gpuQuery(kd, keys[lo+i])
				}
			})
			kb.Upload(dv, st, 0, uint64(n)*24)
		}
		kb.Barrier()
		kb.Dispatch(btGetKernel, uint64(n), &p)
		kb.Barrier()
		if vs > 0 {
			kb.CopyTo(st, offV, dv+offV, uint64(n)*vs)
		}
		if found != nil {
			kb.CopyTo(st, offF, dv+offF, mapRoundUp64(uint64(n), 4))
		}
		if err := kb.Run(); err != nil {
			return err
		}
		if vs > 0 {
			mapParCopy(unsafe.Pointer(&vals[lo]), unsafe.Add(base, offV), uint64(n)*vs)
		}
		if found != nil {
			mapParCopy(unsafe.Pointer(&found[lo]), unsafe.Add(base, offF), uint64(n))
		}
	}
	return nil
}

// btQuery is one key of bt_get: its leaf's device address, the key's bits
// (zero-extended), the leaf's entry count.
type btQuery struct {
	leaf, key uint64
	cnt, _    uint32
}

// gpuQuery finds k's leaf in the host index.
func (t *BTree[K, V]) gpuQuery(kd kern.Device, k K) btQuery {
	x := &t.idx
	b, i := x.find(k)
	nd := x.nodes[b]
	id, cnt := nd.kids[i], uint32(nd.cnts[i])
	e := t.lv.extentOf(id)
	q := btQuery{leaf: kd.BlockAddr(e.blk, uint64(id&t.g.xMask)*uint64(t.g.leafSize)), cnt: cnt}
	if t.g.ks == 8 {
		q.key = *(*uint64)(unsafe.Pointer(&k))
	} else {
		q.key = uint64(*(*uint32)(unsafe.Pointer(&k)))
	}
	return q
}
