package collections

import (
	"errors"
	"math/bits"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/vmem"
)

// Growth.
//
// The table is ordered by hash (home bucket = high bits of hash×buckets,
// no wraparound), so the old table read front to back gives entries in
// nearly the order of their new homes: an entry is at most maxDisp buckets
// past its old home. Rehashing therefore streams. The old slots come in
// chunks (DMA into pinned host memory on a GPU, the fastest way to read
// VRAM: docs/physics.md); each entry is
// placed by its new control bytes (host memory, touched nearly in order);
// its record is copied into a window of the new table held in pinned host
// memory; and once the old table has been read past bucket e, no entry yet
// to come can land below the new home of bucket e-maxDisp, so the window
// up to there is written out, sequentially (whole lines, NT stores or one
// DMA). Nothing is read back through VRAM loads, nothing is written at
// random, and the host memory used is a few megabytes whatever the size.

// mapChunkBytes is how much of the old table one DMA brings, and the
// window's starting size: large enough that a DMA's fixed start cost
// (docs/physics.md) is noise.
const mapChunkBytes = 8 << 20

var errMapOverflow = errors.New("collections: probe ran past the table's tail")

// grow rebuilds the table so that need entries fit: larger, or the same
// size without tombstones, or (when a probe ran off the end of a lightly
// loaded table) with a longer tail. On error the map is unchanged.
func (m *Map[K, V]) grow(need int, overflow bool) error {
	t := m.t
	nb, tail := t.nb, t.nbAll-t.nb
	switch {
	case overflow && need <= t.capacity/2:
		tail *= 2
	case t.tombs >= t.capacity/8 && need <= t.capacity*7/8:
		// Same size: dropping the tombstones makes the room.
	default:
		// Growing by 2×(max load) keeps the load after growth at one half
		// or more, so the control bytes stay within 2 bytes an entry.
		nb = max(nb*2*m.r.loadNum/m.r.loadDen, nb+1, m.bucketsFor(need))
		tail = mapTailFor(nb)
	}
	return m.rehash(nb, tail)
}

// rehash moves every entry into a new table of nb home buckets.
func (m *Map[K, V]) rehash(nb, tail uint64) error {
	m.flushBatch() // DMA and plain reads see only what memory holds
	old := m.t
	for {
		nt, err := m.newTable(nb, tail)
		if err != nil {
			return err
		}
		if err = m.moveAll(old, nt); err == nil {
			m.t = nt
			m.freeTable(old)
			m.tierGrow()
			return nil
		}
		m.freeTable(nt)
		if !errors.Is(err, errMapOverflow) {
			return err
		}
		tail *= 2
	}
}

// moveAll places every entry of old into the empty table nt.
func (m *Map[K, V]) moveAll(old, nt *mapTable) error {
	sink := &mapSink{dev: m.dev, t: nt, bucket: m.r.bucket, stride: m.r.stride, direct: nt.allDirect}
	defer sink.free()
	var stage block.Block
	var stageB uint64
	if !old.allDirect {
		largest := uint64(0)
		for _, sg := range old.segs {
			largest = max(largest, sg.n)
		}
		stageB = max(min(uint64(mapChunkBytes)/uint64(m.r.bucket), largest), 1)
		var err error
		if stage, err = kdev(m.dev).Alloc(block.Host, stageB*uint64(m.r.bucket), 64); err != nil {
			return err
		}
		defer kdev(m.dev).Free(stage)
	}
	p, low := m.r.p, m.r.lowMask
	for si := range old.segs {
		sg := &old.segs[si]
		first := uint64(si) << old.shift
		step := sg.n
		if sg.Kind != access.Direct {
			step = stageB
		}
		for c0 := uint64(0); c0 < sg.n; c0 += step {
			c1 := min(c0+step, sg.n)
			var base unsafe.Pointer
			if sg.Kind == access.Direct {
				base = unsafe.Add(sg.Base, uintptr(c0)*m.r.bucket)
			} else {
				buf := stage.Bytes()[:uintptr(c1-c0)*m.r.bucket]
				if err := kdev(m.dev).Read(buf, sg.slots, uint64(uintptr(c0)*m.r.bucket)); err != nil {
					return err
				}
				base = stage.Ptr()
			}
			for j := c0; j < c1; j++ {
				full := ^mapGroup(sg.fp, j, p) & low
				for ; full != 0; full &= full - 1 {
					slot := uintptr(bits.TrailingZeros64(full) >> 3)
					sp := unsafe.Add(base, uintptr(j-c0)*m.r.bucket+slot*m.r.stride)
					if err := m.place(nt, sink, m.recordHash(sp, first+j, old.nb), sp); err != nil {
						return err
					}
				}
			}
			if err := sink.done(mapBound(first+c1, old, nt)); err != nil {
				return err
			}
		}
	}
	return sink.finish()
}

