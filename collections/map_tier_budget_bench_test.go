package collections

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
)

// BenchmarkMapTierBudget measures one Get at a time with skewed keys as the
// hot tier's budget grows: how much host memory a skewed workload needs for
// its misses (each a VRAM round trip) to stop dominating. Rows, in one run:
//
//	gomap        Go's map[uint64]uint64
//	miss         every Get a miss (WithHostCache(0), uniform keys): the
//	             instance's round trip
//	tier=F       a Map whose tier holds F times the table's device bytes
//	             (WithHostCache); F=0.02 is the default budget
//
// Sizes: VMEM_BENCH_SIZES (default 1e6); budgets: VMEM_BENCH_BUDGETS, a
// comma-separated list of fractions (default 0.02,0.05,0.1). Each tier is
// warmed by VMEM_BENCH_WARM lookups first (tier_warm_bench_test.go).
func BenchmarkMapTierBudget(b *testing.B) {
	budgets := tierBenchBudgets(b)
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		for _, dist := range []string{"zipf0.99", "zipf1.1"} {
			stream := tierBenchStream(n, dist)
			b.Run(fmt.Sprintf("%s/%s", vmemtest.SizeName(n), dist), func(b *testing.B) {
				s := tierBenchBuild(b, n)
				b.Run("gomap", func(b *testing.B) { tierBudgetRun(b, s, nil, stream, dist) })
				b.Run("miss", func(b *testing.B) {
					tierBudgetRun(b, s, s.notier, tierBenchStream(n, "uniform"), "uniform")
				})
				dev := s.notier.Stats().DeviceBytes
				for _, f := range budgets {
					b.Run(fmt.Sprintf("tier=%g", f), func(b *testing.B) {
						b.StopTimer()
						m := tierBenchFill(b, n, WithHostCache(int(f*float64(dev))))
						defer m.Close()
						b.StartTimer()
						tierBudgetRun(b, s, m, stream, dist)
					})
				}
			})
		}
	}
}

// tierBudgetRun times Gets of the keys of stream on m (on s's Go map when m
// is nil), after warming m's tier with dist.
func tierBudgetRun(b *testing.B, s *tierBenchSet, m *Map[uint64, uint64], stream []uint32, dist string) {
	n := len(s.gomap)
	if m != nil && m.tier != nil {
		m.tier.invalidateAll()
	}
	tierBenchWarm(b, n, dist, tierBenchWarmCount(b), func(x uint64) {
		if m == nil {
			_ = s.gomap[mapBenchKey(x)]
		} else {
			m.Get(mapBenchKey(x))
		}
	})
	var before CacheStats
	if m != nil {
		before = m.Stats().Cache
	}
	var acc uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := mapBenchKey(uint64(stream[i&(tierStreamLen-1)]))
		if m == nil {
			acc += s.gomap[k]
		} else {
			v, _ := m.Get(k)
			acc += v
		}
	}
	b.StopTimer()
	mapBenchSink += acc
	if m != nil {
		tierBenchReport(b, before, m.Stats())
	}
}

func tierBenchBudgets(b *testing.B) []float64 {
	env := os.Getenv("VMEM_BENCH_BUDGETS")
	if env == "" {
		env = "0.02,0.05,0.1"
	}
	var out []float64
	for _, f := range strings.Split(env, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v < 0 { // 0: the tier off
			b.Fatalf("VMEM_BENCH_BUDGETS: %q is not a fraction", f)
		}
		out = append(out, v)
	}
	return out
}

// BenchmarkBTreeTierBudget is BenchmarkMapTierBudget for a BTree: Get and
// Range(100) from Zipf-drawn keys, google/btree in the same run, and the
// tree's tier at each budget of VMEM_BENCH_BUDGETS (fractions of the leaves'
// device bytes; 0.02 is the default). Sizes: VMEM_BENCH_BTREE_SIZES
// (default 1e6).
func BenchmarkBTreeTierBudget(b *testing.B) {
	budgets := tierBenchBudgets(b)
	for _, n := range vmemtest.BenchSizesFrom(b, "VMEM_BENCH_BTREE_SIZES", 1e6) {
		for _, dist := range []string{"zipf0.99", "zipf1.1"} {
			stream := tierBenchStream(n, dist)
			for _, op := range []string{"Get", "Range100"} {
				b.Run(fmt.Sprintf("%s/%s/%s", vmemtest.SizeName(n), op, dist), func(b *testing.B) {
					s := btTierBenchBuild(b, n)
					btTierBenchImpls(b, &btTierBenchSet{sorted: s.sorted, pos: s.pos, g: s.g}, stream, dist, op)
					dev := s.notier.Stats().DeviceBytes
					for _, f := range budgets {
						b.Run(fmt.Sprintf("tier=%g", f), func(b *testing.B) {
							b.StopTimer()
							t := btTierBenchTree(b, s, WithHostCache(int(f*float64(dev))))
							defer t.Close()
							b.StartTimer()
							btTierBenchImpls(b, &btTierBenchSet{sorted: s.sorted, pos: s.pos, t: t}, stream, dist, op)
						})
					}
				})
			}
		}
	}
}
