package collections

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/vmemtest"
)

// BenchmarkMapMissPath takes a miss of the hot tier apart, uniform keys
// (almost every Get misses), on the maps BenchmarkMapTier builds:
//
//	notier        Get without a tier
//	ctrlfirst     Get without a tier, its VRAM load waiting for the control
//	              bytes (mapCtrlFirst) instead of issued under the branch
//	              the CPU predicts
//	eager         Get without a tier, every bucket it probes loaded before
//	              its control bytes arrive (mapEagerLoad)
//	...-dep       the same, each key picked by the last Get's value: one
//	              miss's latency, nothing overlapped, to set beside chain1
//	              or chain2
//	tier          Get with the default tier
//	dense         offers never sparser while rejected (tierAdmitSparse 1)
//	nodoor        keys seen once offered too (tierAdmitMin 1)
//	s4, s16       one miss in 4, in 16 offered (one in 32 while offers fail)
//	noadmit       the tier offering no miss (the lookup's own cost)
//	line1, line2  one, two adjacent random lines of the table's VRAM
//	              (mapped segments only), independent of each other
//	chain1, chain2  the same, each address depending on the last load
//	keyonly       (string keys) fetching and hashing the key, no lookup
//	zipf1.1/tier-ctrlfirst, -eager  Zipf Gets through the tier with
//	              the VRAM loads of ctrlfirst, eager
//	zipf1.1/tier-frozen  the warm tier offered no miss while timed: what
//	              offers and admissions add to the mixed stream
//
// Zipf rows compare the hit rates of the admission settings. Each row
// starts from an empty tier warmed by the same 2^21 Gets (or, with
// VMEM_BENCH_WARM, by that many Gets from all cores: tier_warm_bench_test.go).
func BenchmarkMapMissPath(b *testing.B) {
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		s := tierBenchBuild(b, n)
		for _, dist := range []string{"uniform", "zipf1.1", "zipf0.99"} {
			stream := tierBenchStream(n, dist)
			vs := []string{"tier", "dense", "nodoor", "s4", "s16"}
			if dist == "uniform" {
				vs = append(vs, "noadmit", "notier", "ctrlfirst", "notier-dep", "ctrlfirst-dep", "eager-dep")
			} else if dist == "zipf1.1" {
				vs = append(vs, "tier-ctrlfirst", "tier-frozen")
			}
			for _, v := range vs {
				b.Run(fmt.Sprintf("u64/%s/%s/%s", vmemtest.SizeName(n), dist, v), func(b *testing.B) {
					m := s.m
					if !strings.HasPrefix(v, "tier") && v != "noadmit" && !missAdmit(v) {
						m = s.notier
					}
					defer missVariant(v)()
					missRow(b, m.tier, m.Stats, n, dist, stream, uint64(len(v)), strings.HasSuffix(v, "-dep"), func(x uint64) uint64 {
						v, _ := m.Get(mapBenchKey(x))
						return v
					})
				})
			}
		}
		for _, kind := range []string{"line", "chain"} {
			for _, lines := range []int{1, 2} {
				b.Run(fmt.Sprintf("u64/%s/%s%d", vmemtest.SizeName(n), kind, lines), func(b *testing.B) {
					missLines(b, s.notier.t, lines, kind == "chain")
				})
			}
		}
		missChainRows(b, "u64/"+vmemtest.SizeName(n), s.notier)
	}
	for _, n := range tierBenchStrSizes(b) {
		s := tierBenchBuildStr(b, n)
		stream := tierBenchStream(n, "uniform")
		for _, v := range []string{"keyonly", "notier", "ctrlfirst", "notier-dep", "ctrlfirst-dep", "eager-dep", "tier", "noadmit"} {
			b.Run(fmt.Sprintf("str/%s/uniform/%s", vmemtest.SizeName(n), v), func(b *testing.B) {
				m := s.notier
				if v == "tier" || v == "noadmit" {
					m = s.m
				}
				defer missVariant(v)()
				dep := strings.HasSuffix(v, "-dep")
				var acc uint64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					j := i
					if dep {
						j += int(acc & 1) // the next key waits for this Get's value
					}
					k := s.keys[stream[j&(tierStreamLen-1)]]
					if v == "keyonly" {
						acc += m.hash(&k)
						continue
					}
					x, _ := m.Get(k)
					if dep {
						acc = x
					} else {
						acc += x
					}
				}
				b.StopTimer()
				mapBenchSink += acc
			})
		}
		// Zipf 1.1 keys through the tier, with the VRAM load issued
		// under the predicted branch (tier) or as the other variants do:
		// a one-record bucket is often not the key's, and a load issued
		// for it may hold up the one that is.
		zs := tierBenchStream(n, "zipf1.1")
		for _, v := range []string{"tier", "tier-ctrlfirst", "tier-eager"} {
			b.Run(fmt.Sprintf("str/%s/zipf1.1/%s", vmemtest.SizeName(n), v), func(b *testing.B) {
				defer missVariant(v)()
				missRow(b, s.m.tier, s.m.Stats, n, "zipf1.1", zs, 0, false, func(x uint64) uint64 {
					v, _ := s.m.Get(s.keys[x])
					return v
				})
			})
		}
		for _, kind := range []string{"line", "chain"} {
			b.Run(fmt.Sprintf("str/%s/%s2", vmemtest.SizeName(n), kind), func(b *testing.B) {
				missLines(b, s.notier.t, 2, kind == "chain")
			})
		}
		missChainRows(b, "str/"+vmemtest.SizeName(n), s.notier)
	}
}

