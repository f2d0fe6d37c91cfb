package collections

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"
	"reflect"
	"unsafe"

	"github.com/govram/govram/collections/internal/strarena"
	"github.com/govram/govram/layout"
	"github.com/govram/govram/vmem"
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

// String fields. A string sits in a field of w bytes (w a multiple of 8, at
// least 16, 8-aligned): a uint32 length, then either the bytes inline (up
// to w-4 of them), or the first w-12 bytes and, in the field's last 8
// bytes, the strarena.Handle of the rest. Comparing a key whose bytes are
// inline reads nothing but the record's line; a longer one first compares
// the inline prefix, so most mismatches never touch the arena.
const mapStrMin = 16

// mapStrKeyRecord is the least record of a map with string keys: two
// lines, so that a key of up to about a hundred bytes (a URL, a path) is
// held whole in its record and a lookup reads two adjacent lines, whose
// loads overlap, instead of the record and then the arena: one round trip
// instead of two.
const mapStrKeyRecord = 2 * layout.LineSize

func mapStrInline(w uintptr) int { return int(w) - 4 }
func mapStrPrefix(w uintptr) int { return int(w) - 12 }

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
		rec := layout.RecordFor(r.size, al)
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
		r.size = max(mapRoundUp(8+mapStrMin+vsz, layout.LineSize), mapStrKeyRecord)
		r.keyOff = 8
		r.keyW = r.size - 8 - vsz
		r.valOff = 8 + r.keyW
	case !strK && strV:
		// [K][value field].
		r.valOff = mapRoundUp(ks, 8)
		r.size = mapRoundUp(r.valOff+mapStrMin, layout.LineSize)
		r.valW = r.size - r.valOff
	default:
		// [hash][key field][value field]; the key gets the larger share of
		// the slack, since it is compared on every probe.
		r.size = max(mapRoundUp(8+2*mapStrMin, layout.LineSize), mapStrKeyRecord)
		slack := r.size - 8 - 2*mapStrMin
		r.valW = mapStrMin + slack/3&^7
		r.keyOff = 8
		r.keyW = r.size - 8 - r.valW
		r.valOff = 8 + r.keyW
	}
	if strK || strV {
		// One record of whole lines per bucket.
		r.p, r.stride, r.lines = 1, r.size, int(r.size/layout.LineSize)
	}
	r.bucket = uintptr(r.lines) * layout.LineSize
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

// Control bytes: 0x00-0x7F a full slot (seven bits of its hash), 0x80
// empty, 0xFE deleted (a tombstone: probes continue past it).
const (
	mapEmpty   = 0x80
	mapDeleted = 0xFE
	mapLSB     = 0x0101010101010101
	mapMSB     = 0x8080808080808080
)

// mapMatch flags (0x80) the bytes of g equal to the byte of pat. It may
// also flag a full slot just above a true match (a borrow), never an empty
// or deleted one; callers compare keys anyway.
func mapMatch(g, pat uint64) uint64 {
	x := g ^ pat
	return (x - mapLSB) &^ x & mapMSB
}

// mapMatchEmpty flags the empty bytes: high bit set, bit 1 clear.
func mapMatchEmpty(g uint64) uint64 { return g &^ (g << 6) & mapMSB }

// mapMatchFree flags the empty and deleted bytes.
func mapMatchFree(g uint64) uint64 { return g & mapMSB }

// mapGroup reads the control bytes of bucket j (p bytes at fp + j*p, read
// as one little-endian word; the bytes past the group are masked off by
// the caller).
func mapGroup(fp unsafe.Pointer, j uint64, p int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(fp, uintptr(j)*uintptr(p))), 8))
}

// mapHome maps a hash to a home bucket: the high bits of h*nb. Monotonic in
// h, so the table is ordered by hash, which lets growth stream the old
// table into the new one in order and lets iteration resume by hash.
func mapHome(h, nb uint64) uint64 {
	hi, _ := bits.Mul64(h, nb)
	return hi
}

