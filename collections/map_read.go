package collections

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/recs"
)

// Get returns the value stored for k and whether there is one. It panics if
// the map is closed or a write is in progress, and once the device is lost
// (an error matching vmem.ErrDeviceLost: see GetBatch for the form that returns
// it), rather than report absent a key that may be there.
func (m *Map[K, V]) Get(k K) (V, bool) {
	if m.t == nil || m.writing {
		if m.sh != nil {
			return m.sh.Get(k) // a map on a pool has no table of its own
		}
		m.badRead()
	}
	m.readCheck("Get")
	var h uint64
	if m.hk == mapHash8 {
		h = mapMix(*(*uint64)(unsafe.Pointer(&k)), m.seed) // inlined: the common case
	} else {
		h = m.hash(&k)
	}
	var v V
	var ok bool
	if m.tier != nil {
		// The tier is coherent with every write, those still pending
		// included: a hit needs no flush.
		v, ok = m.getTiered(&k, h)
	} else {
		v, ok = m.lookup(&k, h)
	}
	if !ok {
		// A miss may be a loss met on the way (a flush, a DMA of a
		// private segment).
		m.readCheck("Get")
	}
	return v, ok
}

// get looks k (hash h) up in the table.
func (m *Map[K, V]) get(kp *K, h uint64) (V, bool) {
	if m.pending.Load() {
		m.flushForRead()
	}
	t := m.t
	k := *kp
	if !t.fast {
		return m.getSlow(t, &k, h)
	}
	pat := (h & 0x7f) * mapLSB
	var line [2]mapLine // a bucket of mapped VRAM: one line, or a two-line record
	for b := mapHome(h, t.nb); b < t.nbAll; b++ {
		sg := &t.segs[b>>t.shift]
		j := b & t.mask
		loaded := false
		if mapEagerLoad && sg.Kind == access.WC {
			m.loadBucketWC(&line, sg, j)
			loaded = true
		}
		g := mapGroup(sg.fp, j, m.r.p)
		if mt := mapMatch(g, pat) & m.r.lowMask; mt != 0 {
			// The line's address does not depend on g: under the branch the
			// CPU predicts taken (on hits), the VRAM load overlaps the
			// control bytes' cache miss.
			var rp unsafe.Pointer
			switch {
			case sg.Kind == access.WC:
				if !loaded {
					if mapCtrlFirst {
						// The address depends on the control bytes: no load
						// issued under a mispredicted branch.
						m.loadBucketWC(&line, sg, j+mt&mapZeroDep)
					} else {
						m.loadBucketWC(&line, sg, j)
					}
				}
				rp = unsafe.Pointer(&line)
			case m.r.lines == 1:
				// Host memory: copy the whole line first. The copy's address
				// does not depend on which slot matched, so its cache miss
				// overlaps the control bytes' one, as the VRAM load does;
				// reading the matched slot in place would wait for both.
				line[0].b = *(*[recs.LineSize]byte)(unsafe.Add(sg.Base, uintptr(j)*recs.LineSize))
				rp = unsafe.Pointer(&line)
			default:
				rp = unsafe.Add(sg.Base, uintptr(j)*m.r.bucket)
				if m.r.p == 1 {
					// One record a bucket (strings, large records): its
					// address does not depend on which slot matched, so
					// compare it at once; its cache miss then overlaps the
					// control bytes' one under the predicted branch.
					if !m.strK {
						if *(*K)(unsafe.Add(rp, m.r.keyOff)) == k {
							return m.valueAt(rp), true
						}
					} else if m.keyMatches(rp, &k, h) {
						return m.valueAt(rp), true
					}
					mt = 0
				}
			}
			for ; mt != 0; mt &= mt - 1 {
				sp := unsafe.Add(rp, uintptr(bits.TrailingZeros64(mt)>>3)*m.r.stride)
				if !m.strK {
					// Fixed-size keys compared in place, without a call:
					// fewer instructions per Get let the CPU keep more Gets
					// in flight.
					if *(*K)(unsafe.Add(sp, m.r.keyOff)) == k {
						if !m.strV {
							return *(*V)(unsafe.Add(sp, m.r.valOff)), true
						}
						return m.valueAt(sp), true
					}
				} else if m.keyMatches(sp, &k, h) {
					return m.valueAt(sp), true
				}
			}
		}
		if mapMatchEmpty(g)&m.r.lowMask != 0 {
			break
		}
	}
	var zero V
	return zero, false
}

