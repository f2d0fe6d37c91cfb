package collections

import (
	"errors"
	"math/bits"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/lines"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/vmem"
)

// mapSeg is a run of buckets in one block of slots, with their control
// bytes in one host block.
type mapSeg struct {
	slots       block.Block
	fpBlk       block.Block
	access.View                // how the slots are reached
	fp          unsafe.Pointer // control bytes: p per bucket, 8 bytes of padding
	n           uint64         // buckets
}

// mapTable is one generation of the table: home buckets [0, nb) and a
// tail of overflow buckets [nb, nbAll) that probes run into instead of
// wrapping around (so the table stays ordered by hash).
type mapTable struct {
	nb, nbAll  uint64
	shift      uint   // bucket >> shift = segment
	mask       uint64 // bucket & mask = bucket in segment
	segs       []mapSeg
	capacity   int    // entries allowed before growth (home buckets only)
	growthLeft int    // empty slots that may still be filled: capacity - full - deleted
	tombs      int    // deleted slots
	maxDisp    uint64 // no entry lies more than this many buckets past its home
	allDirect  bool   // every segment is plain host memory
	fast       bool   // Get's inline path serves every segment

	bat     *lines.Batcher // pending stores to the mapped segments
	batBase unsafe.Pointer
}

// seg returns bucket b's segment and its index inside it.
func (t *mapTable) seg(b uint64) (*mapSeg, uint64) {
	return &t.segs[b>>t.shift], b & t.mask
}

// mapMaxSeg bounds a segment of slots, as for vmem.Slice: large enough that
// bucket arithmetic is a shift, small enough for the driver's allocation
// limit and to spill into the private tier in useful pieces.
const mapMaxSeg = 1 << 30

// mapBatchLines is the store batch: about 0.5 MiB of Go heap, fixed.
const mapBatchLines = 4096

// capacityOf returns how many entries nb home buckets take.
func (m *Map[K, V]) capacityOf(nb uint64) int {
	return int(nb * uint64(m.r.p) * m.r.loadNum / m.r.loadDen)
}

// bucketsFor returns the home buckets that hold n entries.
func (m *Map[K, V]) bucketsFor(n int) uint64 {
	per := uint64(m.r.p) * m.r.loadNum
	return max((uint64(n)*m.r.loadDen+per-1)/per, 1)
}

// bucketsForFast returns the home buckets that hold n entries at the
// table's fast load: low enough that a key nearly always lies in its home
// bucket (a second bucket costs a lookup a second round trip), and with
// room for the deferred Puts of a map filled to n. The control bytes stay
// under 2 bytes an entry.
func (m *Map[K, V]) bucketsForFast(n int) uint64 {
	num, den := uint64(1), uint64(2)
	if m.r.p >= 4 {
		num, den = 9, 16
	}
	per := uint64(m.r.p) * num
	return max((uint64(n)*den+per-1)/per, m.bucketsFor(n), 1)
}

// mapTailFor is the overflow tail of a table of nb home buckets; a probe
// that runs past it makes the table rehash with a longer one.
func mapTailFor(nb uint64) uint64 { return 16 + nb/256 }

// newTable allocates an empty table. On error nothing is allocated.
func (m *Map[K, V]) newTable(nb, tail uint64) (*mapTable, error) {
	t := &mapTable{nb: nb, nbAll: nb + tail, capacity: m.capacityOf(nb), allDirect: true}
	t.growthLeft = t.capacity
	segB := m.cfg.segBuckets
	if segB == 0 {
		segB = 1 << (bits.Len64(uint64(m.maxSegBytes()/m.r.bucket)) - 1)
	}
	t.shift = uint(bits.TrailingZeros64(segB))
	t.mask = segB - 1
	for b := uint64(0); b < t.nbAll; b += segB {
		n := min(segB, t.nbAll-b)
		sg, err := m.newSeg(n)
		if err != nil {
			m.freeTable(t)
			return nil, err
		}
		t.segs = append(t.segs, sg)
		if sg.Kind != access.Direct {
			t.allDirect = false
		}
	}
	t.fast = true
	for i := range t.segs {
		if k := t.segs[i].Kind; k == access.DMA || (k == access.WC && m.r.lines > 2) {
			t.fast = false
		}
	}
	m.newBatcher(t)
	return t, nil
}

