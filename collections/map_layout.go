package collections

import (
	"unsafe"

	"github.com/govram/govram/internal/recs"
)

// mapRec is where a slot's fields sit and how slots make buckets.
//
// A bucket is one 64-byte line holding p slots (p = records per line, at
// most 8), or, for records over 64 bytes, one record of several lines. The
// bucket is the unit of both probing and reading: a key's home bucket is
// known from its hash alone, so its line can be loaded while its
// fingerprints are still on their way from host memory, and a hit in the
// home bucket costs one line.
type mapRec struct {
	size   uintptr // bytes of one record
	stride uintptr // bytes between slots of a bucket
	p      int     // slots per bucket
	bucket uintptr // bytes per bucket: lines*64
	lines  int     // lines per bucket

	hashOff uintptr // string keys: the full hash, for growth and quick rejects
	keyOff  uintptr // the key, or the key's string field
	keyW    uintptr // width of the key's string field
	valOff  uintptr // the value, or the value's string field
	valW    uintptr // width of the value's string field

	loadNum, loadDen uint64 // maximum load factor
	lowMask          uint64 // 0x80 in each of the p bytes of a group
}

// mapStrKeyRecord is the least record of a map with string keys: two
// lines, so that a key of up to about a hundred bytes (a URL, a path) is
// held whole in its record and a lookup reads two adjacent lines, whose
// loads overlap, instead of the record and then the arena: one round trip
// instead of two.
const mapStrKeyRecord = 2 * recs.LineSize

// mapLayout decides the record of a Map with keys of size ks/alignment ka
// (strK: string keys) and values vs/va (strV: string values).
func mapLayout(ks, ka, vs, va uintptr, strK, strV bool) mapRec {
	var r mapRec
	switch {
	case !strK && !strV:
		// [K][V], V aligned; padded to the record's alignment. Records that
		// fit a line are packed as many to a line as fit (layout.Record):
		// 16-byte uint64 pairs go four to a line.
		al := max(ka, va, 1)
		r.valOff = mapRoundUp(ks, max(va, 1))
		r.size = max(mapRoundUp(r.valOff+vs, al), 1)
		rec := recs.For(r.size, al)
		if rec.LinesPer == 1 {
			r.p = min(rec.PerLine, 8)
			r.stride = rec.Stride
			r.lines = 1
		} else {
			r.p, r.stride, r.lines = 1, rec.Stride, rec.LinesPer
		}
	case strK && !strV:
		// [hash][key field][V]: the key part first, so that for values of
		// several lines the comparison needs only the first line.
		vsz := mapRoundUp(vs, 8)
		r.size = max(mapRoundUp(8+mapStrMin+vsz, recs.LineSize), mapStrKeyRecord)
		r.keyOff = 8
		r.keyW = r.size - 8 - vsz
		r.valOff = 8 + r.keyW
	case !strK && strV:
		// [K][value field].
		r.valOff = mapRoundUp(ks, 8)
		r.size = mapRoundUp(r.valOff+mapStrMin, recs.LineSize)
		r.valW = r.size - r.valOff
	default:
		// [hash][key field][value field]; the key gets the larger share of
		// the slack, since it is compared on every probe.
		r.size = max(mapRoundUp(8+2*mapStrMin, recs.LineSize), mapStrKeyRecord)
		slack := r.size - 8 - 2*mapStrMin
		r.valW = mapStrMin + slack/3&^7
		r.keyOff = 8
		r.keyW = r.size - 8 - r.valW
		r.valOff = 8 + r.keyW
	}
	if strK || strV {
		// One record of whole lines per bucket.
		r.p, r.stride, r.lines = 1, r.size, int(r.size/recs.LineSize)
	}
	r.bucket = uintptr(r.lines) * recs.LineSize
	r.lowMask = mapMSB >> (64 - 8*uint(r.p))
	// Fuller buckets tolerate higher loads: at 7/8 a key of a 4-slot
	// bucket lies in its home bucket eight times in ten; one-slot buckets
	// (linear probing proper) need more room for the same.
	switch {
	case r.p >= 4:
		r.loadNum, r.loadDen = 7, 8
	case r.p >= 2:
		r.loadNum, r.loadDen = 4, 5
	default:
		r.loadNum, r.loadDen = 3, 4
	}
	return r
}

func mapRoundUp(x, a uintptr) uintptr { return (x + a - 1) / a * a }

// keyMatches reports whether the record at sp holds key k (hash h).
func (m *Map[K, V]) keyMatches(sp unsafe.Pointer, k *K, h uint64) bool {
	if !m.strK {
		return *(*K)(unsafe.Add(sp, m.r.keyOff)) == *k
	}
	if *(*uint64)(sp) != h {
		return false
	}
	return m.eqStr(unsafe.Add(sp, m.r.keyOff), m.r.keyW, *(*string)(unsafe.Pointer(k)))
}

// valueAt decodes the value of the record at sp.
func (m *Map[K, V]) valueAt(sp unsafe.Pointer) V {
	if !m.strV {
		return *(*V)(unsafe.Add(sp, m.r.valOff))
	}
	var v V
	*(*string)(unsafe.Pointer(&v)) = m.decStr(unsafe.Add(sp, m.r.valOff), m.r.valW)
	return v
}

// keyAt decodes the key of the record at sp.
func (m *Map[K, V]) keyAt(sp unsafe.Pointer) K {
	if !m.strK {
		return *(*K)(unsafe.Add(sp, m.r.keyOff))
	}
	var k K
	*(*string)(unsafe.Pointer(&k)) = m.decStr(unsafe.Add(sp, m.r.keyOff), m.r.keyW)
	return k
}
