package collections

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// BenchmarkBTreeTierPolicy measures what the leaf tier can do for Ranges,
// not their speed: a BTree[uint64,uint64] of n keys on the host backend
// (the policy and the leaves' geometry are the same code on every
// backend), its tiers given the default budget of a GPU (a fiftieth of
// the tree's device bytes, half of it for leaves), warmed by n/10 Ranges
// of 100 entries from starts drawn from a Zipf stream (VMEM_BENCH_WARM:
// that many instead), then b.N more. VMEM_BENCH_BUDGETS (fractions of the
// device bytes) runs larger tiers too, as WithHostCache makes them. It
// reports
//
//	hit%         the leaf tier's hit rate over the timed Ranges
//	ideal%       the leaf hit rate of a tier holding exactly the leaves
//	             Ranges read most often, as many as this tier has slots
//	             (from the distribution and the tree's leaves)
//	range%       the timed Ranges that read no leaf from the device
//	rangeideal%  the same for that ideal tier
//	leaves/range the leaves a Range reads, on average over the stream
//
// A Range that reads any leaf from the device pays a round trip; range%
// against rangeideal% says how much of that a better policy could save
// at this budget, and rangeideal% what no policy can. Sizes:
// VMEM_BENCH_BTREE_SIZES (default 1e6). Use -benchtime 1000000x.
//
// VMEM_BENCH_WRITES=p,... adds rows in which p% of the operations (warm-up
// and timed) are writes: ReplaceOrInsert of a present key drawn from the
// same stream, a new value. Row writes<p> is the library's (a write takes
// its leaf's image from the tier and leaves the leaf there with its new
// bytes: btree_tier.go, "Writes and the leaf tier"); writes<p>-drop is a
// write that reads the device and drops the leaf's copy. They add
//
//	wtier%       the timed writes whose leaf the tier held (in writes<p>
//	             rows, on a GPU, a write that reads no device memory; in
//	             -drop rows the write reads the device all the same)
//
// and range%, hit% count the Ranges alone.
func BenchmarkBTreeTierPolicy(b *testing.B) {
	sizes := vmemtest.BenchSizesFrom(b, "VMEM_BENCH_BTREE_SIZES", 1e6)
	tierPolicyEach(b, sizes, "/Range100", func(b *testing.B, dev *vmem.Device, n int, s, frac float64) {
		btTierPolicyRun(b, dev, n, s, frac, 0)
	})
	for _, p := range mapBenchInts(b, "VMEM_BENCH_WRITES") {
		if p < 1 || p > 99 {
			b.Fatalf("VMEM_BENCH_WRITES: %d is not a percentage from 1 to 99", p)
		}
		for _, drop := range []bool{false, true} {
			op := fmt.Sprintf("/Range100/writes%d", p)
			if drop {
				op += "-drop"
			}
			tierPolicyEach(b, sizes, op, func(b *testing.B, dev *vmem.Device, n int, s, frac float64) {
				defer func(old bool) { btTierWrites = old }(btTierWrites)
				btTierWrites = !drop
				btTierPolicyRun(b, dev, n, s, frac, p)
			})
		}
	}
}

