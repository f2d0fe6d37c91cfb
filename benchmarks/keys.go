package main

// Keys, values and probe sequences shared by the suites. Keys come from a
// bijective mixer, so key(i) is distinct for distinct i, never zero, and
// spread evenly over hash buckets; misses are keys of indices past the
// size. Probe arrays are small and read sequentially, so the time measured
// is the container's, not the probe array's cache misses.

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
)

// probeCount is the length of the probe arrays of a container of n
// entries, a power of two: four times n, so that a uniform stream reaches
// about every key as a user's would (a cache in front of the container,
// the hot tier or the CPU's, sees the whole key space, not a small hot
// subset), at most 2^22 (a uint64 array of 32 MiB; a larger container is
// probed on 4M random keys). The arrays are read in order, which the
// CPU's prefetcher hides.
func probeCount(n int) int { return probeCountMax(n, 1<<22) }

// strProbeCount is probeCount for string probes, at most 2^21: a probe
// is its string and the same bytes, about 100 bytes.
func strProbeCount(n int) int { return probeCountMax(n, 1<<21) }

func probeCountMax(n, most int) int {
	c := 1 << 10
	for c < 4*n && c < most {
		c <<= 1
	}
	return c
}

// mix64 is splitmix64's finalizer: a bijection of uint64 with mix64(0) = 0.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// key returns the i-th key of a hash container (never 0).
func key(i int) uint64 { return mix64(uint64(i) + 1) }

// orderedKey returns the i-th key of an ordered container: even numbers,
// so odd ones are free for inserts and a range of width 2k holds k keys.
func orderedKey(i int) uint64 { return 2 * (uint64(i) + 1) }

// rng returns a deterministic generator for a seed.
func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// randomIdx returns count random indices in [0, n).
func randomIdx(n, count int, seed uint64) []int {
	r := rng(seed)
	idx := make([]int, count)
	for i := range idx {
		idx[i] = r.IntN(n)
	}
	return idx
}

// distinctIdx returns min(count, n) distinct random indices in [0, n).
func distinctIdx(n, count int, seed uint64) []int {
	count = min(count, n)
	r := rng(seed)
	seen := make(map[int]bool, count)
	idx := make([]int, 0, count)
	for len(idx) < count {
		i := r.IntN(n)
		if !seen[i] {
			seen[i] = true
			idx = append(idx, i)
		}
	}
	return idx
}

// Sizes of the string entries: a 21-byte key ("user:" and 16 hex
// digits) and a 32-byte value, like a session or user cache.
const (
	strKeyLen = 21
	strValLen = 32
)

// appendStrKey appends the i-th string key.
func appendStrKey(dst []byte, i int) []byte {
	var b [8]byte
	k := key(i)
	for j := range b {
		b[j] = byte(k >> (8 * j))
	}
	dst = append(dst, "user:"...)
	return hex.AppendEncode(dst, b[:])
}

// appendStrVal appends the value stored under the i-th string key, with
// a version so overwrites change it.
func appendStrVal(dst []byte, i, version int) []byte {
	var b [8]byte
	k := key(i) ^ uint64(version)
	for j := range b {
		b[j] = byte(k >> (8 * j))
	}
	dst = append(dst, "value:"...)
	dst = hex.AppendEncode(dst, b[:])
	return append(dst, "..........."[:strValLen-6-16]...)
}

func strKey(i int) string { return string(appendStrKey(nil, i)) }

func strVal(i, version int) string { return string(appendStrVal(nil, i, version)) }

// sink keeps results alive so the compiler cannot drop the work.
//
//lint:ignore U1000 written by the cases, never read: it keeps their work alive
var sink uint64

// checkHits fails a lookup case whose keys should all have been found.
func checkHits(missed, n int) error {
	if missed > 0 {
		return fmt.Errorf("%d of %d lookups of present keys missed", missed, n)
	}
	return nil
}
