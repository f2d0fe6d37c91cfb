package collections

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// TestBTLowerSearch checks the integer searches (linear count and the
// branch-free binary search above btLinearMax) against sort order by
// brute force: every length up to 130, keys with duplicates, probes at,
// between and beyond the keys, unsigned and signed orders.
func TestBTLowerSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 0; n <= 130; n++ {
		for _, flip := range []uint64{0, btSign64} {
			a := make([]uint64, n)
			for i := range a {
				a[i] = r.Uint64N(3*uint64(n)+1) ^ flip // small range: duplicates
				if r.IntN(8) == 0 {
					a[i] = r.Uint64() // wide values, both signs
				}
			}
			slices.SortFunc(a, func(x, y uint64) int {
				x, y = x^flip, y^flip
				switch {
				case x < y:
					return -1
				case x > y:
					return 1
				}
				return 0
			})
			probes := []uint64{0, ^uint64(0), flip, flip - 1}
			for _, v := range a {
				probes = append(probes, v, v+1, v-1)
			}
			for range 20 {
				probes = append(probes, r.Uint64())
			}
			a32 := make([]uint32, n)
			flip32 := uint32(flip >> 32)
			for i, v := range a {
				a32[i] = uint32(v>>32) ^ 0 // high halves keep the order
			}
			for _, x := range probes {
				want := 0
				for _, v := range a {
					if v^flip < x^flip {
						want++
					}
				}
				if got := btLower64(a, x, flip); got != want {
					t.Fatalf("btLower64(n=%d, flip=%x, x=%#x) = %d, want %d", n, flip, x, got, want)
				}
				x32 := uint32(x >> 32)
				want32 := 0
				for _, v := range a32 {
					if v^flip32 < x32^flip32 {
						want32++
					}
				}
				if got := btLower32(a32, x32, flip32); got != want32 {
					t.Fatalf("btLower32(n=%d, flip=%x, x=%#x) = %d, want %d", n, flip32, x32, got, want32)
				}
			}
		}
	}
}

// TestBTRoute checks the index's route for 64-bit keys (a vector count
// over the node, lineio.CountLE) against btRouteOrdered, the search every
// other integer kind takes (itself checked by TestBTLowerSearch): every
// node size, both orders, garbage in the slots past n.
func TestBTRoute(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for n := 1; n <= btFan; n++ {
		for _, kk := range []btKeyKind{btKU64, btKI64} {
			var flip uint64
			if kk == btKI64 {
				flip = btSign64
			}
			x := btIndex[uint64]{kk: kk}
			var nd btNode[uint64]
			nd.n = int32(n)
			o := make([]uint64, n) // order bits
			for i := range o {
				o[i] = r.Uint64N(4 * uint64(n))
				if r.IntN(5) == 0 {
					o[i] = r.Uint64()
				}
			}
			slices.Sort(o)
			for i := range nd.keys {
				nd.keys[i] = r.Uint64() // past n: ignored
				if i < n {
					nd.keys[i] = o[i] ^ flip
				}
			}
			probes := []uint64{0, ^uint64(0), flip, flip - 1}
			for _, k := range nd.keys[:n] {
				probes = append(probes, k, k+1, k-1)
			}
			for _, k := range probes {
				want := 0
				if n > 1 {
					want = btRouteOrdered(kk, unsafe.Pointer(&nd.keys[1]), n-1, unsafe.Pointer(&k))
				}
				if got := x.route(&nd, k); got != want {
					t.Fatalf("n=%d kk=%d k=%#x: route = %d, btRouteOrdered = %d", n, kk, k, got, want)
				}
			}
		}
	}
}