// btTierPolicyRun runs BenchmarkBTreeTierPolicy's row of n keys, Zipf
// exponent s, a tier of frac of the device bytes and writes% writes.
func btTierPolicyRun(b *testing.B, dev *vmem.Device, n int, s float64, frac float64, writes int) {
	b.StopTimer()
	defer func(old uint32) { tierHitSample = old }(tierHitSample)
	tierHitSample = 1 // exact hit counts
	sorted := make([]uint64, n)
	for i := range sorted {
		sorted[i] = mapBenchKey(uint64(i))
	}
	slices.Sort(sorted)
	vals := make([]uint64, n)
	build := func(opts ...BTreeOption) *BTree[uint64, uint64] {
		t, err := NewBTreeOrdered[uint64, uint64](dev, opts...)
		if err != nil {
			b.Fatal(err)
		}
		if err := t.BulkLoad(sorted, vals); err != nil {
			b.Fatal(err)
		}
		return t
	}
	t0 := build(WithHostCache(0))
	budget := uint64(frac * float64(t0.Stats().DeviceBytes))
	t0.Close()
	t := build(WithHostCache(int(budget)))
	defer t.Close()
	c := t.lv.hot
	if c == nil {
		b.Skip("no leaf tier")
	}
	// Leaf i of the tree, in key order, holds the entries from position
	// first[i] of sorted on.
	var first []int
	for nd, at := t.idx.first, 0; nd != btNil; nd = t.idx.nodes[nd].next {
		x := t.idx.nodes[nd]
		for i := range int(x.n) {
			first = append(first, at)
			at += int(x.cnts[i])
		}
	}
	leafOf := func(p int) int {
		i, ok := slices.BinarySearch(first, p)
		if !ok {
			i--
		}
		return i
	}
	// rank r starts its Range at sorted[pos(r)] and reads the leaves of
	// its first min(100, n-pos) entries.
	pos := func(r uint64) int {
		i, _ := slices.BinarySearch(sorted, mapBenchKey(r))
		return i
	}
	span := func(r uint64) (int, int) {
		p := pos(r)
		return leafOf(p), leafOf(min(p+100, n) - 1)
	}
	weight := make([]float64, n)
	var all float64
	for r := range weight {
		weight[r] = math.Pow(float64(r+1), -s)
		all += weight[r]
	}
	freq := make([]float64, len(first)) // probability that a Range reads leaf i
	var leafReads float64
	for r := range n {
		lo, hi := span(uint64(r))
		for i := lo; i <= hi; i++ {
			freq[i] += weight[r] / all
		}
		leafReads += float64(hi-lo+1) * weight[r] / all
	}
	order := make([]int, len(freq))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case freq[a] > freq[b]:
			return -1
		case freq[a] < freq[b]:
			return 1
		}
		return 0
	})
	slots := int(c.sets * tierWays)
	held := make([]bool, len(freq))
	var heldReads float64
	for _, i := range order[:min(slots, len(order))] {
		held[i] = true
		heldReads += freq[i]
	}
	var rangeIdeal float64
	for r := range n {
		lo, hi := span(uint64(r))
		in := true
		for i := lo; i <= hi && in; i++ {
			in = held[i]
		}
		if in {
			rangeIdeal += weight[r] / all
		}
	}

	next := tierBenchSampler(n, fmt.Sprintf("zipf%g", s))(rand.New(rand.NewPCG(7, 8)))
	wr := rand.New(rand.NewPCG(9, 10))
	var sink uint64
	var nw, nwHeld int // writes, and those whose leaf the tier held
	// one runs an operation: a Range, reporting whether it read no leaf
	// from the device (ok), or a write (isRange false).
	one := func() (ok, isRange bool) {
		if writes > 0 && wr.IntN(100) < writes {
			k := mapBenchKey(next())
			id, cnt := btLeafOf(t, k)
			if t.tierHolds(id, cnt) {
				nwHeld++
			}
			nw++
			if _, _, err := t.ReplaceOrInsert(k, uint64(nw)); err != nil {
				b.Fatal(err)
			}
			return false, false
		}
		p := pos(next())
		hi := ^uint64(0)
		if p+100 < n {
			hi = sorted[p+100]
		}
		m0 := c.total(cntMisses)
		for _, v := range t.Range(sorted[p], hi) {
			sink += v
		}
		return c.total(cntMisses) == m0, true
	}
	warm := n / 10
	if w := tierBenchWarmCount(b); w > 0 {
		warm = w
	}
	for range warm {
		one()
	}
	before := c.stats()
	clean, ranges := 0, 0
	nw, nwHeld = 0, 0
	b.StartTimer()
	for range b.N {
		ok, isRange := one()
		if isRange {
			ranges++
		}
		if ok {
			clean++
		}
	}
	b.StopTimer()
	after := c.stats()
	if nw > 0 {
		b.ReportMetric(100*float64(nwHeld)/float64(nw), "wtier%")
	}
	mapBenchSink += sink
	if hm := after.Hits - before.Hits + after.Misses - before.Misses; hm > 0 {
		b.ReportMetric(100*float64(after.Hits-before.Hits)/float64(hm), "hit%")
	}
	b.ReportMetric(100*heldReads/leafReads, "ideal%")
	b.ReportMetric(100*float64(clean)/float64(max(ranges, 1)), "range%")
	b.ReportMetric(100*rangeIdeal, "rangeideal%")
	b.ReportMetric(leafReads, "leaves/range")
	b.ReportMetric(0, "ns/op") // the time is the host tree's, not the policy's
}