func (m *Map[K, V]) maxSegBytes() uintptr {
	lim := uint64(mapMaxSeg)
	info := m.dev.Info()
	for _, tier := range []vmem.Tier{vmem.Mapped, vmem.Private} {
		if ti := info.Tiers[tier]; ti.Available && ti.MaxBlock > 0 {
			lim = min(lim, ti.MaxBlock)
		}
	}
	if ti := info.Tiers[vmem.Host]; ti.MaxBlock > 0 {
		// The control bytes of a segment must fit one host block too.
		lim = min(lim, (ti.MaxBlock-64)/uint64(m.r.p)*uint64(m.r.bucket))
	}
	return uintptr(max(lim, uint64(m.r.bucket)))
}

// newSeg allocates n buckets of slots (mapped VRAM, else private) and
// their control bytes (host tier), all empty.
func (m *Map[K, V]) newSeg(n uint64) (mapSeg, error) {
	size := n * uint64(m.r.bucket)
	slots, err := kdev(m.dev).Alloc(block.Mapped, size, 64)
	if err != nil && errors.Is(err, vmem.ErrOutOfMemory) {
		slots, err = kdev(m.dev).Alloc(block.Private, size, 64)
	}
	if err != nil {
		return mapSeg{}, err
	}
	fpBlk, err := kdev(m.dev).Alloc(block.Host, n*uint64(m.r.p)+8, 64)
	if err != nil {
		kdev(m.dev).Free(slots)
		return mapSeg{}, err
	}
	sg := mapSeg{slots: slots, fpBlk: fpBlk, View: kdev(m.dev).View(slots), fp: fpBlk.Ptr(), n: n}
	if m.cfg.plain {
		sg.View = sg.Plain() // the naive baseline: plain loads of mapped VRAM
	}
	mapFill(fpBlk.Bytes(), mapEmpty)
	m.held.Add(slots, fpBlk)
	return sg, nil
}

// mapFill sets every byte of b to v by doubling copies (memmove speed).
func mapFill(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// newBatcher gives t one store batcher over all its mapped segments when
// they lie within one batcher region (practically always); otherwise
// stores to them are written directly.
func (m *Map[K, V]) newBatcher(t *mapTable) {
	var lo unsafe.Pointer // the lowest mapped segment's base
	var hi uintptr        // the end of the highest
	for i := range t.segs {
		sg := &t.segs[i]
		if sg.Kind != access.WC {
			continue
		}
		if lo == nil || uintptr(sg.Base) < uintptr(lo) {
			lo = sg.Base
		}
		hi = max(hi, uintptr(sg.Base)+uintptr(sg.n)*m.r.bucket)
	}
	if lo == nil || uint64(hi-uintptr(lo)) > lines.MaxRegion {
		return
	}
	batLines := mapBatchLines
	if m.cfg.batchLines > 0 {
		batLines = m.cfg.batchLines
	}
	// A small table needs no larger batch than it has lines.
	var tableLines uint64
	for i := range t.segs {
		if t.segs[i].Kind == access.WC {
			tableLines += t.segs[i].n * uint64(m.r.lines)
		}
	}
	batLines = min(batLines, max(64, 1<<bits.Len64(tableLines)))
	bat, err := lines.NewBatcher(lo, hi-uintptr(lo), batLines)
	if err != nil {
		return
	}
	t.bat, t.batBase = bat, lo
}

// freeTable returns t's memory.
func (m *Map[K, V]) freeTable(t *mapTable) {
	m.gpuDrop(t)
	for _, sg := range t.segs {
		kdev(m.dev).Free(sg.slots)
		kdev(m.dev).Free(sg.fpBlk)
		m.held.Forget(sg.slots, sg.fpBlk)
	}
	t.segs = nil
	t.bat = nil
}

// clearFP marks every slot of t empty.
func (m *Map[K, V]) clearFP(t *mapTable) {
	for i := range t.segs {
		mapFill(t.segs[i].fpBlk.Bytes(), mapEmpty)
	}
	t.growthLeft, t.tombs, t.maxDisp = t.capacity, 0, 0
}

// setFP sets the control byte of slot i of bucket b.
func (t *mapTable) setFP(b uint64, i int, v byte, p int) {
	sg, j := t.seg(b)
	*(*byte)(unsafe.Add(sg.fp, uintptr(j)*uintptr(p)+uintptr(i))) = v
}

// group returns the control bytes of bucket b, masked to its p slots.
func (m *Map[K, V]) group(t *mapTable, b uint64) uint64 {
	sg, j := t.seg(b)
	return mapGroup(sg.fp, j, m.r.p)
}
