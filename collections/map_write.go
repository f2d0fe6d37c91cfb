package collections

import (
	"math/bits"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/prefetch"
)

// writeDone ends a batch write (deferred): on a normal return the write
// has already ended; after a panic (a WithHasher function's) it keeps the
// Map usable, with every key whose store completed. Put and Delete do
// without: a deferred call made an overwriting Put measurably slower on
// the host backend (BenchmarkMapPut's overwrite rows).
func (m *Map[K, V]) writeDone() { m.writing = false }

//go:noinline
func (m *Map[K, V]) badWrite() {
	panic("collections: concurrent Map writes")
}

// mapLoc names a slot: slot i of bucket b.
type mapLoc struct {
	b uint64
	i int
}

// mapFound is what a writer's probe learned.
type mapFound struct {
	loc      mapLoc         // where the key is, if found
	rec      unsafe.Pointer // its record's image (valid until the next probe)
	found    bool
	ins      mapLoc // the first free slot on the key's probe path
	insOK    bool
	insEmpty bool // ins is empty (not a tombstone)
}

// findW looks k up for a writer: pending stores are seen.
func (m *Map[K, V]) findW(t *mapTable, k *K, h uint64) (f mapFound, err error) {
	pat := (h & 0x7f) * mapLSB
	if t.allDirect && m.r.p == 1 {
		// One record a bucket, in host memory: the home record's address
		// is known from the hash, so its lines (to compare, or to store a
		// new record into) are fetched while the control bytes are.
		sg, j := t.seg(mapHome(h, t.nb))
		prefetch.Span(unsafe.Add(sg.Base, uintptr(j)*m.r.bucket), m.r.bucket)
	}
	for b := mapHome(h, t.nb); b < t.nbAll; b++ {
		sg, j := t.seg(b)
		g := mapGroup(sg.fp, j, m.r.p)
		if mt := mapMatch(g, pat) & m.r.lowMask; mt != 0 {
			rp, err := m.readBucketW(t, sg, j)
			if err != nil {
				return f, err
			}
			for ; mt != 0; mt &= mt - 1 {
				i := bits.TrailingZeros64(mt) >> 3
				sp := unsafe.Add(rp, uintptr(i)*m.r.stride)
				if m.keyMatches(sp, k, h) {
					f.loc, f.rec, f.found = mapLoc{b, i}, sp, true
					return f, nil
				}
			}
		}
		if !f.insOK {
			if fr := mapMatchFree(g) & m.r.lowMask; fr != 0 {
				i := bits.TrailingZeros64(fr) >> 3
				f.ins, f.insOK = mapLoc{b, i}, true
				f.insEmpty = byte(g>>(8*i)) == mapEmpty
			}
		}
		if mapMatchEmpty(g)&m.r.lowMask != 0 {
			break
		}
	}
	return f, nil
}

// store writes data at byte off of the record in slot l.
func (m *Map[K, V]) store(t *mapTable, l mapLoc, off uintptr, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	sg, j := t.seg(l.b)
	o := uintptr(j)*m.r.bucket + uintptr(l.i)*m.r.stride + off
	if sg.Kind == access.WC && t.bat != nil {
		if err := t.bat.Put(uintptr(sg.Base)-uintptr(t.batBase)+o, data); err != nil {
			return err
		}
		if !m.pending.Load() {
			m.pending.Store(true)
		}
		return nil
	}
	return sg.Write(uint64(o), data)
}

// Put stores v for k, replacing any value k had. A key equal to a stored
// one keeps the stored key's bits: Put(-0.0, v) after Put(+0.0, u) leaves
// key +0.0 with value v (Go's map would keep -0.0; only keys that compare
// equal with other bits, as floating-point zeros, can tell). It fails with vmem.ErrClosed,
// with vmem.ErrOutOfMemory when the table must grow and the device has no room
// (the map is then unchanged), or with an error matching vmem.ErrTooLarge
// for a string longer than 256 MiB.
func (m *Map[K, V]) Put(k K, v V) error {
	if m.sh != nil {
		return m.sh.Put(k, v)
	}
	if err := m.mapUsable(); err != nil {
		return err
	}
	if m.writing {
		m.badWrite()
	}
	m.writing = true
	behind, err := m.putBehind(&k, &v)
	if !behind && err == nil {
		h := m.hash(&k)
		var done bool
		if done, err = m.putHost(&k, &v, h); !done && err == nil {
			err = m.put(&k, &v, h)
		}
		m.version++
		if m.tier != nil && err == nil {
			m.tierPut(&k, h, &v)
		}
	} else if m.tier != nil && err == nil {
		m.tierPut(&k, m.hash(&k), &v)
	}
	m.writing = false
	if buildconst.Invariants {
		m.mustCheck()
	}
	return err
}