// missRow times one row of BenchmarkMapMissPath: every variant starts
// from an empty tier (c; nil: none) warmed by the same Gets, and times key
// indexes no variant has seen before: uniform draws (seeded by seed), or
// the first half of stream, the warm-up having read its second half
// (VMEM_BENCH_WARM Gets from all cores instead, if set). get looks up key
// index x and returns its value; stats is the map's.
func missRow(b *testing.B, c *tierCore, stats func() MapStats, n int, dist string, stream []uint32, seed uint64, dep bool, get func(x uint64) uint64) {
	if c != nil {
		c.invalidateAll()
	}
	var acc uint64
	if w := tierBenchWarmCount(b); w > 0 {
		var mu sync.Mutex
		tierBenchWarm(b, n, dist, w, func(x uint64) {
			if get(x) == ^uint64(0) {
				mu.Lock()
				mapBenchSink++
				mu.Unlock()
			}
		})
	} else {
		for i := tierStreamLen / 2; i < tierStreamLen; i++ {
			acc += get(uint64(stream[i]))
		}
	}
	if missFreeze {
		tierAdmitSample = 1 << 24 // restored by missVariant's restore
	}
	r := rand.New(rand.NewPCG(seed, uint64(b.N)))
	before := stats().Cache
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := uint64(stream[i&(tierStreamLen/2-1)])
		if dist == "uniform" {
			k = r.Uint64N(uint64(n))
		}
		if dep {
			k += acc & missZero // the next key waits for this Get's value
		}
		acc += get(k)
	}
	b.StopTimer()
	mapBenchSink += acc
	tierBenchReport(b, before, stats())
}

// missAdmit reports whether variant v sets the tier's admission (and
// so runs on the tiered map).
func missAdmit(v string) bool {
	switch v {
	case "dense", "nodoor", "s4", "s16":
		return true
	}
	return false
}

// missVariant sets the tier's switches for variant v and returns their
// restore.
func missVariant(v string) func() {
	sample, sparse, least := tierAdmitSample, tierAdmitSparse, tierAdmitMin
	switch v {
	case "dense":
		tierAdmitSparse = 1
	case "nodoor":
		tierAdmitMin = 1
	case "s4":
		tierAdmitSample, tierAdmitSparse = 4, 8
	case "s16":
		tierAdmitSample, tierAdmitSparse = 16, 2
	case "noadmit":
		tierAdmitSample = 1 << 24
	}
	switch {
	case strings.Contains(v, "ctrlfirst"):
		mapCtrlFirst = true
	case strings.Contains(v, "eager"):
		mapEagerLoad = true
	case strings.Contains(v, "frozen"):
		missFreeze = true
	}
	return func() {
		tierAdmitSample, tierAdmitSparse, tierAdmitMin = sample, sparse, least
		mapCtrlFirst, mapEagerLoad = false, false
		missFreeze = false
	}
}

// missFreeze makes missRow offer no miss to the tier once it is warm: the
// timed Gets then pay no admission work, from the same tier.
var missFreeze bool

// missZero is 0, read at run time: a load's result times it makes the
// next address depend on the load.
var missZero uint64

// missLines reads lines adjacent lines at random buckets of t's first
// mapped segment; chained, each address depends on the last load.
func missLines(b *testing.B, t *mapTable, lines int, chain bool) {
	sg := &t.segs[0]
	if sg.Kind != access.WC {
		b.Skip("no mapped segment")
	}
	bucket := sg.slots.Size() / uint64(len(t.segs[0:1])) / max(sg.n, 1)
	r := rand.New(rand.NewPCG(3, 4))
	idx := make([]uint64, 1<<16)
	for i := range idx {
		idx[i] = r.Uint64N(sg.n-1) * bucket &^ 63
	}
	var buf [2 * 64]byte
	var acc, dep uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lineio.LoadLines(buf[:lines*64], unsafe.Add(sg.Base, uintptr(idx[i&(1<<16-1)]+dep)))
		acc += uint64(buf[0])
		if chain {
			dep = uint64(buf[0]) * missZero
		}
	}
	b.StopTimer()
	mapBenchSink += acc
}

