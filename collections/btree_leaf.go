package collections

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/lines"
	"github.com/govram/govram/internal/recs"
	"github.com/govram/govram/vmem"
)

const (
	// btMaxLeaf bounds the entries of a leaf so that a count fits the one
	// byte the host index keeps per leaf.
	btMaxLeaf = 255
	// btKeyBytes is what the default leaf's keys take: four lines, so one
	// batch of streaming loads (about the cost of one and a half single
	// loads) answers a search, and a leaf holds enough entries (32 uint64)
	// for its 13 bytes of host index to stay under half a byte per entry.
	btKeyBytes = 256
	// btExtentBytes is an extent's target size: long enough that one DMA
	// of it runs near the link's speed (the fixed cost of a DMA small
	// against it; docs/physics.md), so a scan's transfers outrun its
	// callback, and one GPU copy splits it.
	btExtentBytes = 4 << 20
	// btMaxExtentLeaves keeps leaf ids (extent<<shift | slot) in 32 bits
	// with room for billions of leaves.
	btMaxExtentLeaves = 1 << 16
	// btFirstExtent is the first extent's size in leaves; it doubles up to
	// the full size so a small tree takes little device memory.
	btFirstExtent = 4
)

// btGeom is the leaf layout.
type btGeom struct {
	ks, vs    uintptr // key and value sizes
	cap       int     // entries per leaf (E)
	keyOff    uintptr // the key array's offset in a leaf
	valOff    uintptr // the value field's offset in a leaf
	vrec      recs.Record
	vdense    bool // values sit back to back (stride = size)
	leafSize  uintptr
	leafLines int
	xShift    uint   // leaves per extent = 1<<xShift
	xMask     uint32 // slot = id & xMask
	// keysPerLine and predictMin: a lookup predicts a slot (see
	// BTree.predict) when keys sit whole in lines and a leaf has more
	// than predictMin entries (more than two key lines).
	keysPerLine int
	predictMin  int
}

func btGeomFor[K, V any](entries, extent int) (btGeom, error) {
	var k K
	var v V
	g := btGeom{ks: unsafe.Sizeof(k), vs: unsafe.Sizeof(v)}
	e := entries
	if e == 0 {
		e = 8
		if g.ks > 0 {
			e = int(btKeyBytes / g.ks)
		}
		e = min(max(e, 8), btMaxLeaf)
	}
	g.cap = e
	fields := []lines.Field{lines.FieldOf[K]("keys", e)}
	g.vrec = recs.Of[V]()
	g.vdense = g.vs == 0 || g.vrec.Dense()
	if g.vs > 0 {
		if g.vdense {
			fields = append(fields, lines.FieldOf[V]("vals", e))
		} else {
			// Groups of whole lines, so that no value straddles two.
			fields = append(fields, lines.Field{Name: "vals", Size: recs.LineSize, Align: recs.LineSize, Count: g.vrec.Lines(e)})
		}
	}
	nl, err := lines.NewNodeLayout(fields...)
	if err != nil {
		return g, fmt.Errorf("collections: NewBTree: leaf layout: %w", err)
	}
	g.keyOff = nl.Fields[0].Offset
	if g.vs > 0 {
		g.valOff = nl.Fields[1].Offset
	}
	g.leafSize = max(nl.Size, recs.LineSize)
	g.leafLines = int(g.leafSize / recs.LineSize)
	g.predictMin = btMaxLeaf + 1
	if g.ks > 0 && g.ks <= recs.LineSize && recs.LineSize%g.ks == 0 && g.keyOff%recs.LineSize == 0 {
		g.keysPerLine = int(recs.LineSize / g.ks)
		g.predictMin = 2 * g.keysPerLine
	}
	x := extent
	if x <= 0 {
		x = int(btExtentBytes / g.leafSize)
	}
	x = min(max(x, 2), btMaxExtentLeaves)
	g.xShift = uint(bits.Len(uint(x - 1)))
	g.xMask = 1<<g.xShift - 1
	return g, nil
}

// valAt is the offset in a leaf of value j.
func (g *btGeom) valAt(j int) uintptr {
	if g.vdense {
		return g.valOff + uintptr(j)*g.vs
	}
	return g.valOff + g.vrec.Offset(j)
}

// keyAt is the offset in a leaf of key j.
func (g *btGeom) keyAt(j int) uintptr { return g.keyOff + uintptr(j)*g.ks }

// extentLeaves is how many leaves a full extent holds.
func (g *btGeom) extentLeaves() int { return 1 << g.xShift }

