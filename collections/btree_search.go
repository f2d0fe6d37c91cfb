package collections

import (
	"math/bits"
	"reflect"
	"unsafe"
)

// Searches over sorted key arrays. Integer keys of a tree ordered by <
// (NewBTreeOrdered) are compared inline and branch-free: counting the keys
// below k with a subtract-with-borrow costs about a nanosecond a key and
// no mispredictions, where a binary search through a less function costs a
// call and a likely misprediction per step. Above btLinearMax keys a
// branch-free binary search is used (a linear count of 64 keys is some 300
// instructions). The index routes 64-bit keys with lineio.CountLE.

type btKeyKind uint8

const (
	btKGeneric btKeyKind = iota
	btKU64
	btKI64
	btKU32
	btKI32
)

const btLinearMax = 16

// btKindOf picks the fast path for an ordered key type, by kind so that
// named integer types qualify.
func btKindOf[K any]() btKeyKind {
	switch reflect.TypeFor[K]().Kind() {
	case reflect.Uint64, reflect.Uint, reflect.Uintptr:
		if unsafe.Sizeof(*new(K)) == 8 {
			return btKU64
		}
	case reflect.Int64, reflect.Int:
		if unsafe.Sizeof(*new(K)) == 8 {
			return btKI64
		}
	case reflect.Uint32:
		return btKU32
	case reflect.Int32:
		return btKI32
	}
	return btKGeneric
}

const btSign64 = 1 << 63

// btLowerOrdered returns how many of the n keys at p are below *k, and
// whether the key at that index equals *k.
func btLowerOrdered(kk btKeyKind, p unsafe.Pointer, n int, k unsafe.Pointer) (int, bool) {
	switch kk {
	case btKU64, btKI64:
		a := unsafe.Slice((*uint64)(p), n)
		x := *(*uint64)(k)
		var flip uint64
		if kk == btKI64 {
			flip = btSign64
		}
		i := btLower64(a, x, flip)
		return i, i < n && a[i] == x
	default:
		a := unsafe.Slice((*uint32)(p), n)
		x := *(*uint32)(k)
		var flip uint32
		if kk == btKI32 {
			flip = 1 << 31
		}
		i := btLower32(a, x, flip)
		return i, i < n && a[i] == x
	}
}

// btRouteOrdered returns how many of the n keys at p are <= *k.
func btRouteOrdered(kk btKeyKind, p unsafe.Pointer, n int, k unsafe.Pointer) int {
	switch kk {
	case btKU64, btKI64:
		a := unsafe.Slice((*uint64)(p), n)
		x := *(*uint64)(k)
		var flip uint64
		if kk == btKI64 {
			flip = btSign64
		}
		if x^flip == ^uint64(0) {
			return n
		}
		// keys <= x are the keys < x+1 (in the flipped order).
		return btLower64(a, (x^flip+1)^flip, flip)
	default:
		a := unsafe.Slice((*uint32)(p), n)
		x := *(*uint32)(k)
		var flip uint32
		if kk == btKI32 {
			flip = 1 << 31
		}
		if x^flip == ^uint32(0) {
			return n
		}
		return btLower32(a, (x^flip+1)^flip, flip)
	}
}

// btLower64 counts the keys of sorted a below x, comparing a[i]^flip with
// x^flip as unsigned numbers (flip is the sign bit for signed keys).
func btLower64(a []uint64, x, flip uint64) int {
	x ^= flip
	n := len(a)
	if n <= btLinearMax {
		c := uint64(0)
		for _, v := range a {
			_, b := bits.Sub64(v^flip, x, 0)
			c += b
		}
		return int(c)
	}
	// Branch-free binary search: each step is a load, a subtract with
	// borrow and a masked add, about a dozen instructions and no
	// misprediction.
	p := unsafe.Pointer(unsafe.SliceData(a))
	base := uintptr(0)
	for n > 1 {
		half := uintptr(n >> 1)
		_, b := bits.Sub64(*(*uint64)(unsafe.Add(p, (base+half-1)*8))^flip, x, 0)
		base += uintptr(-b) & half
		n -= int(half)
	}
	_, b := bits.Sub64(*(*uint64)(unsafe.Add(p, base*8))^flip, x, 0)
	return int(base + uintptr(b))
}

func btLower32(a []uint32, x, flip uint32) int {
	x ^= flip
	n := len(a)
	if n <= btLinearMax {
		c := uint32(0)
		for _, v := range a {
			_, b := bits.Sub32(v^flip, x, 0)
			c += b
		}
		return int(c)
	}
	p := unsafe.Pointer(unsafe.SliceData(a))
	base := uintptr(0)
	for n > 1 {
		half := uintptr(n >> 1)
		_, b := bits.Sub32(*(*uint32)(unsafe.Add(p, (base+half-1)*4))^flip, x, 0)
		base += uintptr(-b) & half
		n -= int(half)
	}
	_, b := bits.Sub32(*(*uint32)(unsafe.Add(p, base*4))^flip, x, 0)
	return int(base + uintptr(b))
}

// lower returns the index of the first of the n keys at p that is not below
// k, and whether it equals k.
func (t *BTree[K, V]) lower(p unsafe.Pointer, n int, k K) (int, bool) {
	if t.kk != btKGeneric {
		return btLowerOrdered(t.kk, p, n, unsafe.Pointer(&k))
	}
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.less(*(*K)(unsafe.Add(p, uintptr(m)*t.g.ks)), k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < n && !t.less(k, *(*K)(unsafe.Add(p, uintptr(lo)*t.g.ks)))
}

// upper returns how many of the n keys at p are <= k.
func (t *BTree[K, V]) upper(p unsafe.Pointer, n int, k K) int {
	if t.kk != btKGeneric {
		return btRouteOrdered(t.kk, p, n, unsafe.Pointer(&k))
	}
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.less(k, *(*K)(unsafe.Add(p, uintptr(m)*t.g.ks))) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}
