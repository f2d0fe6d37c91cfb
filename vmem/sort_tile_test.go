package vmem_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// sortVariants are the GPU sort's kernel variants, each checked against
// the same model.
type sortVariant struct {
	name string
	v    uint32
}

var sortVariants = []sortVariant{{"tile", vmem.SortTile}, {"shared-scan", vmem.SortSharedScan}, {"old", vmem.SortOld}}

// sortTileSizes are counts around the tile (2048 keys) and powers of two;
// the larger ones only for the main variant.
func sortTileSizes(variant uint32) []int {
	if testing.Short() {
		return []int{1, 2, 2047, 2049, 4097}
	}
	if variant != vmem.SortTile {
		return []int{1, 2, 3, 2047, 2048, 2049, 4095, 4096, 4097}
	}
	return []int{1, 2, 3, 2047, 2048, 2049, 4095, 4096, 4097, 1<<16 - 1, 1<<16 + 1, 100003}
}

// sortVariantsOn: the variants differ only where kernels run.
func sortVariantsOn(d *vmem.Device) []sortVariant {
	if !vmem.KernelsAvailable(d) {
		return sortVariants[:1]
	}
	return sortVariants
}

// sortTileKeys are key sets of every shape: random, few distinct digits in
// every byte, one differing byte only (the other passes are skipped), all
// equal but one, descending.
func sortTileKeys(rng *rand.Rand, n int) map[string][]uint64 {
	out := map[string][]uint64{}
	add := func(name string, f func(i int) uint64) {
		v := make([]uint64, n)
		for i := range v {
			v[i] = f(i)
		}
		out[name] = v
	}
	add("random", func(int) uint64 { return rng.Uint64() })
	add("few", func(int) uint64 { return uint64(rng.IntN(3)) * 0x0101010101010101 })
	add("byte6", func(int) uint64 { return uint64(rng.IntN(256)) << 48 })
	add("one-differs", func(i int) uint64 {
		if i == n/2 {
			return 0
		}
		return 1 << 63
	})
	add("descending", func(i int) uint64 { return uint64(n-i) << 20 })
	return out
}

func TestSortTileVariants(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		ran := kernelsOn(t, d)
		rng := rand.New(rand.NewPCG(5, 6))
		for _, sv := range sortVariantsOn(d) {
			t.Run(sv.name, func(t *testing.T) {
				defer vmem.SetSortVariant(sv.v)()
				for _, n := range sortTileSizes(sv.v) {
					for name, keys := range sortTileKeys(rng, n) {
						// As uint64, and as uint32 (both words folded).
						sortTileCheck(t, d, keys, fmt.Sprintf("uint64 n=%d %s", n, name))
						k32 := make([]uint32, n)
						for i, k := range keys {
							k32[i] = uint32(k>>32) ^ uint32(k)
						}
						sortTileCheck(t, d, k32, fmt.Sprintf("uint32 n=%d %s", n, name))
					}
				}
			})
		}
		ran()
	})
}

// TestSortByTileStable sorts records with many equal keys: each record's
// index shows whether equal keys kept their order.
func TestSortByTileStable(t *testing.T) {
	type rec struct {
		K uint64
		I uint32
		_ uint32
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		ran := kernelsOn(t, d)
		rng := rand.New(rand.NewPCG(8, 9))
		for _, sv := range sortVariantsOn(d) {
			t.Run(sv.name, func(t *testing.T) {
				defer vmem.SetSortVariant(sv.v)()
				for _, n := range sortTileSizes(sv.v) {
					for _, distinct := range []int{1, 2, 5, 300} {
						recs := make([]rec, n)
						for i := range recs {
							recs[i] = rec{K: uint64(rng.IntN(distinct)) * 0x0100000100010001, I: uint32(i)}
						}
						s := newFilled(t, d, recs)
						if err := vmem.SortBy(s, func(r *rec) *uint64 { return &r.K }); err != nil {
							t.Fatal(err)
						}
						want := slices.Clone(recs)
						slices.SortStableFunc(want, func(a, b rec) int {
							switch {
							case a.K < b.K:
								return -1
							case a.K > b.K:
								return 1
							}
							return 0
						})
						if got := readAll(t, s); !slices.Equal(got, want) {
							t.Fatalf("n=%d distinct=%d: %s", n, distinct, sortFirstDiff(got, want))
						}
						s.Close()
					}
				}
			})
		}
		ran()
	})
}

// sortTileCheck sorts keys in a Slice on d and compares with slices.Sort.
func sortTileCheck[T vmem.Number](t *testing.T, d *vmem.Device, keys []T, what string) {
	t.Helper()
	s := newFilled(t, d, keys)
	defer s.Close()
	if err := vmem.Sort(s); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if got := readAll(t, s); !slices.Equal(got, want) {
		t.Fatalf("%s: %s", what, sortFirstDiff(got, want))
	}
}

func sortFirstDiff[T comparable](got, want []T) string {
	for i := range want {
		if got[i] != want[i] {
			return fmt.Sprintf("element %d is %v, want %v", i, got[i], want[i])
		}
	}
	return "lengths differ"
}

// BenchmarkSortScratch allocates and frees, as every GPU Sort of n 64-bit
// keys does, the sort's scratch (two key arrays, the histograms): the part
// of a Sort's time that is not its kernels. Sizes as BenchmarkSliceSort.
func BenchmarkSortScratch(b *testing.B) {
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		for _, n := range kernBenchSizes(b, d) {
			tiles := (n + 2047) / 2048
			size := uint64(2*n*8 + 256*tiles*4 + (256*tiles+2047)/2048*4)
			b.Run(fmt.Sprintf("uint64/%s", vmemtest.SizeName(n)), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					blk, err := kdev(d).Alloc(block.Private, size, 256)
					if err != nil {
						b.Skip(err)
					}
					kdev(d).Free(blk)
				}
				perSecond(b, n, "keys/s")
			})
		}
	})
}
