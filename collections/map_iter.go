package collections

import (
	"iter"
	"math/bits"
	"unsafe"

	"github.com/govram/govram/internal/block"
)

// Iteration.
//
// The table is read in chunks of home buckets [a, e) plus the maxDisp
// buckets after them (where entries of those homes may lie), by DMA into
// pinned host memory, and an entry is produced in the chunk of its home
// bucket. So after each chunk exactly the entries with hashes below a
// watermark have been produced, which survives growth: if the loop body
// makes the table grow, iteration resumes on the new table at the same
// hash. Writes in the loop body make the chunk's snapshot stale; from then
// on each remaining slot of the chunk is read again from the table.

// mapIterBytes is the snapshot read per chunk: 1 MiB by DMA costs a small
// multiple of the DMA's fixed start cost (docs/physics.md), and bounds
// what a chunk keeps on the Go heap to handle growth under it.
var mapIterBytes = 1 << 20 // a variable for tests: small chunks

// All returns every entry, in the order of their hashes (stable for a given
// map, not otherwise specified). The loop body may Put and Delete, as with
// a Go map: an entry deleted before it is reached is not produced, one
// added during the iteration may or may not be, every other entry is
// produced exactly once with its value at the time. An error (device lost,
// no host memory for the snapshot) ends the iteration early; Err reports
// it; a lost device panics instead (see Get). All panics if the map is
// closed.
func (m *Map[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		if m.t == nil {
			if m.sh != nil {
				// A map on a pool has no table of its own; forwarding here
				// keeps All inlined.
				m.sh.All()(yield)
				return
			}
			m.badRead()
		}
		m.readCheck("All")
		it := mapIter[K, V]{m: m}
		defer it.free()
		it.run(yield)
		// An iteration ended by a lost device did not run out of entries.
		m.readCheck("All")
	}
}

type mapIter[K comparable, V any] struct {
	m     *Map[K, V]
	blk   block.Block // records, then control bytes, of capB buckets
	capB  uint64
	done  []K            // keys of the current chunk the snapshot cannot tell (see remember)
	skip  map[K]struct{} // keys produced before the table changed under a chunk
	until uint64         // skip applies to hashes below until
	final bool           // until is 2^64
}

func (it *mapIter[K, V]) free() {
	if it.capB > 0 {
		kdev(it.m.dev).Free(it.blk)
		it.capB = 0
	}
}

func (it *mapIter[K, V]) run(yield func(K, V) bool) {
	m := it.m
	m.iters.Add(1)
	defer m.iters.Add(-1)
	var H uint64 // every entry with a hash below H has been produced
	for {
		if m.pending.Load() {
			// The body's writes may wait in the store batcher, where the
			// snapshot's DMA would not see them.
			if m.flushForRead() != nil {
				return
			}
		}
		t := m.t
		if t == nil {
			return
		}
		a := mapHome(H, t.nb)
		if a >= t.nb {
			return
		}
		if err := it.reserve(t); err != nil {
			m.setErr(err)
			return
		}
		e := min(t.nb, a+max(it.capB-t.maxDisp-1, 1))
		end := min(e+t.maxDisp, t.nbAll)
		if err := it.snapshot(t, a, end); err != nil {
			m.setErr(err)
			return
		}
		last := e == t.nb
		hEnd := uint64(0)
		if !last {
			hEnd = mapStartHash(e, t.nb)
		}
		res, stop := it.chunk(t, a, e, end, H, yield)
		switch res {
		case mapIterStop:
			return
		case mapIterMoved:
			// The table was rebuilt under the chunk: redo the chunk's hash
			// range on the new table, without what was already produced.
			it.remember(t, a, e, H, stop)
			if last {
				it.final = true
			} else {
				it.until = max(it.until, hEnd)
			}
			continue
		}
		if last {
			return
		}
		H = hEnd
		if it.skip != nil && !it.final && H >= it.until {
			it.skip = nil
		}
	}
}

type mapIterResult uint8

const (
	mapIterNext  mapIterResult = iota // chunk done
	mapIterStop                       // the loop body stopped
	mapIterMoved                      // the table changed under the chunk
)

// remember adds the keys the chunk produced before stop to the skip set.
// Fixed-size keys produced from the snapshot are read from it again (some
// may have been deleted since, which does no harm: they are not in the new
// table); the others were kept in done as produced: string keys (the
// snapshot's arena handles may have been freed) and keys read again from
// the table after a write.
func (it *mapIter[K, V]) remember(t *mapTable, a, e, H uint64, stop mapLoc) {
	m := it.m
	if it.skip == nil {
		it.skip = map[K]struct{}{}
	}
	for _, k := range it.done {
		it.skip[k] = struct{}{}
	}
	if m.strK {
		return
	}
	recs := it.blk.Ptr()
	fps := unsafe.Add(recs, uintptr(it.capB)*m.r.bucket)
	for q := a; q <= stop.b; q++ {
		full := ^mapGroup(fps, q-a, m.r.p) & m.r.lowMask
		for ; full != 0; full &= full - 1 {
			i := bits.TrailingZeros64(full) >> 3
			if q == stop.b && i >= stop.i {
				break
			}
			sp := unsafe.Add(recs, uintptr(q-a)*m.r.bucket+uintptr(i)*m.r.stride)
			h := m.recordHash(sp, q, t.nb)
			if home := mapHome(h, t.nb); home >= a && home < e && h >= H {
				it.skip[m.keyAt(sp)] = struct{}{}
			}
		}
	}
}