// btExtent is one block of leaves. Its leaves hold one contiguous key range
// of the tree (in any order inside the block), so a scan finds them
// together.
type btExtent struct {
	blk         block.Block
	access.View          // how the CPU reaches blk
	cap         int32    // leaf slots in blk
	used        int32    // slots in use
	bits        []uint64 // slot in use
	bat         *lines.Batcher
	boff        uintptr // offset of base inside bat's region
}

// btLeaves allocates leaves and moves their bytes.
type btLeaves struct {
	dev     *vmem.Device
	mem     *owner
	g       *btGeom
	tier    vmem.Tier
	naive   bool
	ext     []btExtent
	freeExt []int32
	bats    []*lines.Batcher
	live    int // extents with memory
	// hot is the tree's hot tier (nil: none); every change of a leaf's
	// bytes or of what its id names drops its copy there.
	hot *tierCore
	// epoch counts the changes of the extents' memory (the tier's size
	// follows it).
	epoch uint64
}

func (lv *btLeaves) init(dev *vmem.Device, mem *owner, g *btGeom, tier vmem.Tier, naive bool) {
	*lv = btLeaves{dev: dev, mem: mem, g: g, tier: tier, naive: naive}
}

func (lv *btLeaves) extentOf(id uint32) *btExtent { return &lv.ext[id>>lv.g.xShift] }

// ptr is the CPU address of leaf id (direct and WC extents only).
func (lv *btLeaves) ptr(id uint32) unsafe.Pointer {
	e := &lv.ext[id>>lv.g.xShift]
	return unsafe.Add(e.Base, uintptr(id&lv.g.xMask)*lv.g.leafSize)
}

// allocBlock takes a block for n leaves in the tree's tier, spilling from
// mapped to private VRAM when mapped memory runs out.
func (lv *btLeaves) allocBlock(n int) (block.Block, error) {
	size := uint64(n) * uint64(lv.g.leafSize)
	b, err := lv.mem.Alloc(block.Tier(lv.tier), size)
	if err != nil && lv.tier == vmem.Mapped && errors.Is(err, vmem.ErrOutOfMemory) {
		if b2, err2 := lv.mem.Alloc(block.Private, size); err2 == nil {
			return b2, nil
		}
	}
	return b, err
}

// view is how the CPU reaches block b: the device's rule, or plain loads
// for the naive baseline.
func (lv *btLeaves) view(b block.Block) access.View {
	v := kdev(lv.dev).View(b)
	if lv.naive {
		v = v.Plain()
	}
	return v
}

// newExtent makes an extent of n leaf slots and returns its index.
func (lv *btLeaves) newExtent(n int) (int, error) {
	b, err := lv.allocBlock(n)
	if err != nil {
		return 0, err
	}
	var i int
	if k := len(lv.freeExt); k > 0 {
		i = int(lv.freeExt[k-1])
		lv.freeExt = lv.freeExt[:k-1]
	} else {
		lv.ext = append(lv.ext, btExtent{})
		i = len(lv.ext) - 1
	}
	e := &lv.ext[i]
	words := (lv.g.extentLeaves() + 63) / 64
	bm := e.bits
	if cap(bm) < words {
		bm = make([]uint64, words)
	}
	*e = btExtent{blk: b, View: lv.view(b), cap: int32(n), bits: bm[:words]}
	clear(e.bits)
	lv.live++
	lv.epoch++
	if e.Kind == access.WC {
		lv.attach(i)
	}
	return i, nil
}

// setBlock moves extent i to block b (after a grow), keeping its slots.
func (lv *btLeaves) setBlock(i int, b block.Block, n int) {
	e := &lv.ext[i]
	e.blk, e.View, e.cap, e.bat = b, lv.view(b), int32(n), nil
	lv.epoch++
	if e.Kind == access.WC {
		lv.attach(i)
	}
}

// chunkBase is the start of the driver mapping that holds e's block.
func (lv *btLeaves) chunkBase(e *btExtent) uintptr {
	return uintptr(e.Base) - uintptr(kdev(lv.dev).BlockOffset(e.blk))
}

// attach gives WC extent i a batcher. One batcher serves every extent whose
// block lies within lines.MaxRegion of its base, so stores to all leaves
// sort together; a block outside every batcher's region rebuilds the set.
func (lv *btLeaves) attach(i int) {
	e := &lv.ext[i]
	for _, b := range lv.bats {
		if lv.fits(b, e) {
			e.bat, e.boff = b, uintptr(e.Base)-uintptr(b.Base())
			return
		}
	}
	lv.rebatch()
}