// mapStartHash returns the smallest hash whose home bucket in a table of nb
// buckets is at least b (b < nb), i.e. ceil(b * 2^64 / nb).
func mapStartHash(b, nb uint64) uint64 {
	if b == 0 {
		return 0
	}
	q, r := bits.Div64(b, 0, nb)
	if r != 0 {
		q++
	}
	return q
}

// Hash functions.
type mapHashKind uint8

const (
	mapHash1 mapHashKind = iota // memory-comparable keys of 1, 2, 4 or 8 bytes
	mapHash2
	mapHash4
	mapHash8
	mapHash16
	mapHash0    // zero-size keys
	mapHashMem  // other memory-comparable sizes
	mapHashComp // floats, padding, blank fields: maphash.Comparable
	mapHashStr
	mapHashUser
)

// mapMix is a 64x64->128 multiply folded to 64 bits, twice: enough to
// spread sequential integers over both the high bits (home bucket) and the
// low seven (fingerprint).
func mapMix(x, s uint64) uint64 {
	hi, lo := bits.Mul64(x^0xa0761d6478bd642f, s^0xe7037ed1a0b428db)
	hi, lo = bits.Mul64(hi^lo^s, 0x8ebc6af09c88c6e3)
	return hi ^ lo
}

// mapMemHashable reports whether t's == is plain byte equality: no floats
// (0 == -0, NaN != NaN), no padding and no blank fields (== skips them).
func mapMemHashable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	case reflect.Array:
		return t.Len() == 0 || mapMemHashable(t.Elem())
	case reflect.Struct:
		var sum uintptr
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == "_" || !mapMemHashable(f.Type) {
				return false
			}
			sum += f.Type.Size()
		}
		return sum == t.Size()
	}
	return false
}

func mapPickHash(kt reflect.Type, strK, user bool) mapHashKind {
	switch {
	case user:
		return mapHashUser
	case strK:
		return mapHashStr
	case !mapMemHashable(kt):
		return mapHashComp
	}
	switch kt.Size() {
	case 0:
		return mapHash0
	case 1:
		return mapHash1
	case 2:
		return mapHash2
	case 4:
		return mapHash4
	case 8:
		return mapHash8
	case 16:
		return mapHash16
	}
	return mapHashMem
}

// hash returns k's 64-bit hash.
func (m *Map[K, V]) hash(k *K) uint64 {
	p := unsafe.Pointer(k)
	switch m.hk {
	case mapHash8:
		return mapMix(*(*uint64)(p), m.seed)
	case mapHash4:
		return mapMix(uint64(*(*uint32)(p)), m.seed)
	case mapHashStr:
		return maphash.String(m.mseed, *(*string)(p))
	case mapHash16:
		return mapMix(*(*uint64)(p)^mapMix(*(*uint64)(unsafe.Add(p, 8)), m.seed), m.seed)
	case mapHash2:
		return mapMix(uint64(*(*uint16)(p)), m.seed)
	case mapHash1:
		return mapMix(uint64(*(*uint8)(p)), m.seed)
	case mapHash0:
		return mapMix(0, m.seed)
	case mapHashMem:
		return maphash.Bytes(m.mseed, unsafe.Slice((*byte)(p), unsafe.Sizeof(*k)))
	case mapHashComp:
		return maphash.Comparable(m.mseed, *k)
	}
	return mapMix(m.user(*k), m.seed)
}

// mapCheckTypes checks that K and V can live in device memory (strings
// are stored specially) and reports which are strings.
func mapCheckTypes[K comparable, V any]() (strK, strV bool, err error) {
	kt, vt := reflect.TypeFor[K](), reflect.TypeFor[V]()
	strK, strV = isStringType(kt), isStringType(vt)
	if !strK {
		if err := layout.CheckType(kt); err != nil {
			return false, false, fmt.Errorf("collections: NewMap: key type: %w", err)
		}
	}
	if !strV {
		if err := layout.CheckType(vt); err != nil {
			return false, false, fmt.Errorf("collections: NewMap: value type: %w", err)
		}
	}
	return strK, strV, nil
}

