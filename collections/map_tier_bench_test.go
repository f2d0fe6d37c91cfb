package collections

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
)

// BenchmarkMapTier measures one Get or Put at a time, as a Go program uses
// a map, with keys drawn uniformly or from Zipf distributions, on maps
// made WithCapacity(n) and filled with n entries (PutBatch), in one run:
//
//	gomap    Go's map[K]V
//	govram   Map with its default hot tier (on the Vulkan backend)
//	notier   Map with WithHostCache(0)
//
// String keys have Get rows and Put rows (overwrites; direct: each Put
// stored at once), both with probe keys that are copies of the stored ones.
//
// Sizes: 1e6 by default, VMEM_BENCH_SIZES sets them (uint64 keys);
// VMEM_BENCH_STR_SIZES sets the string-key sizes (default 1e5). hit%
// is the tier's hit rate over the timed loop; tierB/entry the tier's bytes
// per entry.
// VMEM_BENCH_WARM=w warms each Get/Range row first (tier_warm_bench_test.go):
// the steady state of a long-running program.
func BenchmarkMapTier(b *testing.B) {
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		for _, dist := range []string{"uniform", "zipf0.99", "zipf1.1"} {
			stream := tierBenchStream(n, dist)
			b.Run(fmt.Sprintf("u64/%s/Get/%s", vmemtest.SizeName(n), dist), func(b *testing.B) {
				s := tierBenchBuild(b, n)
				tierBenchImpls(b, s, stream, dist, false)
			})
			b.Run(fmt.Sprintf("u64/%s/Put/%s", vmemtest.SizeName(n), dist), func(b *testing.B) {
				s := tierBenchBuild(b, n)
				tierBenchImpls(b, s, stream, dist, true)
			})
		}
	}
	for _, n := range tierBenchStrSizes(b) {
		for _, dist := range []string{"uniform", "zipf1.1"} {
			stream := tierBenchStream(n, dist)
			b.Run(fmt.Sprintf("str/%s/Get/%s", vmemtest.SizeName(n), dist), func(b *testing.B) {
				s := tierBenchBuildStr(b, n)
				tierBenchImplsStr(b, s, stream, dist)
			})
		}
		for _, dist := range []string{"uniform", "zipf1.1"} {
			stream := tierBenchStream(n, dist)
			b.Run(fmt.Sprintf("str/%s/Put/%s", vmemtest.SizeName(n), dist), func(b *testing.B) {
				s := tierBenchBuildStr(b, n)
				tierBenchPutStr(b, s, tierBenchProbes(s, stream))
			})
		}
	}
}

// tierBenchProbes returns the keys of a stream, each a copy of the stored
// key, as a key that comes from a request is: the Go map cannot answer by
// comparing the pointers of two strings, and the probe's bytes are not
// those the map's own reads brought into the caches.
func tierBenchProbes(s *tierBenchStrSet, stream []uint32) []string {
	p := make([]string, len(stream))
	for i, x := range stream {
		p[i] = strings.Clone(s.keys[x])
	}
	return p
}

// tierBenchPutStr times Puts that overwrite existing string keys, one at
// a time: the Go map, the Map (its Puts recorded and stored in batches on
// a GPU), and the Map storing each Put at once (direct: the path every
// string-key Put took before recorded Puts took strings). The recorded
// Puts are stored inside the timing.
func tierBenchPutStr(b *testing.B, s *tierBenchStrSet, probes []string) {
	for _, impl := range []string{"gomap", "govram", "direct"} {
		b.Run(impl, func(b *testing.B) {
			m := s.m // the same map, with and without recorded Puts
			if impl == "direct" {
				m.Len() // nothing left recorded
				m.cfg.noWB, m.wb.off = true, true
				defer func() { m.cfg.noWB, m.wb.off = false, false; m.wbInit() }()
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := probes[i&(tierStreamLen-1)]
				if impl == "gomap" {
					s.gomap[k] = uint64(i)
				} else if err := m.Put(k, uint64(i)); err != nil {
					b.Fatal(err)
				}
			}
			if impl != "gomap" {
				m.Len()
			}
			b.StopTimer()
		})
	}
}

// BenchmarkMapTierInsert: Puts of new keys into a map filled to the
// capacity it was made with.
//
// Sizes: VMEM_BENCH_INSERT_SIZES (default 1e6): each run builds its maps
// anew.
func BenchmarkMapTierInsert(b *testing.B) {
	sizes := []int{1e6}
	if env := os.Getenv("VMEM_BENCH_INSERT_SIZES"); env != "" {
		v, err := strconv.ParseFloat(env, 64)
		if err != nil {
			b.Fatal(err)
		}
		sizes = []int{int(v)}
	}
	for _, n := range sizes {
		b.Run(vmemtest.SizeName(n), func(b *testing.B) {
			for _, impl := range []string{"gomap", "govram"} {
				b.Run(impl, func(b *testing.B) {
					s := tierBenchFresh(b, n, impl)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						k := mapBenchKey(uint64(n + i))
						if s.gomap != nil {
							s.gomap[k] = uint64(i)
						} else if err := s.m.Put(k, uint64(i)); err != nil {
							b.Fatal(err)
						}
					}
					if s.m != nil {
						s.m.Len() // the recorded Puts are stored inside the timing
					}
					b.StopTimer()
					if s.m != nil {
						s.m.Close()
					}
				})
			}
		})
	}
}