// mapBound is the lowest new home any entry can have once the old table
// has been read up to bucket e: entries still to come lie at or past e, so
// their old homes are at least e-maxDisp.
func mapBound(e uint64, old, nt *mapTable) uint64 {
	if e <= old.maxDisp {
		return 0
	}
	x := e - old.maxDisp
	if x >= old.nb {
		return nt.nbAll
	}
	return mapHome(mapStartHash(x, old.nb), nt.nb)
}

// place puts the record at sp (hash h) in the first empty slot of its
// probe path in nt. Keys are known distinct: nothing is compared.
func (m *Map[K, V]) place(nt *mapTable, sink *mapSink, h uint64, sp unsafe.Pointer) error {
	home := mapHome(h, nt.nb)
	start := max(home, sink.lo) // only a hasher that is not deterministic gets clamped
	for b := start; b < nt.nbAll; b++ {
		e := mapMatchEmpty(m.group(nt, b)) & m.r.lowMask
		if e == 0 {
			continue
		}
		i := bits.TrailingZeros64(e) >> 3
		dst, err := sink.slot(b, i)
		if err != nil {
			return err
		}
		copy(mapBytesAt(dst, int(m.r.size)), mapBytesAt(sp, int(m.r.size)))
		nt.setFP(b, i, byte(h&0x7f), m.r.p)
		nt.growthLeft--
		if b-home > nt.maxDisp {
			nt.maxDisp = b - home
		}
		return nil
	}
	return errMapOverflow
}

// mapSink receives the records of a table being rebuilt. Plain host memory
// is written in place; device memory goes through a window of buckets
// [lo, lo+capB) in pinned host memory, written out as finished runs.
type mapSink struct {
	dev    *vmem.Device
	t      *mapTable
	bucket uintptr
	stride uintptr
	direct bool

	blk    block.Block
	capB   uint64
	lo, hi uint64 // the window starts at bucket lo; buckets below hi may hold records
	final  uint64 // buckets below final will receive nothing more
}

func (s *mapSink) slot(b uint64, i int) (unsafe.Pointer, error) {
	if s.direct {
		sg, j := s.t.seg(b)
		return unsafe.Add(sg.Base, uintptr(j)*s.bucket+uintptr(i)*s.stride), nil
	}
	if s.capB == 0 {
		if err := s.enlarge(max(uint64(mapChunkBytes)/uint64(s.bucket), 1)); err != nil {
			return nil, err
		}
	}
	if b >= s.lo+s.capB {
		if err := s.flushTo(s.final); err != nil {
			return nil, err
		}
		if b >= s.lo+s.capB {
			if err := s.enlarge(2 * (b - s.lo + 1)); err != nil {
				return nil, err
			}
		}
	}
	s.hi = max(s.hi, b+1)
	return unsafe.Add(s.blk.Ptr(), uintptr(b-s.lo)*s.bucket+uintptr(i)*s.stride), nil
}

// done records that buckets below final are finished, and writes them out
// once they fill half the window.
func (s *mapSink) done(final uint64) error {
	s.final = max(s.final, final)
	if !s.direct && s.final >= s.lo+s.capB/2 {
		return s.flushTo(s.final)
	}
	return nil
}

// flushTo writes the window's buckets below x and slides the window to x.
func (s *mapSink) flushTo(x uint64) error {
	if s.direct || x <= s.lo {
		return nil
	}
	w := min(x, s.hi)
	win := s.blk.Bytes()
	for b := s.lo; b < w; {
		sg, j := s.t.seg(b)
		n := min(w-b, sg.n-j)
		src := win[uintptr(b-s.lo)*s.bucket : uintptr(b-s.lo+n)*s.bucket]
		if err := kdev(s.dev).Write(sg.slots, uint64(uintptr(j)*s.bucket), src); err != nil {
			return err
		}
		b += n
	}
	if x < s.hi {
		keep := uintptr(s.hi-x) * s.bucket
		copy(win, win[uintptr(x-s.lo)*s.bucket:uintptr(s.hi-s.lo)*s.bucket])
		clear(win[keep : uintptr(s.hi-s.lo)*s.bucket])
	} else {
		clear(win[:uintptr(max(s.hi, s.lo)-s.lo)*s.bucket])
		s.hi = x
	}
	s.lo = x
	return nil
}

// enlarge makes the window hold at least n buckets.
func (s *mapSink) enlarge(n uint64) error {
	n = min(n, s.t.nbAll)
	if n <= s.capB {
		return nil
	}
	nb, err := kdev(s.dev).Alloc(block.Host, n*uint64(s.bucket), 64)
	if err != nil {
		return err
	}
	if s.capB > 0 {
		copy(nb.Bytes(), s.blk.Bytes()[:uintptr(s.hi-s.lo)*s.bucket])
		kdev(s.dev).Free(s.blk)
	}
	s.blk, s.capB = nb, n
	return nil
}

func (s *mapSink) finish() error { return s.flushTo(s.t.nbAll) }

func (s *mapSink) free() {
	if s.capB > 0 {
		kdev(s.dev).Free(s.blk)
		s.capB = 0
	}
}