// putHost stores k's value where every segment of the table is ordinary
// memory and keys and values have fixed sizes: Get's probe, keys compared
// in place, an overwrite stored where the value lies and a new key
// inserted where findW would put it. It reports false, having changed
// nothing, where the table is elsewhere or must grow: put does the work
// then. The general path's calls and copies made a Put on the host
// backend cost twice a Go map's (BenchmarkMapTier's Put rows, notier
// against gomap).
func (m *Map[K, V]) putHost(k *K, v *V, h uint64) (bool, error) {
	t := m.t
	if !t.allDirect || m.strK || m.strV {
		return false, nil
	}
	pat := (h & 0x7f) * mapLSB
	var ins mapLoc
	insOK, insEmpty := false, false
	for b := mapHome(h, t.nb); b < t.nbAll; b++ {
		sg := &t.segs[b>>t.shift]
		j := b & t.mask
		g := mapGroup(sg.fp, j, m.r.p)
		for mt := mapMatch(g, pat) & m.r.lowMask; mt != 0; mt &= mt - 1 {
			sp := unsafe.Add(sg.Base, uintptr(j)*m.r.bucket+uintptr(bits.TrailingZeros64(mt)>>3)*m.r.stride)
			if *(*K)(unsafe.Add(sp, m.r.keyOff)) == *k {
				*(*V)(unsafe.Add(sp, m.r.valOff)) = *v
				return true, nil
			}
		}
		if !insOK {
			if fr := mapMatchFree(g) & m.r.lowMask; fr != 0 {
				i := bits.TrailingZeros64(fr) >> 3
				ins, insOK = mapLoc{b, i}, true
				insEmpty = byte(g>>(8*i)) == mapEmpty
			}
		}
		if mapMatchEmpty(g)&m.r.lowMask != 0 {
			break
		}
	}
	if !insOK || (insEmpty && t.growthLeft <= 0) {
		return false, nil
	}
	return true, m.insert(t, ins, insEmpty, k, v, h)
}

func (m *Map[K, V]) put(k *K, v *V, h uint64) error {
	for {
		t := m.t
		f, err := m.findW(t, k, h)
		if err != nil {
			return err
		}
		if f.found {
			return m.overwrite(t, f.loc, f.rec, v)
		}
		if !f.insOK || (f.insEmpty && t.growthLeft <= 0) {
			if err := m.grow(1, !f.insOK); err != nil {
				return err
			}
			continue
		}
		return m.insert(t, f.ins, f.insEmpty, k, v, h)
	}
}

// overwrite replaces the value of the record at l (image rec).
func (m *Map[K, V]) overwrite(t *mapTable, l mapLoc, rec unsafe.Pointer, v *V) error {
	if !m.strV {
		// Through the map's own buffer: v's address must not escape into
		// the device paths, or every Put would allocate it.
		*(*V)(unsafe.Pointer(&m.enc[0])) = *v
		return m.store(t, l, m.r.valOff, m.enc[:unsafe.Sizeof(*v)])
	}
	of := unsafe.Add(rec, m.r.valOff)
	return m.overwriteStr(t, l, mapOldStr{mapStrLen(of), mapStrHandle(of, m.r.valW)}, v)
}

// overwriteStr stores the string value v into the record at l, whose value
// field was old, and frees old's arena bytes once the store is made.
func (m *Map[K, V]) overwriteStr(t *mapTable, l mapLoc, old mapOldStr, v *V) error {
	f := unsafe.Pointer(&m.enc[0])
	clear(m.enc[:m.r.valW])
	if err := m.encStr(f, m.r.valW, *(*string)(unsafe.Pointer(v))); err != nil {
		return err
	}
	if err := m.store(t, l, m.r.valOff, m.enc[:m.r.valW]); err != nil {
		m.freeStr(f, m.r.valW)
		return err
	}
	if old.n > mapStrInline(m.r.valW) {
		m.arena.Free(old.h)
	}
	return nil
}

