package collections

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// BenchmarkMapTierPolicy measures the hot tier's admission and eviction
// policy, not its speed: a Map[uint64,uint64] on the host backend, made
// WithCapacity(n) and filled with n keys, its tier sized as the default
// is on a GPU (a fiftieth of the table's device bytes), warmed by 8n Gets
// of a Zipf stream (VMEM_BENCH_WARM: that many instead), then b.N more
// Gets of it. VMEM_BENCH_BUDGETS (fractions of the table's device bytes)
// runs larger tiers too, as WithHostCache makes them. It reports
//
//	hit%     the tier's hit rate over the timed Gets
//	ideal%   the hit rate of a tier that held exactly the most frequent
//	         keys, as many as this tier has entries (from the distribution)
//	admit%   admissions per 100 timed Gets (each takes a set's lock and
//	         a copy on a miss's path)
//	moved%   the hit rate over the n Gets after the hot set moves (the same
//	         ranks on other keys): how fast the tier learns
//
// The policy is the same code on every backend, so this runs without a GPU.
// Sizes: VMEM_BENCH_SIZES (default 1e6). Use -benchtime 4194304x.
func BenchmarkMapTierPolicy(b *testing.B) {
	tierPolicyEach(b, vmemtest.BenchSizes(b, 1e6), "", tierPolicyRun)
}

// tierPolicyEach runs a policy benchmark's rows on the host backend: every
// size, Zipf exponent 0.99 and 1.1, and budget (tierPolicyBudgets), named
// size, op (if any), exponent and a budget other than the default.
func tierPolicyEach(b *testing.B, sizes []int, op string, run func(b *testing.B, dev *vmem.Device, n int, s, frac float64)) {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	for _, n := range sizes {
		for _, s := range []float64{0.99, 1.1} {
			for _, f := range tierPolicyBudgets(b) {
				name := vmemtest.SizeName(n) + op + fmt.Sprintf("/zipf%g", s)
				if f != 1.0/tierDefaultDiv {
					name += fmt.Sprintf("/tier=%g", f)
				}
				b.Run(name, func(b *testing.B) { run(b, dev, n, s, f) })
			}
		}
	}
}

// tierPolicyBudgets is VMEM_BENCH_BUDGETS, or the default budget alone.
func tierPolicyBudgets(b *testing.B) []float64 {
	if os.Getenv("VMEM_BENCH_BUDGETS") == "" {
		return []float64{1.0 / tierDefaultDiv}
	}
	return tierBenchBudgets(b)
}

func tierPolicyRun(b *testing.B, dev *vmem.Device, n int, s float64, frac float64) {
	b.StopTimer()
	defer func(old uint32) { tierHitSample = old }(tierHitSample)
	tierHitSample = 1 // exact hit counts
	m0, err := NewMap[uint64, uint64](dev, WithCapacity(n), WithHostCache(0))
	if err != nil {
		b.Fatal(err)
	}
	budget := uint64(frac * float64(m0.Stats().DeviceBytes))
	m0.Close()
	m, err := NewMap[uint64, uint64](dev, WithCapacity(n), WithHostCache(int(budget)))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ks, vs := make([]uint64, n), make([]uint64, n)
	for i := range ks {
		ks[i], vs[i] = mapBenchKey(uint64(i)), uint64(i)
	}
	if err := m.PutBatch(ks, vs); err != nil {
		b.Fatal(err)
	}
	next := tierBenchSampler(n, fmt.Sprintf("zipf%g", s))(rand.New(rand.NewPCG(7, 8)))
	warm := 8 * n
	if w := tierBenchWarmCount(b); w > 0 {
		warm = w
	}
	for range warm {
		m.Get(ks[next()])
	}
	before := m.Stats().Cache
	b.StartTimer()
	for range b.N {
		m.Get(ks[next()])
	}
	b.StopTimer()
	after := m.Stats().Cache
	for range n {
		m.Get(ks[(int(next())+n/2)%n])
	}
	moved := m.Stats().Cache
	rate := func(a, b CacheStats) float64 {
		return 100 * float64(b.Hits-a.Hits) / float64(b.Hits-a.Hits+b.Misses-a.Misses)
	}
	b.ReportMetric(rate(before, after), "hit%")
	b.ReportMetric(100*tierZipfTop(n, s, after.Capacity), "ideal%")
	b.ReportMetric(100*float64(after.Admissions-before.Admissions)/float64(b.N), "admit%")
	b.ReportMetric(rate(after, moved), "moved%")
	b.ReportMetric(0, "ns/op") // the time is the host table's, not the policy's
}

// tierZipfTop is the probability that a Zipf(s) draw over n ranks (rank k
// with weight (k+1)^-s) falls among the c most frequent ranks.
func tierZipfTop(n int, s float64, c int) float64 {
	top, all := 0.0, 0.0
	for k := range n {
		w := math.Pow(float64(k+1), -s)
		all += w
		if k < c {
			top += w
		}
	}
	return top / all
}
