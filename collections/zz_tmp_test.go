package collections

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkZZStrPut(b *testing.B) {
	n := 200000
	m, err := NewMap[string, string](mapBenchDevice(b), WithCapacity(n))
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, n)
	vals := make([]string, n)
	for i := range n {
		keys[i] = fmt.Sprintf("https://example.com/item/%09d", i)
		vals[i] = fmt.Sprintf("v%08d-0", i)
	}
	if err := m.PutBatch(keys, vals); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"same", "new"} {
		for _, dist := range []string{"uniform", "zipf"} {
			b.Run(mode+"/"+dist, func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				z := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 1, uint64(n-1))
				idx := make([]int, 1<<16)
				pv := make([]string, len(idx))
				for i := range idx {
					if dist == "zipf" {
						idx[i] = int(z.Uint64())
					} else {
						idx[i] = r.IntN(n)
					}
					pv[i] = vals[idx[i]]
					if mode == "new" {
						pv[i] = fmt.Sprintf("v%08d-1", idx[i])
					}
				}
				for r := 0; r < 20; r++ {
					for _, j := range idx {
						m.Get(keys[j])
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					j := i & (len(idx) - 1)
					if err := m.Put(keys[idx[j]], pv[j]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
