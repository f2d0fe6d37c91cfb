package collections

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/btree"
	"github.com/govram/govram/internal/vmemtest"
)

// BenchmarkBTreeTier measures one Get, or one Range of 100 entries, at a
// time, with keys (Get) or start keys (Range100) drawn uniformly or from
// Zipf distributions, on trees of n random uint64 keys (BulkLoad of the
// sorted keys); Put overwrites a key drawn the same way (ReplaceOrInsert,
// the value it has, so that the tree stays the same for the other rows),
// and Range100+Put10 makes every tenth operation of Range100 such a Put
// (reads mixed with writes: a write changes the leaf the tier holds). In
// one run:
//
//	gbtree   google/btree's BTreeG (degree 32) with the same entries
//	govram   BTree with its default hot tier (on the Vulkan backend)
//	notier   BTree with WithHostCache(0)
//
// and, for each k of VMEM_BENCH_SCAN_PARTS, govram-split<k> and
// notier-split<k>: the same trees with their windows' device reads cut
// into up to k parts (btree_split.go).
//
// A stream's rank r names the key mapBenchKey(r), so hot keys lie
// scattered over the tree's leaves. Sizes: 1e6 by default,
// VMEM_BENCH_BTREE_SIZES sets them. hit% is the hot tiers' hit rate
// (entries and leaves) over the timed loop; tierB/entry their bytes per
// entry.
// VMEM_BENCH_WARM=w warms each Get/Range row first (tier_warm_bench_test.go):
// the steady state of a long-running program.
func BenchmarkBTreeTier(b *testing.B) {
	for _, n := range vmemtest.BenchSizesFrom(b, "VMEM_BENCH_BTREE_SIZES", 1e6) {
		for _, dist := range []string{"uniform", "zipf0.99", "zipf1.1"} {
			stream := tierBenchStream(n, dist)
			for _, op := range []string{"Get", "Range100", "Put", "Range100+Put10"} {
				b.Run(fmt.Sprintf("%s/%s/%s", vmemtest.SizeName(n), op, dist), func(b *testing.B) {
					btTierBenchImpls(b, btTierBenchBuild(b, n), stream, dist, op)
				})
			}
		}
	}
}

// tierBenchScanParts reads VMEM_BENCH_SCAN_PARTS, a comma list of counts
// of parts (1 to 16; 1: never cut) to read Ranges' windows in
// (btree_split.go): each adds split rows (named <impl>-split<k>), in the
// same run as the others, whose rows keep the default.
func tierBenchScanParts(b *testing.B) []int {
	ks := mapBenchInts(b, "VMEM_BENCH_SCAN_PARTS")
	for _, k := range ks {
		if k < 1 || k > 16 {
			b.Fatalf("VMEM_BENCH_SCAN_PARTS: %d is not a count from 1 to 16", k)
		}
	}
	return ks
}

// tierBenchSplitRow reads the windows of row impl in parts, up to the k of
// its name's -split<k>, until the row ends; other rows are left as they
// are.
func tierBenchSplitRow(b *testing.B, impl string) {
	_, k, ok := strings.Cut(impl, "-split")
	if !ok {
		return
	}
	old := btScanParts
	btScanParts, _ = strconv.Atoi(k)
	b.Cleanup(func() { btScanParts = old })
}

type btTierBenchSet struct {
	sorted []uint64 // the keys, ascending
	pos    []uint32 // pos[r]: the index in sorted of mapBenchKey(r)
	g      *btree.BTreeG[btItem]
	t      *BTree[uint64, uint64]
	notier *BTree[uint64, uint64]
	vals   []uint64 // the values, in the order of sorted
}

// btTierBenchTree is a tree bulk loaded with s's keys and values.
func btTierBenchTree(b *testing.B, s *btTierBenchSet, opts ...BTreeOption) *BTree[uint64, uint64] {
	t, err := NewBTreeOrdered[uint64, uint64](mapBenchDevice(b), opts...)
	if err != nil {
		b.Fatal(err)
	}
	if err := t.BulkLoad(s.sorted, s.vals); err != nil {
		b.Fatal(err)
	}
	return t
}

var btTierBenchSets = map[int]*btTierBenchSet{}

