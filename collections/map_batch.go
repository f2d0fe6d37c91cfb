package collections

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/collections/internal/strarena"
	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/internal/recs"
	"github.com/govram/govram/vmem"
)

// Batches.
//
// One Get waits for its line: a streaming load is a PCIe round trip
// (docs/physics.md), and the next key's load cannot start before the first
// key's value is needed. A batch knows all its keys up front, so each goroutine
// probes the control bytes of 16 keys, then loads their 16 home lines with
// interleaved streaming loads (lineio.Gather: four round trips overlap),
// then compares. Large batches are split over GOMAXPROCS goroutines, since
// VRAM reads scale with threads.

const (
	mapGroupKeys = 16   // keys whose lines one Gather loads
	mapParMin    = 2048 // keys per goroutine worth its start-up
	mapPutBatch  = 8192 // keys putMany resolves and applies at a time
)

// mapLines holds the home lines of one group of keys: b[x] the copy of key
// x's line from host memory, g the lines Gather loaded from VRAM.
type mapLines struct {
	_ [0]uint64
	b [mapGroupKeys][recs.LineSize]byte
	g [mapGroupKeys * mapGroupLines * recs.LineSize]byte
}

// mapGroupLines: buckets of up to this many lines (a string key's
// two-line record) are loaded whole by a group's Gather; larger ones take
// the full probe.
const mapGroupLines = 2

// getManyCPU is GetMany by CPU line loads.
func (m *Map[K, V]) getManyCPU(t *mapTable, keys []K, vals []V, found []bool) int {
	total := 0
	m.spread(len(keys), func(lo, hi int) int {
		var f []bool
		if found != nil {
			f = found[lo:hi]
		}
		return m.getBlock(t, keys[lo:hi], vals[lo:hi], f)
	}, &total)
	return total
}

// spread runs f over [0, n) split into contiguous parts of at least
// mapParMin, one goroutine each when n is large (par.Ranges), and adds up
// the results in *sum.
func (m *Map[K, V]) spread(n int, f func(lo, hi int) int, sum *int) {
	var total atomic.Int64
	par.Ranges(n, mapParMin, func(lo, hi int) { total.Add(int64(f(lo, hi))) })
	*sum += int(total.Load())
}

// Per-key states of a group.
const (
	mapKeyMiss   = iota // absent: no match, and the home bucket stops probes
	mapKeySlow          // needs the full probe
	mapKeyLine          // its home line is in the Gather buffer
	mapKeyDirect        // its home bucket is plain host memory
)

// mapProbe is what the first pass learns about one key of a group.
type mapProbe struct {
	h     uint64
	mt    uint64 // control-byte matches in the home bucket
	rp    unsafe.Pointer
	b     uint64
	state uint8
	stop  bool // the home bucket has an empty slot
}

// probeGroup hashes the keys of a group, reads their home buckets'
// control bytes, and loads the home lines of those that match. The lines
// land in lines; the states in ps.
func (m *Map[K, V]) probeGroup(t *mapTable, keys []K, ps *[mapGroupKeys]mapProbe, lines *mapLines) {
	var srcs [mapGroupKeys * mapGroupLines]unsafe.Pointer
	var at [mapGroupKeys]int8
	ng := 0
	for x := range keys {
		p := &ps[x]
		h := m.hash(&keys[x])
		b := mapHome(h, t.nb)
		sg := &t.segs[b>>t.shift]
		j := b & t.mask
		g := mapGroup(sg.fp, j, m.r.p)
		*p = mapProbe{h: h, b: b, mt: mapMatch(g, (h&0x7f)*mapLSB) & m.r.lowMask, stop: mapMatchEmpty(g)&m.r.lowMask != 0}
		if p.mt == 0 && !p.stop {
			sg, j = m.walkGroup(t, p)
		}
		switch {
		case p.mt == 0 && p.stop:
			p.state = mapKeyMiss
		case p.mt == 0:
			p.state = mapKeySlow
		case sg.Kind == access.Direct && m.r.lines == 1:
			// Copied now, so that the misses of the group overlap.
			p.state = mapKeyDirect
			lines.b[x] = *(*[recs.LineSize]byte)(unsafe.Add(sg.Base, uintptr(j)*recs.LineSize))
			p.rp = unsafe.Pointer(&lines.b[x])
		case sg.Kind == access.Direct:
			p.state, p.rp = mapKeyDirect, unsafe.Add(sg.Base, uintptr(j)*m.r.bucket)
		case sg.Kind == access.WC && m.r.lines <= mapGroupLines:
			// The bucket's lines load side by side with the group's
			// others: a two-line record costs no second round trip.
			p.state = mapKeyLine
			at[x] = int8(ng)
			for l := range m.r.lines {
				srcs[ng] = unsafe.Add(sg.Base, uintptr(j)*m.r.bucket+uintptr(l)*recs.LineSize)
				ng++
			}
		default:
			p.state = mapKeySlow
		}
	}
	if ng > 0 {
		lineio.Gather(lines.g[:ng*recs.LineSize], srcs[:ng])
		for x := range keys {
			if ps[x].state == mapKeyLine {
				ps[x].rp = unsafe.Pointer(&lines.g[int(at[x])*recs.LineSize])
			}
		}
	}
}

