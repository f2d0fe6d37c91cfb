package collections

import (
	"fmt"
	"unsafe"

	"github.com/govram/govram/collections/internal/strarena"
	"github.com/govram/govram/internal/prefetch"
	"github.com/govram/govram/vmem"
)

// String fields. A string sits in a field of w bytes (w a multiple of 8, at
// least 16, 8-aligned): a uint32 length, then either the bytes inline (up
// to w-4 of them), or the first w-12 bytes and, in the field's last 8
// bytes, the strarena.Handle of the rest. Comparing a key whose bytes are
// inline reads nothing but the record's line; a longer one first compares
// the inline prefix, so most mismatches never touch the arena.
const mapStrMin = 16

func mapStrInline(w uintptr) int { return int(w) - 4 }
func mapStrPrefix(w uintptr) int { return int(w) - 12 }

// String field access. f points at the field inside a record image or in
// host memory; w is its width.

func mapStrLen(f unsafe.Pointer) int { return int(*(*uint32)(f)) }

func mapStrHandle(f unsafe.Pointer, w uintptr) strarena.Handle {
	return *(*strarena.Handle)(unsafe.Add(f, w-8))
}

// mapStrAhead is how many string keys ahead of the one being hashed a
// batch loop prefetches the bytes of. Keys picked from a large heap miss
// every cache and the TLB; a hash waits for its key's lines alone, and a
// loop of hashes takes their misses one after another. Prefetching a few
// dozen keys ahead keeps that many misses in flight. Hashing and imaging
// 2^20 keys picked from 2^23 (BenchmarkStrings in internal/prefetch), a
// key: on the H200 machine's CPUs 60-70 ns with 32 ahead, 66-75 with 16,
// 70 with 64, 83-85 without, 99-106 loading 16 keys' bytes before hashing
// them; on a 2-core AMD VM 31 with 16 or 32 ahead against 131 without.
const mapStrAhead = 32

// prefetchKeys starts fetching the bytes of ks's keys when they are
// strings, and does nothing for other key types.
func (m *Map[K, V]) prefetchKeys(ks []K) {
	if m.strK && len(ks) > 0 {
		prefetch.Strings(unsafe.Slice((*string)(unsafe.Pointer(&ks[0])), len(ks)))
	}
}

// prefetchAhead, called at index i of a loop over ks[lo:hi] in steps of
// mapGroupKeys, prefetches the string keys mapStrAhead places on (at i ==
// lo, all keys up to there too).
func (m *Map[K, V]) prefetchAhead(ks []K, lo, i, hi int) {
	if !m.strK {
		return
	}
	if i == lo {
		m.prefetchKeys(ks[lo:min(lo+mapStrAhead, hi)])
	}
	if a := i + mapStrAhead; a < hi {
		m.prefetchKeys(ks[a:min(a+mapGroupKeys, hi)])
	}
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
