package lineio

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCountLE checks CountLE under every variant against a plain count:
// every n, keys sorted in the unsigned and the signed order, probes at,
// between and beyond the keys, garbage past n.
func TestCountLE(t *testing.T) {
	forEachKind(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		for n := 1; n <= 64; n++ {
			for _, flip := range []uint64{0, 1 << 63} {
				var keys [64]uint64
				o := make([]uint64, n)
				for i := range o {
					o[i] = r.Uint64N(3 * uint64(n))
					if r.IntN(6) == 0 {
						o[i] = r.Uint64()
					}
				}
				slices.Sort(o) // order bits
				for i := range keys {
					if i < n {
						keys[i] = o[i] ^ flip
					} else {
						keys[i] = r.Uint64() // past n: ignored
					}
				}
				probes := []uint64{0, ^uint64(0)}
				for _, v := range o {
					probes = append(probes, v, v+1, v-1)
				}
				for _, ko := range probes {
					want := 0
					for _, v := range o[1:] {
						if v <= ko {
							want++
						}
					}
					if got := CountLE(&keys, n, ko, flip); got != want {
						t.Fatalf("CountLE(n=%d, flip=%x, ko=%#x) = %d, want %d", n, flip, ko, got, want)
					}
				}
			}
		}
	})
}
