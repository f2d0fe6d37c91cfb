package collections

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/btree"
	"github.com/govram/govram/vmem"
)

// Ascend(from) and Descend(from) against google/btree's
// AscendGreaterOrEqual and DescendLessOrEqual.

type btFromItem[K any] struct {
	k K
	v uint64
}

// btFromCase is one tree and its model, with the pivots to scan from.
type btFromCase[K any] struct {
	tr     *BTree[K, uint64]
	m      *btree.BTreeG[btFromItem[K]]
	pivots []K
}

// btFromCheck compares Ascend(p) and Descend(p) with the model for every
// pivot, run to the end and broken off after a few entries.
func btFromCheck[K comparable](t *testing.T, c btFromCase[K]) {
	t.Helper()
	take := func(seq iter.Seq2[K, uint64], limit int) []btFromItem[K] {
		var out []btFromItem[K]
		for k, v := range seq {
			out = append(out, btFromItem[K]{k, v})
			if limit >= 0 && len(out) >= limit {
				break
			}
		}
		return out
	}
	model := func(scan func(btFromItem[K], btree.ItemIteratorG[btFromItem[K]]), p K, limit int) []btFromItem[K] {
		var out []btFromItem[K]
		scan(btFromItem[K]{k: p}, func(it btFromItem[K]) bool {
			out = append(out, it)
			return limit < 0 || len(out) < limit
		})
		return out
	}
	if c.tr.Len() != c.m.Len() {
		t.Fatalf("Len %d, model %d", c.tr.Len(), c.m.Len())
	}
	for _, p := range c.pivots {
		for _, limit := range []int{-1, 1, 3, 40} {
			got, want := take(c.tr.Ascend(p), limit), model(c.m.AscendGreaterOrEqual, p, limit)
			if !slices.Equal(got, want) {
				t.Fatalf("Ascend(%v) limit %d: %d entries, model %d", p, limit, len(got), len(want))
			}
			got, want = take(c.tr.Descend(p), limit), model(c.m.DescendLessOrEqual, p, limit)
			if !slices.Equal(got, want) {
				t.Fatalf("Descend(%v) limit %d: %d entries, model %d", p, limit, len(got), len(want))
			}
		}
	}
	if err := c.tr.Err(); err != nil {
		t.Fatal(err)
	}
}

// btFromFill inserts n random keys, drawn by key from 3, 6, ..., 12n (so
// that k+1 and k-1 are absent), into tr and the model, and returns the
// pivots: every present key of a sample, its neighbours (absent), the
// minimum and maximum and what lies beyond them, and extra (tree specific
// bounds, such as the pool's splits).
func btFromFill[K any](t *testing.T, tr *BTree[K, uint64], less func(a, b K) bool, key func(uint64) K, n int, rng *rand.Rand, extra ...uint64) btFromCase[K] {
	t.Helper()
	m := btree.NewG(8, func(a, b btFromItem[K]) bool { return less(a.k, b.k) })
	for i := range n {
		k := 3 * (1 + rng.Uint64N(uint64(4*n)))
		if _, _, err := tr.ReplaceOrInsert(key(k), uint64(i)); err != nil {
			t.Fatal(err)
		}
		m.ReplaceOrInsert(btFromItem[K]{key(k), uint64(i)})
	}
	raw := []uint64{0, 1, 2, 12*uint64(n) + 4, 99999}
	raw = append(raw, extra...)
	if lo, ok := m.Min(); ok {
		hi, _ := m.Max()
		var mlo, mhi uint64
		for k := uint64(0); k <= 12*uint64(n)+3; k += 3 {
			if !less(key(k), lo.k) && !less(lo.k, key(k)) {
				mlo = k
			}
			if !less(key(k), hi.k) && !less(hi.k, key(k)) {
				mhi = k
			}
		}
		raw = append(raw, mlo-1, mlo, mlo+1, mhi-1, mhi, mhi+1)
	}
	for range 20 {
		k := 3 * (1 + rng.Uint64N(uint64(4*n+1)))
		raw = append(raw, k, k-1, k+1)
	}
	c := btFromCase[K]{tr: tr, m: m}
	for _, k := range raw {
		c.pivots = append(c.pivots, key(k))
	}
	return c
}