func (lv *btLeaves) fits(b *lines.Batcher, e *btExtent) bool {
	lo, base := uintptr(e.Base), uintptr(b.Base())
	return lo >= base && lo-base+uintptr(e.blk.Size()) <= b.Size()
}

// btBatchLines is the batch size: 4096 lines (256 KiB of stores, about 0.5
// MiB of host memory) sort into runs dense enough to share pages.
const btBatchLines = 4096

// rebatch flushes every batcher and makes a new set: WC extents sorted by
// chunk address, one batcher per window of lines.MaxRegion bytes starting
// at the lowest chunk (one batcher in practice).
func (lv *btLeaves) rebatch() {
	lv.flush()
	lv.bats = lv.bats[:0]
	var wc []int
	for i := range lv.ext {
		e := &lv.ext[i]
		e.bat = nil
		if !e.blk.IsZero() && e.Kind == access.WC {
			wc = append(wc, i)
		}
	}
	slices.SortFunc(wc, func(a, b int) int {
		return btCompareUintptr(lv.chunkBase(&lv.ext[a]), lv.chunkBase(&lv.ext[b]))
	})
	for _, i := range wc {
		e := &lv.ext[i]
		if n := len(lv.bats); n > 0 && lv.fits(lv.bats[n-1], e) {
			b := lv.bats[n-1]
			e.bat, e.boff = b, uintptr(e.Base)-uintptr(b.Base())
			continue
		}
		base := unsafe.Add(e.Base, -int(kdev(lv.dev).BlockOffset(e.blk)))
		b, err := lines.NewBatcher(base, lines.MaxRegion, btBatchLines)
		if err != nil {
			// Cannot happen for a 64-byte aligned mapping; without a
			// batcher the extent's stores go out at once.
			continue
		}
		lv.bats = append(lv.bats, b)
		e.bat, e.boff = b, uintptr(e.Base)-uintptr(base)
	}
}

func btCompareUintptr(a, b uintptr) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// flush writes every pending store.
func (lv *btLeaves) flush() {
	for _, b := range lv.bats {
		b.Flush()
	}
}

func (lv *btLeaves) pending() bool {
	for _, b := range lv.bats {
		if b.Pending() > 0 {
			return true
		}
	}
	return false
}

// reset frees every extent; pending stores are dropped first so none lands
// in memory that was given back.
func (lv *btLeaves) reset() {
	for _, b := range lv.bats {
		b.Discard()
	}
	lv.bats = nil
	for i := range lv.ext {
		if e := &lv.ext[i]; !e.blk.IsZero() {
			lv.mem.Free(e.blk)
		}
	}
	lv.ext, lv.freeExt, lv.live = nil, nil, 0
	lv.epoch++
	lv.invalidate()
}

// freeExtent gives extent i's memory back.
func (lv *btLeaves) freeExtent(i int) {
	e := &lv.ext[i]
	if e.Kind == access.WC {
		lv.flush()
	}
	lv.mem.Free(e.blk)
	bm := e.bits
	*e = btExtent{bits: bm}
	lv.freeExt = append(lv.freeExt, int32(i))
	lv.live--
	lv.epoch++
	// Its ids may name other leaves later: none may stay in the tier.
	lv.invalidate()
}

// freeSlot returns slot id's leaf to its extent, and the extent's memory
// when it was the last leaf (unless it is the only extent: a tree that
// empties and refills would otherwise allocate each time).
func (lv *btLeaves) freeSlot(id uint32) {
	i := int(id >> lv.g.xShift)
	lv.drop(id)
	e := &lv.ext[i]
	s := id & lv.g.xMask
	e.bits[s/64] &^= 1 << (s % 64)
	e.used--
	if e.used == 0 && lv.live > 1 {
		lv.freeExtent(i)
	}
}

// takeSlot marks a free slot of extent i used and returns its leaf id. The
// extent must have room.
func (lv *btLeaves) takeSlot(i int) uint32 {
	e := &lv.ext[i]
	for w, word := range e.bits {
		if ^word == 0 {
			continue
		}
		s := w*64 + bits.TrailingZeros64(^word)
		if s >= int(e.cap) {
			break
		}
		e.bits[w] |= 1 << (s % 64)
		e.used++
		id := uint32(i)<<lv.g.xShift | uint32(s)
		lv.drop(id)
		return id
	}
	panic("collections: BTree: takeSlot on a full extent")
}

