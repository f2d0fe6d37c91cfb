package collections

// BTree.BulkLoad: sorted entries appended at the tree's right edge, leaves
// composed full and written sequentially in fresh extents by several
// workers (non-temporal stores on mapped VRAM, DMA on private VRAM).

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/govram/govram/collections/internal/strarena"
	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/waithook"
	"github.com/govram/govram/vmem"
)

// BulkLoad adds entries whose keys are strictly ascending and all above
// the tree's maximum (any keys, for an empty tree): keys[i] gets vals[i].
// Leaves are filled completely and written sequentially, in fresh extents,
// with non-temporal stores on mapped VRAM and by DMA on private VRAM; the
// index is appended at its right edge. It returns ErrUnsorted (and changes
// nothing) when the keys are out of order, an error matching vmem.ErrRange when
// keys and vals differ in length, and vmem.ErrOutOfMemory (changing nothing)
// when memory runs out.
func (t *BTree[K, V]) BulkLoad(keys []K, vals []V) error {
	if t.sh != nil {
		err := t.sh.BulkLoad(keys, vals)
		runtime.KeepAlive(t) // the caller's tree stays reachable for the call, as on one device
		return err
	}
	if t.sk != nil {
		return t.sk.bulkLoad(keys, vals)
	}
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
		mk, _, ok := t.edge(true)
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
	t.done(err)
	return err
}

// bulk appends the entries; for string values hs holds their handles.
func (t *BTree[K, V]) bulk(keys []K, vals []V, hs []strarena.Handle) error {
	// New leaves are written past the batcher and the tier: none of their
	// ids may keep a copy.
	t.lv.invalidate()
	t.etInvalidate()
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
	// leaves (sequential non-temporal stores into VRAM: two or more cores
	// reach the link's limit, one does not; docs/physics.md), each
	// checking the order of its keys and computing its leaves' hints;
	// the index is then appended in one pass.
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
	pin  block.Block // pinned buffer for DMA runs
	run  uint32      // first leaf id in buf
	n    int         // leaves in buf
	kind access.Kind
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
	if e.Kind == access.Direct {
		t.compose(t.lv.ptr(id), keys, vals, hs)
		return nil
	}
	if e.Kind == access.WC && len(keys) == g.cap && g.wholeLines() {
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
	if w.n > 0 && (id != w.run+uint32(w.n) || id>>g.xShift != w.run>>g.xShift || e.Kind != w.kind || uintptr(w.n+1)*g.leafSize > uintptr(len(w.buf))) {
		if err := w.finish(); err != nil {
			return err
		}
	}
	if w.buf == nil {
		size := max(btBulkRun, g.leafSize)
		if e.Kind == access.DMA {
			size = max(4<<20, g.leafSize)
			if b, err := t.mem.Alloc(block.Host, uint64(size)); err == nil {
				w.pin = b
				w.buf = b.Bytes()
			}
		}
		if w.buf == nil {
			w.buf = make([]byte, size)
		}
	}
	if w.n == 0 {
		w.run, w.kind = id, e.Kind
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
	if w.kind == access.WC {
		lineio.StoreLines(unsafe.Add(e.Base, off), w.buf[:size])
		lineio.Fence()
		return nil
	}
	return e.Write(uint64(off), w.buf[:size])
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
		w.t.mem.Free(w.pin)
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
