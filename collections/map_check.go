package collections

import (
	"fmt"
	"unsafe"

	"github.com/govram/govram/internal/access"
)

// mustCheck panics at the first broken invariant.
func (m *Map[K, V]) mustCheck() {
	if err := m.check(); err != nil {
		panic("collections: Map invariant broken: " + err.Error())
	}
}

// check walks the whole table, reading it as a writer does (pending stores
// included), and returns the first broken invariant:
//
//   - control bytes are full (seven hash bits), empty or deleted, and the
//     counts of full and deleted slots match n, tombs and growthLeft;
//   - every key's control byte holds its hash's low seven bits, its bucket
//     is at most maxDisp past its home bucket, and no bucket from its home
//     up to its own has an empty slot (else a probe would stop short);
//   - keys are distinct; a string key's stored hash is its hash;
//   - string fields hold sane lengths, and the arena holds exactly the
//     strings the records point to.
func (m *Map[K, V]) check() error {
	t := m.t
	if t == nil {
		return nil
	}
	hasEmpty := make([]bool, t.nbAll)
	full, tombs := 0, 0
	for b := uint64(0); b < t.nbAll; b++ {
		g := m.group(t, b)
		for i := 0; i < m.r.p; i++ {
			switch c := byte(g >> (8 * i)); {
			case c < 0x80:
				full++
			case c == mapEmpty:
				hasEmpty[b] = true
			case c == mapDeleted:
				tombs++
			default:
				return fmt.Errorf("bucket %d slot %d: control byte %#x", b, i, c)
			}
		}
	}
	if full != m.n || tombs != t.tombs || t.growthLeft != t.capacity-full-tombs {
		return fmt.Errorf("%d full and %d deleted slots; n = %d, tombs = %d, growthLeft = %d of %d",
			full, tombs, m.n, t.tombs, t.growthLeft, t.capacity)
	}
	seen := make(map[K]uint64, m.n)
	long := 0
	var dmaSeg *mapSeg // the private segment read whole into dmaBuf
	var dmaBuf []byte
	for b := uint64(0); b < t.nbAll; b++ {
		g := m.group(t, b)
		if ^g&m.r.lowMask == 0 {
			continue
		}
		sg, j := t.seg(b)
		var rp unsafe.Pointer
		if sg.Kind == access.DMA {
			// One DMA per segment, not one per bucket.
			if dmaSeg != sg {
				dmaBuf = mapAligned(uintptr(sg.n) * m.r.bucket)
				if err := kdev(m.dev).Read(dmaBuf, sg.slots, 0); err != nil {
					return fmt.Errorf("bucket %d: %v", b, err)
				}
				dmaSeg = sg
			}
			rp = unsafe.Pointer(&dmaBuf[uintptr(j)*m.r.bucket])
		} else {
			var err error
			if rp, err = m.readBucketW(t, sg, j); err != nil {
				return fmt.Errorf("bucket %d: %v", b, err)
			}
		}
		for i := 0; i < m.r.p; i++ {
			c := byte(g >> (8 * i))
			if c >= 0x80 {
				continue
			}
			sp := unsafe.Add(rp, uintptr(i)*m.r.stride)
			for _, f := range []struct {
				on  bool
				off uintptr
				w   uintptr
			}{{m.strK, m.r.keyOff, m.r.keyW}, {m.strV, m.r.valOff, m.r.valW}} {
				if !f.on {
					continue
				}
				n := mapStrLen(unsafe.Add(sp, f.off))
				if n > mapStrInline(f.w) {
					long++
					if h := mapStrHandle(unsafe.Add(sp, f.off), f.w); h.Len() != n-mapStrPrefix(f.w) {
						return fmt.Errorf("bucket %d slot %d: string of %d bytes with a handle of %d", b, i, n, h.Len())
					}
				}
			}
			k := m.keyAt(sp)
			if k != k {
				continue // NaN: no stable hash, never found
			}
			h := m.hash(&k)
			if m.strK && *(*uint64)(unsafe.Add(sp, m.r.hashOff)) != h {
				return fmt.Errorf("bucket %d slot %d: stored hash %#x, key hashes to %#x", b, i, *(*uint64)(sp), h)
			}
			if c != byte(h&0x7f) {
				return fmt.Errorf("bucket %d slot %d: control byte %#x, hash says %#x", b, i, c, h&0x7f)
			}
			home := mapHome(h, t.nb)
			if home > b || b-home > t.maxDisp {
				return fmt.Errorf("bucket %d slot %d: home %d (maxDisp %d)", b, i, home, t.maxDisp)
			}
			for x := home; x < b; x++ {
				if hasEmpty[x] {
					return fmt.Errorf("bucket %d slot %d: home %d, but bucket %d on the way has an empty slot", b, i, home, x)
				}
			}
			if prev, dup := seen[k]; dup {
				return fmt.Errorf("key %v in buckets %d and %d", k, prev, b)
			}
			seen[k] = b
		}
	}
	if m.arena != nil {
		if err := m.arena.Check(); err != nil {
			return fmt.Errorf("arena: %v", err)
		}
		if s := m.arena.Stats(); s.Strings != long {
			return fmt.Errorf("the arena holds %d strings, the records %d", s.Strings, long)
		}
	}
	return nil
}