// String field access. f points at the field inside a record image or in
// host memory; w is its width.

func mapStrLen(f unsafe.Pointer) int { return int(*(*uint32)(f)) }

func mapStrHandle(f unsafe.Pointer, w uintptr) strarena.Handle {
	return *(*strarena.Handle)(unsafe.Add(f, w-8))
}

// mapBytesAt views n bytes at p.
func mapBytesAt(p unsafe.Pointer, n int) []byte { return unsafe.Slice((*byte)(p), n) }

// eqStr reports whether the string field f (width w) holds s.
func (m *Map[K, V]) eqStr(f unsafe.Pointer, w uintptr, s string) bool {
	n := mapStrLen(f)
	if n != len(s) {
		return false
	}
	if n <= mapStrInline(w) {
		return unsafe.String((*byte)(unsafe.Add(f, 4)), n) == s
	}
	pre := mapStrPrefix(w)
	if unsafe.String((*byte)(unsafe.Add(f, 4)), pre) != s[:pre] {
		return false
	}
	eq, err := m.arena.EqualString(mapStrHandle(f, w), s[pre:])
	if err != nil {
		m.setErr(err)
	}
	return eq
}

// decStr returns the string held by field f (width w) as a new Go string.
func (m *Map[K, V]) decStr(f unsafe.Pointer, w uintptr) string {
	n := mapStrLen(f)
	if n == 0 {
		return ""
	}
	if n <= mapStrInline(w) {
		return string(mapBytesAt(unsafe.Add(f, 4), n))
	}
	pre := mapStrPrefix(w)
	b := make([]byte, n)
	copy(b, mapBytesAt(unsafe.Add(f, 4), pre))
	if err := m.arena.Read(b[pre:], mapStrHandle(f, w), 0); err != nil {
		m.setErr(err)
	}
	return unsafe.String(&b[0], n)
}

// encStr writes s into field f (width w) of a record image, storing the
// part that does not fit in the arena. On error nothing is stored.
func (m *Map[K, V]) encStr(f unsafe.Pointer, w uintptr, s string) error {
	n := len(s)
	if n <= mapStrInline(w) {
		*(*uint32)(f) = uint32(n)
		copy(mapBytesAt(unsafe.Add(f, 4), int(w)-4), s)
		return nil
	}
	pre := mapStrPrefix(w)
	// Both bounds: the arena's, and the snapshot's, so that whatever Put
	// takes, Save writes and LoadMap reads back.
	if n-pre > strarena.MaxLen || n > snapMaxString {
		return fmt.Errorf("collections: Map: a string of %d bytes (at most %d): %w", n, min(strarena.MaxLen+pre, snapMaxString), vmem.ErrTooLarge)
	}
	h, err := m.arena.PutString(s[pre:])
	if err != nil {
		return err
	}
	*(*uint32)(f) = uint32(n)
	copy(mapBytesAt(unsafe.Add(f, 4), pre), s[:pre])
	*(*strarena.Handle)(unsafe.Add(f, w-8)) = h
	return nil
}

// freeStr releases the arena part of field f, if any.
func (m *Map[K, V]) freeStr(f unsafe.Pointer, w uintptr) {
	if mapStrLen(f) > mapStrInline(w) {
		m.arena.Free(mapStrHandle(f, w))
	}
}

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

// recordHash returns the hash that placed the record at sp, which lies in
// bucket b of a table of nb home buckets. String keys keep theirs; others
// are hashed again. A key unequal to itself (NaN) has no stable hash: it
// gets one that puts it where it lies, which keeps growth and iteration in
// order (such a key can never be found by Get anyway, as in a Go map).
func (m *Map[K, V]) recordHash(sp unsafe.Pointer, b, nb uint64) uint64 {
	if m.strK {
		return *(*uint64)(unsafe.Add(sp, m.r.hashOff))
	}
	k := (*K)(unsafe.Add(sp, m.r.keyOff))
	if m.hk == mapHashComp && *k != *k {
		return mapStartHash(min(b, nb-1), nb)
	}
	return m.hash(k)
}