// takeRun marks slots [0, n) of the fresh extent i used.
func (lv *btLeaves) takeRun(i, n int) {
	e := &lv.ext[i]
	for s := 0; s < n; s += 64 {
		k := min(n-s, 64)
		e.bits[s/64] = ^uint64(0) >> (64 - k)
	}
	e.used = int32(n)
}

func (lv *btLeaves) full(i int) bool { return lv.ext[i].used == lv.ext[i].cap }

// grow doubles extent i's block (it must be below the full size), copying
// its leaves on the device; slots, and so leaf ids, stay.
func (lv *btLeaves) grow(i int) error {
	e := &lv.ext[i]
	n := min(int(e.cap)*2, lv.g.extentLeaves())
	b, err := lv.allocBlock(n)
	if err != nil {
		return err
	}
	if e.Kind == access.WC {
		lv.flush()
	}
	if err := kdev(lv.dev).Copy(b, 0, e.blk, 0, uint64(e.cap)*uint64(lv.g.leafSize)); err != nil {
		lv.mem.Free(b)
		return err
	}
	old := e.blk
	lv.setBlock(i, b, n)
	lv.mem.Free(old)
	return nil
}

// splitCopy makes a new full extent holding a device copy of extent i's
// block, and moves the slots in move (leaf ids of extent i) to it: their
// bytes are already in place. It returns the new extent's index; the
// caller renames the moved leaves in the index.
func (lv *btLeaves) splitCopy(i int, move []uint32) (int, error) {
	n := lv.g.extentLeaves()
	j, err := lv.newExtent(n)
	if err != nil {
		return 0, err
	}
	e, f := &lv.ext[i], &lv.ext[j]
	if e.Kind == access.WC || f.Kind == access.WC {
		lv.flush()
	}
	if err := kdev(lv.dev).Copy(f.blk, 0, e.blk, 0, uint64(e.cap)*uint64(lv.g.leafSize)); err != nil {
		lv.freeExtent(j)
		return 0, err
	}
	for _, id := range move {
		lv.drop(id) // renamed: the copy would sit under a free id
		s := id & lv.g.xMask
		e.bits[s/64] &^= 1 << (s % 64)
		f.bits[s/64] |= 1 << (s % 64)
	}
	e.used -= int32(len(move))
	f.used += int32(len(move))
	return j, nil
}

// btBytes views n bytes at p.
func btBytes(p unsafe.Pointer, n uintptr) []byte { return unsafe.Slice((*byte)(p), n) }

// load reads the bytes [lo, hi) of leaf id, widened to whole lines, into
// the same offsets of img. Writers call it: stores still in the batcher are
// seen.
func (lv *btLeaves) load(id uint32, img unsafe.Pointer, lo, hi uintptr) error {
	lo &^= recs.LineSize - 1
	hi = (hi + recs.LineSize - 1) &^ (recs.LineSize - 1)
	if hi <= lo {
		return nil
	}
	e := lv.extentOf(id)
	off := uintptr(id&lv.g.xMask)*lv.g.leafSize + lo
	dst := btBytes(unsafe.Add(img, lo), hi-lo)
	if e.Kind == access.WC && e.bat != nil && e.bat.Pending() > 0 {
		return e.bat.Get(e.boff+off, dst)
	}
	return e.Read(dst, uint64(off))
}

// store writes the bytes [lo, hi) of img to leaf id: whole lines into the
// batcher for mapped VRAM (img must then hold the whole lines, which load
// guarantees for every line holding a live entry), the exact bytes by DMA
// for private VRAM, nothing for direct leaves (img is the leaf itself).
func (lv *btLeaves) store(id uint32, img unsafe.Pointer, lo, hi uintptr) error {
	lv.drop(id)
	if hi <= lo {
		return nil
	}
	e := lv.extentOf(id)
	off := uintptr(id&lv.g.xMask) * lv.g.leafSize
	switch e.Kind {
	case access.Direct:
		return nil
	case access.WC:
		lo &^= recs.LineSize - 1
		hi = (hi + recs.LineSize - 1) &^ (recs.LineSize - 1)
		if e.bat != nil {
			for l := lo; l < hi; l += recs.LineSize {
				if err := e.bat.Put(e.boff+off+l, btBytes(unsafe.Add(img, l), recs.LineSize)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return e.Write(uint64(off+lo), btBytes(unsafe.Add(img, lo), hi-lo))
}
