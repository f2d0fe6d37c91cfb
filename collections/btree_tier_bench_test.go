package collections

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/btree"
	"github.com/govram/govram/internal/vmemtest"
)

// BenchmarkBTreeTier measures one Get, or one Range of 100 entries, at a
// time, with keys (Get) or start keys (Range100) drawn uniformly or from
// Zipf distributions, on trees of n random uint64 keys (BulkLoad of the
// sorted keys), in one run:
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
			b.Run(fmt.Sprintf("%s/Get/%s", vmemtest.SizeName(n), dist), func(b *testing.B) {
				btTierBenchImpls(b, btTierBenchBuild(b, n), stream, dist, false)
			})
			b.Run(fmt.Sprintf("%s/Range100/%s", vmemtest.SizeName(n), dist), func(b *testing.B) {
				btTierBenchImpls(b, btTierBenchBuild(b, n), stream, dist, true)
			})
		}
	}
}

// tierBenchScanParts reads VMEM_BENCH_SCAN_PARTS, a comma list of counts
// of parts (2 to 16) to read Ranges' windows in (btree_split.go): each adds
// split rows (named <impl>-split<k>), in the same run as the others.
func tierBenchScanParts(b *testing.B) []int {
	ks := mapBenchInts(b, "VMEM_BENCH_SCAN_PARTS")
	for _, k := range ks {
		if k < 2 || k > 16 {
			b.Fatalf("VMEM_BENCH_SCAN_PARTS: %d is not a count from 2 to 16", k)
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

func btTierBenchImpls(b *testing.B, s *btTierBenchSet, stream []uint32, dist string, scan bool) {
	n := len(s.sorted)
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
			var mu sync.Mutex
			warm := tierBenchWarmCount(b)
			if scan {
				warm /= 10 // a Range reads about a hundred entries
			}
			tierBenchWarm(b, n, dist, warm, func(r uint64) {
				var acc uint64
				switch {
				case !scan && impl == "gbtree":
					it, _ := s.g.Get(btItem{k: mapBenchKey(r)})
					acc = it.v
				case !scan:
					acc, _ = t.Get(mapBenchKey(r))
				default:
					p := int(s.pos[r])
					lo, hi := s.sorted[p], ^uint64(0)
					if p+100 < n {
						hi = s.sorted[p+100]
					}
					if impl == "gbtree" {
						s.g.AscendRange(btItem{k: lo}, btItem{k: hi}, func(it btItem) bool {
							acc += it.v
							return true
						})
					} else {
						for _, v := range t.Range(lo, hi) {
							acc += v
						}
					}
				}
				if acc == 1 {
					mu.Lock()
					mapBenchSink++
					mu.Unlock()
				}
			})
			var before CacheStats
			if t != nil {
				before = t.Stats().Cache
			}
			var acc uint64
			faults := benchFaults(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := stream[i&(tierStreamLen-1)]
				if !scan {
					k := mapBenchKey(uint64(r))
					if impl == "gbtree" {
						it, _ := s.g.Get(btItem{k: k})
						acc += it.v
					} else {
						v, _ := t.Get(k)
						acc += v
					}
					continue
				}
				p := int(s.pos[r])
				lo, want := s.sorted[p], min(100, n-p)
				hi := ^uint64(0)
				if p+100 < n {
					hi = s.sorted[p+100]
				}
				got := 0
				if impl == "gbtree" {
					s.g.AscendRange(btItem{k: lo}, btItem{k: hi}, func(it btItem) bool {
						acc += it.v
						got++
						return true
					})
				} else {
					for _, v := range t.Range(lo, hi) {
						acc += v
						got++
					}
				}
				if p+100 >= n {
					// The last key is not below hi = MaxUint64 only if it is
					// MaxUint64 itself; count what lies below.
					want = got
				}
				if got != want {
					b.Fatalf("Range from %d visited %d entries, want %d", lo, got, want)
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
// govram-split<k>: windows read in up to k parts (btree_split.go), the
// goroutines competing for par's workers.
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