// mapGroupWalk bounds the buckets past its home that a group's probe
// follows on the host's control bytes.
const mapGroupWalk = 32

// walkGroup follows a key displaced from its home bucket (no fingerprint
// match there, and no empty slot to end the probe): the host's control
// bytes show the first later bucket holding its fingerprint, which p then
// names, so that its lines load with the group's in one round trip instead
// of the full probe's walk. A bucket with an empty slot before any match
// ends the probe (p.stop: the key is absent). Without either within
// mapGroupWalk buckets p is left as it was (the full probe). It returns
// the segment and index of p's bucket.
func (m *Map[K, V]) walkGroup(t *mapTable, p *mapProbe) (*mapSeg, uint64) {
	home := p.b
	sg, j := t.seg(home)
	pat := (p.h & 0x7f) * mapLSB
	for b := home + 1; b < t.nbAll && b-home <= mapGroupWalk; b++ {
		s2, j2 := t.seg(b)
		g := mapGroup(s2.fp, j2, m.r.p)
		stop := mapMatchEmpty(g)&m.r.lowMask != 0
		if mt := mapMatch(g, pat) & m.r.lowMask; mt != 0 {
			p.b, p.mt, p.stop = b, mt, stop
			return s2, j2
		}
		if stop {
			p.stop = true
			break
		}
	}
	return sg, j
}

// matchHome looks for key k among the home-bucket matches of p. It
// returns the slot, or -1.
func (m *Map[K, V]) matchHome(p *mapProbe, k *K) int {
	for mt := p.mt; mt != 0; mt &= mt - 1 {
		i := bits.TrailingZeros64(mt) >> 3
		if m.keyMatches(unsafe.Add(p.rp, uintptr(i)*m.r.stride), k, p.h) {
			return i
		}
	}
	return -1
}

// getBlock is getMany for one goroutine.
func (m *Map[K, V]) getBlock(t *mapTable, keys []K, vals []V, found []bool) int {
	var ps [mapGroupKeys]mapProbe
	var lines mapLines
	n := 0
	for base := 0; base < len(keys); base += mapGroupKeys {
		m.prefetchAhead(keys, 0, base, len(keys))
		ks := keys[base:min(base+mapGroupKeys, len(keys))]
		m.probeGroup(t, ks, &ps, &lines)
		for x := range ks {
			p := &ps[x]
			var v V
			ok := false
			switch p.state {
			case mapKeyLine, mapKeyDirect:
				if i := m.matchHome(p, &ks[x]); i >= 0 {
					v, ok = m.valueAt(unsafe.Add(p.rp, uintptr(i)*m.r.stride)), true
				} else if !p.stop {
					v, ok = m.getSlow(t, &ks[x], p.h)
				}
			case mapKeySlow:
				v, ok = m.getSlow(t, &ks[x], p.h)
			}
			vals[base+x] = v
			if found != nil {
				found[base+x] = ok
			}
			if ok {
				n++
			}
		}
	}
	return n
}

// putMany stores vals[i] for keys[i], in order (a key given twice keeps
// its later value). vals must be at least as long as keys. Where existing
// keys are overwritten, their slots are found first by all goroutines at
// once with batched line loads; then the stores are applied and written
// out as one sorted batch. On error the map stays valid and every key
// holds either its old or its new value; vmem.ErrOutOfMemory leaves the keys
// not yet stored unchanged.
func (m *Map[K, V]) putMany(keys []K, vals []V) error {
	if m.sh != nil {
		return m.sh.putMany(keys, vals)
	}
	if err := m.mapUsable(); err != nil {
		return err
	}
	if len(vals) < len(keys) {
		return fmt.Errorf("collections: PutBatch: %d keys but %d values: %w", len(keys), len(vals), vmem.ErrRange)
	}
	if m.writing {
		m.badWrite()
	}
	m.writing = true
	defer m.writeDone()
	m.tierWriteMany(keys)
	if err := m.settle(); err != nil { // recorded Puts come first
		return err
	}
	err := m.putStored(keys, vals)
	m.flushForRead()
	m.writing = false
	m.version++
	if buildconst.Invariants {
		m.mustCheck()
	}
	return err
}

// putStored stores keys and vals by the CPU's batch path, in pieces of
// mapPutBatch (the caller settled what was pending before).
func (m *Map[K, V]) putStored(keys []K, vals []V) error {
	var err error
	hs := make([]uint64, min(len(keys), mapPutBatch))
	res := make([]uint64, len(hs))
	var old []mapOldStr
	if m.strV {
		old = make([]mapOldStr, len(hs))
	}
	for lo := 0; lo < len(keys) && err == nil; lo += mapPutBatch {
		hi := min(lo+mapPutBatch, len(keys))
		err = m.putBatch(keys[lo:hi], vals[lo:hi], hs[:hi-lo], res[:hi-lo], old[:min(len(old), hi-lo)])
	}
	return err
}

// mapOldStr is the string value field a batch's probe found in a
// record: its length and arena handle, freed once the new value is stored.
type mapOldStr struct {
	n int
	h strarena.Handle
}