const tierStreamLen = 1 << 22

// tierBenchStream draws key indexes in [0, n): uniform, or Zipf with
// exponent s, rank 0 the most frequent.
func tierBenchStream(n int, dist string) []uint32 {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]uint32, tierStreamLen)
	switch dist {
	case "uniform":
		for i := range out {
			out[i] = uint32(r.IntN(n))
		}
	case "zipf1.1":
		z := rand.NewZipf(r, 1.1, 1, uint64(n-1))
		for i := range out {
			out[i] = uint32(z.Uint64())
		}
	case "zipf0.99":
		z := newTierZipf(n, 0.99)
		for i := range out {
			out[i] = uint32(z.next(r))
		}
	default:
		panic(dist)
	}
	return out
}

// tierZipf draws Zipf ranks with exponent theta < 1 (math/rand's Zipf
// needs s > 1), by Gray et al.'s method (as YCSB does).
type tierZipf struct {
	n                   float64
	theta, alpha, zetan float64
	eta                 float64
}

func newTierZipf(n int, theta float64) *tierZipf {
	zeta := func(n int) float64 {
		// Exact for the first terms, Euler-Maclaurin for the tail.
		const exact = 100000
		s := 0.0
		for i := 1; i <= min(n, exact); i++ {
			s += math.Pow(float64(i), -theta)
		}
		if n > exact {
			a, bb := float64(exact), float64(n)
			s += (math.Pow(bb, 1-theta)-math.Pow(a, 1-theta))/(1-theta) +
				(math.Pow(bb, -theta)-math.Pow(a, -theta))/2
		}
		return s
	}
	z := &tierZipf{n: float64(n), theta: theta, alpha: 1 / (1 - theta), zetan: zeta(n)}
	z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta(2)/z.zetan)
	return z
}

func (z *tierZipf) next(r *rand.Rand) uint64 {
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < 1+math.Pow(0.5, z.theta) {
		return 1
	}
	return min(uint64(z.n*math.Pow(z.eta*u-z.eta+1, z.alpha)), uint64(z.n)-1)
}

type tierBenchSet struct {
	gomap  map[uint64]uint64
	m      *Map[uint64, uint64]
	notier *Map[uint64, uint64]
}

var tierBenchSets = map[int]*tierBenchSet{}