// btFromStrKey is the string form of k (below 10^5): ordered as k, of
// lengths around the 8 bytes kept inline, long ones stored in the key
// arena.
func btFromStrKey(k uint64) string {
	return fmt.Sprintf("%05d", k) + strings.Repeat("~", int(k%7))
}

// TestBTreeAscendDescendFrom: Ascend(from) and Descend(from) against
// google/btree's AscendGreaterOrEqual and DescendLessOrEqual on random
// trees of several sizes (the empty one included), integer and string
// keys, on every device and on pools, from pivots present and absent,
// below the minimum and above the maximum, run to the end and broken off.
func TestBTreeAscendDescendFrom(t *testing.T) {
	sizes := []int{0, 1, 9, 400, 3000}
	if testing.Short() {
		sizes = []int{0, 1, 9, 400}
	}
	u64 := func(k uint64) uint64 { return k }
	lessU := func(a, b uint64) bool { return a < b }
	lessS := func(a, b string) bool { return a < b }
	for _, d := range btDevices(t) {
		t.Run(btDevName(d), func(t *testing.T) {
			for _, n := range sizes {
				rng := rand.New(rand.NewPCG(uint64(n), 21))
				t.Run(fmt.Sprintf("u64/%d", n), func(t *testing.T) {
					tr, err := NewBTreeOrdered[uint64, uint64](d, btWithLeafEntries(8), btWithExtentLeaves(4), btWithFan(4))
					if err != nil {
						t.Fatal(err)
					}
					defer tr.Close()
					btFromCheck(t, btFromFill(t, tr, lessU, u64, n, rng))
				})
				t.Run(fmt.Sprintf("string/%d", n), func(t *testing.T) {
					tr, err := NewBTreeOrdered[string, uint64](d, btWithLeafEntries(6), btWithFan(4))
					if err != nil {
						t.Fatal(err)
					}
					defer tr.Close()
					c := btFromFill(t, tr, lessS, btFromStrKey, n, rng)
					c.pivots = append(c.pivots, "", "\x00", "~", "~~~~~~~~~~~~~~~~")
					btFromCheck(t, c)
				})
			}
		})
	}
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		for _, n := range sizes {
			rng := rand.New(rand.NewPCG(uint64(n), 22))
			// Splits in the keys' range and, with three devices, one
			// above it: the last shard stays empty.
			r := 12 * uint64(n)
			sp := []uint64{r / 2, 10*r + 10}[:len(p.Devices())-1]
			t.Run(fmt.Sprintf("u64/%d", n), func(t *testing.T) {
				tr, err := NewBTreeOrdered[uint64, uint64](p, WithSplits(sp...), btWithLeafEntries(8), btWithFan(4))
				if err != nil {
					t.Fatal(err)
				}
				defer tr.Close()
				btFromCheck(t, btFromFill(t, tr, lessU, u64, n, rng, sp...))
			})
			t.Run(fmt.Sprintf("string/%d", n), func(t *testing.T) {
				ss := []string{btFromStrKey(r / 2), "~"}[:len(p.Devices())-1] // "~": above every key
				tr, err := NewBTreeOrdered[string, uint64](p, WithSplits(ss...), btWithLeafEntries(6), btWithFan(4))
				if err != nil {
					t.Fatal(err)
				}
				defer tr.Close()
				c := btFromFill(t, tr, lessS, btFromStrKey, n, rng, r/2)
				c.pivots = append(c.pivots, "", "\x00", "~", "~~~~~~~~~~~~~~~~")
				btFromCheck(t, c)
			})
		}
	})
}