func btTierBenchBuild(b *testing.B, n int) *btTierBenchSet {
	if s := btTierBenchSets[n]; s != nil {
		return s
	}
	b.StopTimer()
	defer b.StartTimer()
	s := &btTierBenchSet{sorted: make([]uint64, n), pos: make([]uint32, n)}
	for i := range s.sorted {
		s.sorted[i] = mapBenchKey(uint64(i))
	}
	slices.Sort(s.sorted)
	for r := range s.pos {
		i, _ := slices.BinarySearch(s.sorted, mapBenchKey(uint64(r)))
		s.pos[r] = uint32(i)
	}
	vals := make([]uint64, n)
	for i, k := range s.sorted {
		vals[i] = k ^ 1
	}
	s.g = btree.NewG(32, btItemLess)
	for i, k := range s.sorted {
		s.g.ReplaceOrInsert(btItem{k, vals[i]})
	}
	s.vals = vals
	s.t = btTierBenchTree(b, s)
	s.notier = btTierBenchTree(b, s, WithHostCache(0))
	btTierBenchSets[n] = s
	return s
}

// btTierBenchImpls runs operation op (Get, Range100, Put, Range100+Put10:
// BenchmarkBTreeTier) on each of s's trees, keys from stream.
func btTierBenchImpls(b *testing.B, s *btTierBenchSet, stream []uint32, dist, op string) {
	n := len(s.sorted)
	scan := strings.HasPrefix(op, "Range100")
	// every writes-th operation is a Put (0: none).
	writes := map[string]int{"Put": 1, "Range100+Put10": 10}[op]
	impls := []string{"gbtree", "govram", "notier"}
	for _, k := range tierBenchScanParts(b) {
		impls = append(impls, fmt.Sprintf("govram-split%d", k), fmt.Sprintf("notier-split%d", k))
	}
	for _, impl := range impls {
		t := s.t
		if strings.HasPrefix(impl, "notier") {
			t = s.notier
		}
		if (impl == "gbtree" && s.g == nil) || (impl != "gbtree" && t == nil) {
			continue // a set without this row (BenchmarkBTreeTierBudget)
		}
		b.Run(impl, func(b *testing.B) {
			tierBenchSplitRow(b, impl)
			if t != nil {
				t.etInvalidate()
				t.lv.invalidate()
			}
			// put overwrites key k with the value it has.
			put := func(k uint64) error {
				if impl == "gbtree" {
					s.g.ReplaceOrInsert(btItem{k, k ^ 1})
					return nil
				}
				_, _, err := t.ReplaceOrInsert(k, k^1)
				return err
			}
			// rng reads Range(100) from the p-th key and returns its sum
			// and the entries it visited.
			rng := func(p int) (acc uint64, got int) {
				lo, hi := s.sorted[p], ^uint64(0)
				if p+100 < n {
					hi = s.sorted[p+100]
				}
				if impl == "gbtree" {
					s.g.AscendRange(btItem{k: lo}, btItem{k: hi}, func(it btItem) bool {
						acc += it.v
						got++
						return true
					})
					return acc, got
				}
				for _, v := range t.Range(lo, hi) {
					acc += v
					got++
				}
				return acc, got
			}
			get := func(k uint64) uint64 {
				if impl == "gbtree" {
					it, _ := s.g.Get(btItem{k: k})
					return it.v
				}
				v, _ := t.Get(k)
				return v
			}
			// The warm-up's goroutines read under rw's read side and write
			// under its write side: writers exclude readers.
			var rw sync.RWMutex
			var warmOps atomic.Uint64
			warm := tierBenchWarmCount(b)
			if scan || writes == 1 {
				// A Range reads about a hundred entries; Puts exclude one
				// another, so a Put row's warm-up runs one at a time.
				warm /= 10
			}
			tierBenchWarm(b, n, dist, warm, func(r uint64) {
				if writes > 0 && warmOps.Add(1)%uint64(writes) == 0 {
					rw.Lock()
					if err := put(mapBenchKey(r)); err != nil {
						b.Error(err) // a warm-up goroutine: no Fatal here
					}
					rw.Unlock()
					return
				}
				rw.RLock()
				var acc uint64
				if scan {
					acc, _ = rng(int(s.pos[r]))
				} else {
					acc = get(mapBenchKey(r))
				}
				rw.RUnlock()
				if acc == 1 {
					rw.Lock()
					mapBenchSink++
					rw.Unlock()
				}
			})
			var before CacheStats
			var reads0 uint64
			if t != nil {
				before, reads0 = t.Stats().Cache, t.imgReads
			}
			var acc uint64
			faults := benchFaults(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := stream[i&(tierStreamLen-1)]
				switch {
				case writes > 0 && i%writes == writes-1:
					if err := put(mapBenchKey(uint64(r))); err != nil {
						b.Fatal(err)
					}
				case !scan:
					acc += get(mapBenchKey(uint64(r)))
				default:
					p := int(s.pos[r])
					a, got := rng(p)
					acc += a
					// The last key is not below hi = MaxUint64 only if it
					// is MaxUint64 itself: then count what lies below.
					if want := min(100, n-p); got != want && p+100 < n {
						b.Fatalf("Range from %d visited %d entries, want %d", s.sorted[p], got, want)
					}
				}
			}
			b.StopTimer()
			faults()
			mapBenchSink += acc
			if impl != "gbtree" {
				st := t.Stats()
				c := st.Cache
				if hm := (c.Hits - before.Hits) + (c.Misses - before.Misses); hm > 0 {
					b.ReportMetric(100*float64(c.Hits-before.Hits)/float64(hm), "hit%")
				}
				if st.Len > 0 {
					b.ReportMetric(float64(c.Bytes)/float64(st.Len), "tierB/entry")
				}
				if puts := b.N / max(writes, 1); writes > 0 && puts > 0 {
					// A Put whose leaf the tier holds reads none.
					b.ReportMetric(float64(t.imgReads-reads0)/float64(puts), "devreads/put")
				}
			}
		})
	}
}