// putBatch applies one piece of a putMany. old (string values only)
// receives the value fields of the keys found.
func (m *Map[K, V]) putBatch(keys []K, vals []V, hs, res []uint64, old []mapOldStr) error {
	t, fresh := m.locate(keys, hs, res, old)
	if t.growthLeft < fresh {
		fresh = m.freshBound(t, keys, hs, res)
	}
	if t.growthLeft < fresh {
		if err := m.grow(m.n+fresh, false); err != nil {
			return err
		}
		t, _ = m.locate(keys, hs, res, old)
	}
	// A string value's old field is freed by its overwrite, so a key found
	// twice is stored once, with its last value: the Puts before it are
	// replaced by it unseen (nothing reads between a batch's Puts). Hot
	// keys repeat often in a buffer of recorded Puts, and storing them
	// again would cost a round trip each.
	var later []bool
	if m.strV {
		later = mapLaterFound(res, 0)
	}
	for i := range keys {
		r := res[i]
		if r != 0 && later != nil && later[i] {
			continue
		}
		if r != 0 && m.t == t {
			l := mapLoc{b: (r - 1) >> 3, i: int((r - 1) & 7)}
			if !m.strV {
				if err := m.store(t, l, m.r.valOff, unsafe.Slice((*byte)(unsafe.Pointer(&vals[i])), unsafe.Sizeof(vals[i]))); err != nil {
					return err
				}
				continue
			}
			if err := m.overwriteStr(t, l, old[i], &vals[i]); err != nil {
				return err
			}
			continue
		}
		if err := m.put(&keys[i], &vals[i], hs[i]); err != nil {
			return err
		}
	}
	return nil
}

// freshBound counts the keys of a batch that may be new more tightly
// than locate, which takes every key not in its home bucket for new: in a
// full table of one-record buckets (string keys) that is many of the keys
// present, and a batch of overwrites grew the table for nothing (a map of
// 10^6 strings filled to its capacity doubled, taking 0.3 s, on a
// PutBatch of 4,096 of its own keys). A key is new for certain where no
// control byte along its probe (host memory) matches its hash; where one
// does, a record in host memory is compared in place, and one in device
// memory is taken for the key's. A wrong guess costs only put's own growth.
func (m *Map[K, V]) freshBound(t *mapTable, keys []K, hs, res []uint64) int {
	n := 0
	for i := range keys {
		if res[i] == 0 && !m.mayHold(t, &keys[i], hs[i]) {
			n++
		}
	}
	return n
}

// mayHold reports whether t may hold k (hash h): see freshBound.
func (m *Map[K, V]) mayHold(t *mapTable, k *K, h uint64) bool {
	pat := (h & 0x7f) * mapLSB
	for b := mapHome(h, t.nb); b < t.nbAll; b++ {
		sg := &t.segs[b>>t.shift]
		j := b & t.mask
		g := mapGroup(sg.fp, j, m.r.p)
		for mt := mapMatch(g, pat) & m.r.lowMask; mt != 0; mt &= mt - 1 {
			if sg.Kind != access.Direct {
				return true
			}
			if m.keyMatches(unsafe.Add(sg.Base, uintptr(j)*m.r.bucket+uintptr(bits.TrailingZeros64(mt)>>3)*m.r.stride), k, h) {
				return true
			}
		}
		if mapMatchEmpty(g)&m.r.lowMask != 0 {
			return false
		}
	}
	return false
}

// locate hashes keys into hs and finds the keys already in their home
// buckets: res[i] is 1+(bucket<<3|slot), or 0 when the key must go the full
// way (absent, elsewhere, or with a string value, whose old bytes must be
// freed). It returns the table it looked in and how many keys were not
// found (an upper bound on the entries the batch adds).
func (m *Map[K, V]) locate(keys []K, hs, res []uint64, old []mapOldStr) (*mapTable, int) {
	// The probes read memory, not the batcher. The caller is a writer that
	// settled the recorded Puts, or settle itself (holding flushMu).
	m.flushBatch()
	t := m.t
	fresh := 0
	m.spread(len(keys), func(lo, hi int) int {
		var ps [mapGroupKeys]mapProbe
		var lines mapLines
		n := 0
		for base := lo; base < hi; base += mapGroupKeys {
			m.prefetchAhead(keys, lo, base, hi)
			ks := keys[base:min(base+mapGroupKeys, hi)]
			m.probeGroup(t, ks, &ps, &lines)
			for x := range ks {
				p := &ps[x]
				hs[base+x], res[base+x] = p.h, 0
				if p.state == mapKeyLine || p.state == mapKeyDirect {
					if i := m.matchHome(p, &ks[x]); i >= 0 {
						res[base+x] = 1 + (p.b<<3 | uint64(i))
						if m.strV {
							f := unsafe.Add(p.rp, uintptr(i)*m.r.stride+m.r.valOff)
							old[base+x] = mapOldStr{mapStrLen(f), mapStrHandle(f, m.r.valW)}
						}
						continue
					}
				}
				n++
			}
		}
		return n
	}, &fresh)
	return t, fresh
}