// insert stores a new record for k in the free slot l.
func (m *Map[K, V]) insert(t *mapTable, l mapLoc, empty bool, k *K, v *V, h uint64) error {
	rec := unsafe.Pointer(&m.enc[0])
	clear(m.enc)
	if m.strK {
		*(*uint64)(unsafe.Add(rec, m.r.hashOff)) = h
		if err := m.encStr(unsafe.Add(rec, m.r.keyOff), m.r.keyW, *(*string)(unsafe.Pointer(k))); err != nil {
			return err
		}
	} else {
		*(*K)(unsafe.Add(rec, m.r.keyOff)) = *k
	}
	if m.strV {
		if err := m.encStr(unsafe.Add(rec, m.r.valOff), m.r.valW, *(*string)(unsafe.Pointer(v))); err != nil {
			m.freeStrings(rec)
			return err
		}
	} else {
		*(*V)(unsafe.Add(rec, m.r.valOff)) = *v
	}
	if err := m.store(t, l, 0, m.enc); err != nil {
		m.freeStrings(rec)
		return err
	}
	t.setFP(l.b, l.i, byte(h&0x7f), m.r.p)
	if empty {
		t.growthLeft--
	} else {
		t.tombs--
	}
	if d := l.b - mapHome(h, t.nb); d > t.maxDisp {
		t.maxDisp = d
	}
	m.n++
	return nil
}

// freeStrings releases the arena parts of the record image rec.
func (m *Map[K, V]) freeStrings(rec unsafe.Pointer) {
	if m.strK {
		m.freeStr(unsafe.Add(rec, m.r.keyOff), m.r.keyW)
	}
	if m.strV {
		m.freeStr(unsafe.Add(rec, m.r.valOff), m.r.valW)
	}
}

// Delete removes k and returns the value it had and whether it was
// present; deleting a missing key does nothing. The shape is BTree.Delete's
// (and google/btree's): the old value comes from the line the probe reads
// anyway (a string value's bytes are read from the arena before they are
// freed). It returns vmem.ErrClosed after Close and the device's error
// after a loss, with the map unchanged.
func (m *Map[K, V]) Delete(k K) (V, bool, error) {
	if m.sh != nil {
		return m.sh.Delete(k) // a map on a pool has no table of its own
	}
	var zero V
	if err := m.mapUsable(); err != nil {
		return zero, false, err
	}
	if m.writing {
		m.badWrite()
	}
	m.writing = true
	if len(m.wb.keys) > 0 {
		// A recorded Put of k must not come back after the Delete.
		if err := m.settle(); err != nil {
			m.writing = false
			return zero, false, err
		}
	}
	h := m.hash(&k)
	old, found, err := m.delete(&k, h)
	if m.tier != nil {
		// Also after an error: whether the key went is then unknown, and
		// the tier holds only copies the device confirms.
		m.tierDelete(&k, h)
	}
	m.writing = false
	m.version++
	if buildconst.Invariants {
		m.mustCheck()
	}
	return old, found, err
}

func (m *Map[K, V]) delete(k *K, h uint64) (old V, found bool, err error) {
	t := m.t
	f, err := m.findW(t, k, h)
	if err != nil || !f.found {
		return old, false, err
	}
	old = m.valueAt(f.rec)
	m.freeStrings(f.rec)
	// A bucket that has an empty slot stops every probe, so no key lies
	// past it on a probe through it: the slot can become empty again.
	// Otherwise a tombstone keeps later keys reachable.
	if mapMatchEmpty(m.group(t, f.loc.b))&m.r.lowMask != 0 {
		t.setFP(f.loc.b, f.loc.i, mapEmpty, m.r.p)
		t.growthLeft++
	} else {
		t.setFP(f.loc.b, f.loc.i, mapDeleted, m.r.p)
		t.tombs++
	}
	m.n--
	return old, true, nil
}