// missChainRows runs m's chainall and chainctrl rows (named for the lines
// of a bucket: chainall1, chainctrl2) under prefix.
func missChainRows[K comparable, V any](b *testing.B, prefix string, m *Map[K, V]) {
	for _, kind := range []string{"chainall", "chainctrl"} {
		b.Run(fmt.Sprintf("%s/%s%d", prefix, kind, m.r.lines), func(b *testing.B) {
			missChainAll(b, m, kind == "chainctrl")
		})
	}
}

// missChainAll reads one random bucket (its line or two) of m's whole table per step
// (all segments, the bucket drawn afresh each step, as a Get's hash
// would), each address depending on the last load; with ctrl, each step
// also reads the bucket's control bytes, as a Get does beside its line:
// what the memory system charges a lone miss, without the map's code.
func missChainAll[K comparable, V any](b *testing.B, m *Map[K, V], ctrl bool) {
	t := m.t
	for i := range t.segs {
		if t.segs[i].Kind != access.WC {
			b.Skip("no mapped segment")
		}
	}
	if m.r.lines > 2 {
		b.Skip("records of more than two lines")
	}
	var buf [2]mapLine
	var acc, dep uint64
	x := uint64(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		bk := (x >> 11) % t.nb
		bk += dep
		sg := &t.segs[bk>>t.shift]
		j := bk & t.mask
		m.loadBucketWC(&buf, sg, j)
		if ctrl {
			acc += mapGroup(sg.fp, j, m.r.p)
		}
		acc += uint64(buf[0].b[0])
		dep = uint64(buf[0].b[0]) * missZero
	}
	b.StopTimer()
	mapBenchSink += acc
}

// BenchmarkMapLineLimit measures what the machine gives lookups that read
// VRAM from the CPU, with no map code in the way: random lines of every
// mapped segment of the BenchmarkMapTier table (tier off), read from g
// goroutines at once (Mlines/s in all):
//
//	chain  each goroutine's next address depends on its last load: what
//	       one Get at a time does, however many goroutines call it
//	indep  each goroutine reads 8 independent lines per step: what a
//	       combining of single Gets into overlapped loads could reach at
//	       best
//
// Set VMEM_BENCH_SIZES as for BenchmarkMapTier (the 1e8 table spans the
// bytes of the map).
func BenchmarkMapLineLimit(b *testing.B) {
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		// The table BenchmarkMapTier builds, without building its Go map
		// where that benchmark has not run.
		var t *mapTable
		if s := tierBenchSets[n]; s != nil {
			t = s.notier.t
		} else {
			m := tierBenchFill(b, n, WithHostCache(0))
			defer m.Close()
			t = m.t
		}
		var addrs []unsafe.Pointer // one random line per entry of addrs, over all segments
		r := rand.New(rand.NewPCG(5, 6))
		for range 1 << 20 {
			sg := &t.segs[r.IntN(len(t.segs))]
			if sg.Kind != access.WC {
				b.Skip("no mapped segment")
			}
			addrs = append(addrs, unsafe.Add(sg.Base, r.Uint64N(sg.slots.Size()/64)*64))
		}
		for _, kind := range []string{"chain", "indep"} {
			for _, g := range []int{1, 4, 16, 64} {
				b.Run(fmt.Sprintf("%s/%s/g=%d", vmemtest.SizeName(n), kind, g), func(b *testing.B) {
					per := (b.N + g - 1) / g
					var wg sync.WaitGroup
					b.ResetTimer()
					for w := range g {
						wg.Go(func() {
							var buf [8][64]byte
							var acc uint64
							i := uint64(w) * 7919
							for range per / 8 {
								for j := range 8 {
									// chain: the next index depends on the line just read.
									lineio.Load(&buf[j], addrs[i&(1<<20-1)])
									if kind == "chain" {
										i += 1 + uint64(buf[j][0])*missZero
									} else {
										i++
									}
								}
								acc += uint64(buf[0][1] + buf[7][1])
							}
							mapSinkAdd(acc)
						})
					}
					wg.Wait()
					b.StopTimer()
					b.ReportMetric(float64(per/8*8*g)/b.Elapsed().Seconds()/1e6, "Mlines/s")
				})
			}
		}
	}
}