// BenchmarkBTreeRangeParallel measures Range(100) from many goroutines at
// once, each drawing its start keys from its own stream (uniform or Zipf
// 1.1), on the tree with its default tier and on google/btree (read
// concurrently, which it allows). Reported: ranges a second in all.
//
// Sizes: VMEM_BENCH_BTREE_SIZES (default 1e6); goroutines:
// VMEM_BENCH_GOROUTINES (default 1,16). VMEM_BENCH_WARM warms each row
// first, as BenchmarkBTreeTier does. VMEM_BENCH_SCAN_PARTS adds rows
// govram-split<k>: windows read in up to k parts (btree_split.go; 1: never
// cut), the goroutines competing for par's workers.
func BenchmarkBTreeRangeParallel(b *testing.B) {
	gs := mapBenchInts(b, "VMEM_BENCH_GOROUTINES", 1, 16)
	for _, n := range vmemtest.BenchSizesFrom(b, "VMEM_BENCH_BTREE_SIZES", 1e6) {
		for _, dist := range []string{"uniform", "zipf1.1"} {
			for _, g := range gs {
				impls := []string{"gbtree", "govram"}
				for _, k := range tierBenchScanParts(b) {
					impls = append(impls, fmt.Sprintf("govram-split%d", k))
				}
				for _, impl := range impls {
					b.Run(fmt.Sprintf("%s/%s/g=%d/%s", vmemtest.SizeName(n), dist, g, impl), func(b *testing.B) {
						tierBenchSplitRow(b, impl)
						s := btTierBenchBuild(b, n)
						btRangeParallel(b, s, dist, g, impl == "gbtree")
					})
				}
			}
		}
	}
}

// btRangeParallel runs b.N Ranges of 100 entries over g goroutines.
func btRangeParallel(b *testing.B, s *btTierBenchSet, dist string, g int, gb bool) {
	n := len(s.sorted)
	one := func(r uint64) uint64 {
		p := int(s.pos[r])
		lo, hi := s.sorted[p], ^uint64(0)
		if p+100 < n {
			hi = s.sorted[p+100]
		}
		var acc uint64
		if gb {
			s.g.AscendRange(btItem{k: lo}, btItem{k: hi}, func(it btItem) bool {
				acc += it.v
				return true
			})
			return acc
		}
		for _, v := range s.t.Range(lo, hi) {
			acc += v
		}
		return acc
	}
	if !gb {
		s.t.etInvalidate()
		s.t.lv.invalidate()
	}
	tierBenchWarm(b, n, dist, tierBenchWarmCount(b)/10, func(r uint64) { one(r) })
	sampler := tierBenchSampler(n, dist)
	var wg sync.WaitGroup
	var mu sync.Mutex
	b.ResetTimer()
	for w := range g {
		count := b.N / g
		if w < b.N%g {
			count++
		}
		wg.Go(func() {
			next := sampler(rand.New(rand.NewPCG(5, uint64(w)+1)))
			var acc uint64
			for range count {
				acc += one(next())
			}
			mu.Lock()
			mapBenchSink += acc
			mu.Unlock()
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mranges/s")
}