// loadBucketWC reads bucket j of mapped segment sg (one line, or the two
// lines of a string-key record, whose loads overlap) into buf.
func (m *Map[K, V]) loadBucketWC(buf *[2]mapLine, sg *mapSeg, j uint64) {
	if m.r.lines == 1 {
		lineio.Load(&buf[0].b, unsafe.Add(sg.Base, uintptr(j)*recs.LineSize))
		return
	}
	lineio.LoadLines(unsafe.Slice(&buf[0].b[0], 2*recs.LineSize), unsafe.Add(sg.Base, uintptr(j)*2*recs.LineSize))
}

// getSlow is Get for tables with private segments or records of more than
// two lines in mapped VRAM: each bucket is read whole into a buffer.
//
//go:noinline
func (m *Map[K, V]) getSlow(t *mapTable, k *K, h uint64) (V, bool) {
	bp := mapGetBuf(m.r.bucket)
	defer mapBufPool.Put(bp)
	buf := *bp
	pat := (h & 0x7f) * mapLSB
	for b := mapHome(h, t.nb); b < t.nbAll; b++ {
		sg, j := t.seg(b)
		g := mapGroup(sg.fp, j, m.r.p)
		if mt := mapMatch(g, pat) & m.r.lowMask; mt != 0 {
			rp, err := m.readBucket(sg, j, buf)
			if err != nil {
				m.setErr(err)
				break
			}
			for ; mt != 0; mt &= mt - 1 {
				sp := unsafe.Add(rp, uintptr(bits.TrailingZeros64(mt)>>3)*m.r.stride)
				if m.keyMatches(sp, k, h) {
					return m.valueAt(sp), true
				}
			}
		}
		if mapMatchEmpty(g)&m.r.lowMask != 0 {
			break
		}
	}
	var zero V
	return zero, false
}

var mapBufPool = sync.Pool{New: func() any { b := make([]byte, 256); return &b }}

func mapGetBuf(n uintptr) *[]byte {
	bp := mapBufPool.Get().(*[]byte)
	if uintptr(len(*bp)) < n {
		*bp = make([]byte, n)
	}
	return bp
}

// readBucket returns the address of bucket j of sg as the reader sees it
// (no pending stores: readers flush first): the memory itself for host
// memory, else a copy in buf.
func (m *Map[K, V]) readBucket(sg *mapSeg, j uint64, buf []byte) (unsafe.Pointer, error) {
	off := uintptr(j) * m.r.bucket
	switch sg.Kind {
	case access.Direct:
		return unsafe.Add(sg.Base, off), nil
	case access.WC:
		lineio.LoadLines(buf[:m.r.bucket], unsafe.Add(sg.Base, off))
		return unsafe.Pointer(&buf[0]), nil
	}
	err := sg.Read(buf[:m.r.bucket], uint64(off))
	return unsafe.Pointer(&buf[0]), err
}

// readBucketW is readBucket for a writer: pending stores included.
func (m *Map[K, V]) readBucketW(t *mapTable, sg *mapSeg, j uint64) (unsafe.Pointer, error) {
	switch {
	case sg.Kind == access.WC && t.bat != nil:
		off := uintptr(sg.Base) - uintptr(t.batBase) + uintptr(j)*m.r.bucket
		if err := t.bat.Get(off, m.scratch); err != nil {
			return nil, err
		}
		return unsafe.Pointer(&m.scratch[0]), nil
	case sg.Kind == access.Direct && m.r.lines == 1:
		// A copy of the whole line, as in Get: its miss does not wait for
		// the control bytes'.
		*(*[recs.LineSize]byte)(m.scratch) = *(*[recs.LineSize]byte)(unsafe.Add(sg.Base, uintptr(j)*recs.LineSize))
		return unsafe.Pointer(&m.scratch[0]), nil
	}
	return m.readBucket(sg, j, m.scratch)
}

//go:noinline
func (m *Map[K, V]) badRead() {
	if m.dev == nil {
		zeroUse("Map")
	}
	if m.t == nil {
		panic("collections: Map used after Close")
	}
	panic("collections: concurrent Map read and Map write")
}

// flushForRead stores what is pending (the batcher's stores, recorded
// Puts), once, for the first reader that finds them. An error is also kept
// for Err.
//
//go:noinline
func (m *Map[K, V]) flushForRead() error {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	if m.pending.Load() {
		if err := m.settle(); err != nil {
			m.setErr(err)
			return err
		}
	}
	return nil
}