func tierBenchFill(b *testing.B, n int, opts ...MapOption) *Map[uint64, uint64] {
	m, err := NewMap[uint64, uint64](mapBenchDevice(b), append([]MapOption{WithCapacity(n)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	const batch = 1 << 20
	ks, vs := make([]uint64, batch), make([]uint64, batch)
	for lo := 0; lo < n; lo += batch {
		k := min(batch, n-lo)
		for i := range k {
			ks[i], vs[i] = mapBenchKey(uint64(lo+i)), uint64(lo+i)
		}
		if err := m.PutBatch(ks[:k], vs[:k]); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

func tierBenchBuild(b *testing.B, n int) *tierBenchSet {
	if s := tierBenchSets[n]; s != nil {
		return s
	}
	s := &tierBenchSet{gomap: make(map[uint64]uint64, n)}
	for i := range uint64(n) {
		s.gomap[mapBenchKey(i)] = i
	}
	s.m = tierBenchFill(b, n)
	s.notier = tierBenchFill(b, n, WithHostCache(0))
	tierBenchSets[n] = s
	return s
}

// tierBenchFresh is a map filled to its capacity, for one benchmark that
// writes new keys into it.
func tierBenchFresh(b *testing.B, n int, impl string) *tierBenchSet {
	b.StopTimer()
	defer b.StartTimer()
	if impl == "gomap" {
		s := &tierBenchSet{gomap: make(map[uint64]uint64, n)}
		for i := range uint64(n) {
			s.gomap[mapBenchKey(i)] = i
		}
		return s
	}
	return &tierBenchSet{m: tierBenchFill(b, n)}
}

func tierBenchImpls(b *testing.B, s *tierBenchSet, stream []uint32, dist string, put bool) {
	n := len(s.gomap)
	for _, impl := range []string{"gomap", "govram", "notier"} {
		b.Run(impl, func(b *testing.B) {
			m := s.m
			if impl == "notier" {
				m = s.notier
			}
			if !put {
				if m != nil && m.tier != nil {
					m.tier.invalidateAll()
				}
				var mu sync.Mutex // Go's map takes concurrent reads; the sink does not
				tierBenchWarm(b, n, dist, tierBenchWarmCount(b), func(x uint64) {
					k := mapBenchKey(x)
					var v uint64
					if impl == "gomap" {
						v = s.gomap[k]
					} else {
						v, _ = m.Get(k)
					}
					if v == ^uint64(0) {
						mu.Lock()
						mapBenchSink++
						mu.Unlock()
					}
				})
			}
			var before CacheStats
			if impl != "gomap" {
				m.Len()
				before = m.Stats().Cache
			}
			var acc uint64
			faults := benchFaults(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := mapBenchKey(uint64(stream[i&(tierStreamLen-1)]))
				switch {
				case impl == "gomap" && put:
					s.gomap[k] = uint64(i)
				case impl == "gomap":
					acc += s.gomap[k]
				case put:
					if err := m.Put(k, uint64(i)); err != nil {
						b.Fatal(err)
					}
				default:
					v, _ := m.Get(k)
					acc += v
				}
			}
			if put && impl != "gomap" {
				m.Len() // the recorded Puts are stored inside the timing
			}
			b.StopTimer()
			faults()
			mapBenchSink += acc
			if impl != "gomap" {
				tierBenchReport(b, before, m.Stats())
			}
		})
	}
}

func tierBenchReport(b *testing.B, before CacheStats, st MapStats) {
	c := st.Cache
	if hm := (c.Hits - before.Hits) + (c.Misses - before.Misses); hm > 0 {
		b.ReportMetric(100*float64(c.Hits-before.Hits)/float64(hm), "hit%")
	}
	if st.Len > 0 {
		b.ReportMetric(float64(c.Bytes)/float64(st.Len), "tierB/entry")
	}
}

func tierBenchStrSizes(b *testing.B) []int {
	env := os.Getenv("VMEM_BENCH_STR_SIZES")
	if env == "" {
		return []int{1e5}
	}
	v, err := strconv.ParseFloat(env, 64)
	if err != nil {
		b.Fatalf("VMEM_BENCH_STR_SIZES: %v", err)
	}
	return []int{int(v)}
}

// tierBenchURL is the i-th URL-like key (40 to 90 bytes).
func tierBenchURL(i int) string {
	return fmt.Sprintf("https://www.example%d.com/articles/%d/section-%x/page.html", i%9973, i, uint32(i)*2654435761)
}

type tierBenchStrSet struct {
	keys   []string
	gomap  map[string]uint64
	m      *Map[string, uint64]
	notier *Map[string, uint64]
}

var tierBenchStrSets = map[int]*tierBenchStrSet{}

func tierBenchBuildStr(b *testing.B, n int) *tierBenchStrSet {
	if s := tierBenchStrSets[n]; s != nil {
		return s
	}
	s := &tierBenchStrSet{keys: make([]string, n), gomap: make(map[string]uint64, n)}
	for i := range s.keys {
		s.keys[i] = tierBenchURL(i)
		s.gomap[s.keys[i]] = uint64(i)
	}
	s.m, s.notier = tierBenchFillStr(b, s.keys), tierBenchFillStr(b, s.keys, WithHostCache(0))

	tierBenchStrSets[n] = s
	return s
}

// tierBenchFillStr returns a map made WithCapacity(len(keys)) (and opts)
// holding keys[i] with value i.
func tierBenchFillStr(b *testing.B, keys []string, opts ...MapOption) *Map[string, uint64] {
	m, err := NewMap[string, uint64](mapBenchDevice(b), append([]MapOption{WithCapacity(len(keys))}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	vs := make([]uint64, len(keys))
	for i := range vs {
		vs[i] = uint64(i)
	}
	if err := m.putMany(keys, vs); err != nil {
		b.Fatal(err)
	}
	return m
}

func tierBenchImplsStr(b *testing.B, s *tierBenchStrSet, stream []uint32, dist string) {
	probes := tierBenchProbes(s, stream)
	for _, impl := range []string{"gomap", "govram", "notier"} {
		b.Run(impl, func(b *testing.B) {
			m := s.m
			if impl == "notier" {
				m = s.notier
			}
			if m.tier != nil {
				m.tier.invalidateAll()
			}
			var mu sync.Mutex
			tierBenchWarm(b, len(s.keys), dist, tierBenchWarmCount(b), func(x uint64) {
				var v uint64
				if impl == "gomap" {
					v = s.gomap[s.keys[x]]
				} else {
					v, _ = m.Get(s.keys[x])
				}
				if v == ^uint64(0) {
					mu.Lock()
					mapBenchSink++
					mu.Unlock()
				}
			})
			var before CacheStats
			if impl != "gomap" {
				before = m.Stats().Cache
			}
			var acc uint64
			faults := benchFaults(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := probes[i&(tierStreamLen-1)]
				if impl == "gomap" {
					acc += s.gomap[k]
				} else {
					v, _ := m.Get(k)
					acc += v
				}
			}
			b.StopTimer()
			faults()
			mapBenchSink += acc
			if impl != "gomap" {
				tierBenchReport(b, before, m.Stats())
			}
		})
	}
}
