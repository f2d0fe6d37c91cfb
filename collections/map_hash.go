package collections

import (
	"hash/maphash"
	"math/bits"
	"reflect"
	"unsafe"
)

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