// chunk produces the entries with homes in [a, e) and hashes at least H
// from the snapshot of buckets [a, end). When the table changes under it,
// it returns mapIterMoved and the slot it stopped at.
func (it *mapIter[K, V]) chunk(t *mapTable, a, e, end, H uint64, yield func(K, V) bool) (mapIterResult, mapLoc) {
	m := it.m
	it.done = it.done[:0]
	ver := m.version
	recs := it.blk.Ptr()
	bucket, stride, p, low := m.r.bucket, m.r.stride, m.r.p, m.r.lowMask
	keyOff, valOff := m.r.keyOff, m.r.valOff
	fixed := !m.strK && !m.strV
	fps := unsafe.Add(recs, uintptr(it.capB)*bucket)
	for q := a; q < end; q++ {
		full := ^mapGroup(fps, q-a, p) & low
		// An entry of a bucket past a+maxDisp and before e has its home in
		// (a, e), hence a hash above H: it needs no hashing, unless a skip
		// set applies.
		sure := it.skip == nil && q > a+t.maxDisp && q < e
		bp := unsafe.Add(recs, uintptr(q-a)*bucket)
		for ; full != 0; full &= full - 1 {
			i := bits.TrailingZeros64(full) >> 3
			sp := unsafe.Add(bp, uintptr(i)*stride)
			if m.t != t {
				return mapIterMoved, mapLoc{q, i}
			}
			if m.version != ver {
				// The loop body wrote: the snapshot may be stale (its
				// strings even freed). Read the slot again.
				if byte(m.group(t, q)>>(8*i))&0x80 != 0 {
					continue
				}
				sg, j := t.seg(q)
				rp, err := m.readBucketW(t, sg, j)
				if err != nil {
					m.setErr(err)
					return mapIterStop, mapLoc{}
				}
				sp = unsafe.Add(rp, uintptr(i)*stride)
			} else if sure && fixed {
				if !yield(*(*K)(unsafe.Add(sp, keyOff)), *(*V)(unsafe.Add(sp, valOff))) {
					return mapIterStop, mapLoc{}
				}
				continue
			}
			if !sure || m.version != ver {
				h := m.recordHash(sp, q, t.nb)
				if home := mapHome(h, t.nb); home < a || home >= e || h < H {
					continue
				}
				if it.skip != nil && (it.final || h < it.until) {
					k := m.keyAt(sp)
					if _, ok := it.skip[k]; ok {
						continue
					}
				}
			}
			k, v := m.keyAt(sp), m.valueAt(sp)
			if m.strK || m.version != ver {
				it.done = append(it.done, k)
			}
			if !yield(k, v) {
				return mapIterStop, mapLoc{}
			}
		}
	}
	return mapIterNext, mapLoc{}
}

// reserve makes the snapshot buffer hold a chunk of t.
func (it *mapIter[K, V]) reserve(t *mapTable) error {
	m := it.m
	want := max(min(uint64(mapIterBytes)/uint64(m.r.bucket), t.nbAll), t.maxDisp+2)
	if it.capB >= want {
		return nil
	}
	it.free()
	blk, err := kdev(m.dev).Alloc(block.Host, want*uint64(m.r.bucket)+want*uint64(m.r.p)+8, 64)
	if err != nil {
		return err
	}
	it.blk, it.capB = blk, want
	return nil
}

// snapshot copies the records and control bytes of buckets [a, end).
func (it *mapIter[K, V]) snapshot(t *mapTable, a, end uint64) error {
	m := it.m
	all := it.blk.Bytes()
	fpOff := uintptr(it.capB) * m.r.bucket
	for b := a; b < end; {
		sg, j := t.seg(b)
		n := min(end-b, sg.n-j)
		p := uintptr(m.r.p)
		copy(all[fpOff+uintptr(b-a)*p:], mapBytesAt(unsafe.Add(sg.fp, uintptr(j)*p), int(uintptr(n)*p)))
		dst := all[uintptr(b-a)*m.r.bucket : uintptr(b-a+n)*m.r.bucket]
		if err := sg.Read(dst, uint64(uintptr(j)*m.r.bucket)); err != nil {
			return err
		}
		b += n
	}
	return nil
}
