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
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		for _, s := range []float64{0.99, 1.1} {
			for _, f := range tierPolicyBudgets(b) {
				name := fmt.Sprintf("%s/zipf%g", vmemtest.SizeName(n), s)
				if f != 1.0/tierDefaultDiv {
					name += fmt.Sprintf("/tier=%g", f)
				}
				b.Run(name, func(b *testing.B) {
					tierPolicyRun(b, dev, n, s, f)
				})
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
	r := rand.New(rand.NewPCG(7, 8))
	var next func() uint64
	if s > 1 {
		next = rand.NewZipf(r, s, 1, uint64(n-1)).Uint64
	} else {
		z := newTierZipf(n, s)
		next = func() uint64 { return z.next(r) }
	}
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
