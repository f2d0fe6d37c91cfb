package collections

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/vmemtest"
)

// BenchmarkMapMissPath takes a miss of the hot tier apart, uniform keys
// (almost every Get misses), on the maps BenchmarkMapTier builds:
//
//	notier        Get without a tier
//	tier          Get with the default tier
//	noprefetch    the tier without prefetching the table's control bytes
//	dense         the tier offering one miss in tierAdmitSample always
//	noadmit       the tier offering no miss (the lookup's own cost)
//	line1, line2  one, two adjacent random lines of the table's VRAM
//	              (mapped segments only): the device's share
//	keyonly       (string keys) fetching and hashing the key, no lookup
//
// Zipf 1.1 rows compare the hit rate of dense and default offers. Each
// row starts from an empty tier warmed by the same 2^21 Gets.
func BenchmarkMapMissPath(b *testing.B) {
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		s := tierBenchBuild(b, n)
		for _, dist := range []string{"uniform", "zipf1.1"} {
			stream := tierBenchStream(n, dist)
			for _, v := range []string{"notier", "tier", "noprefetch", "dense", "noadmit"} {
				if dist != "uniform" && v != "tier" && v != "dense" {
					continue
				}
				b.Run(fmt.Sprintf("u64/%s/%s/%s", vmemtest.SizeName(n), dist, v), func(b *testing.B) {
					m := s.m
					if v == "notier" {
						m = s.notier
					}
					defer missVariant(v)()
					// Every variant starts from an empty tier warmed by the
					// same Gets, and times keys no variant has seen before.
					if m.tier != nil {
						m.tier.invalidateAll()
					}
					var acc uint64
					for i := tierStreamLen / 2; i < tierStreamLen; i++ {
						x, _ := m.Get(mapBenchKey(uint64(stream[i])))
						acc += x
					}
					r := rand.New(rand.NewPCG(uint64(len(v)), uint64(b.N)))
					before := m.Stats().Cache
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						k := uint64(stream[i&(tierStreamLen/2-1)])
						if dist == "uniform" {
							k = r.Uint64N(uint64(n))
						}
						x, _ := m.Get(mapBenchKey(k))
						acc += x
					}
					b.StopTimer()
					mapBenchSink += acc
					tierBenchReport(b, before, m.Stats())
				})
			}
		}
		for _, lines := range []int{1, 2} {
			b.Run(fmt.Sprintf("u64/%s/line%d", vmemtest.SizeName(n), lines), func(b *testing.B) {
				missLines(b, s.notier.t, lines)
			})
		}
	}
	for _, n := range tierBenchStrSizes(b) {
		s := tierBenchBuildStr(b, n)
		stream := tierBenchStream(n, "uniform")
		for _, v := range []string{"keyonly", "notier", "tier", "noadmit"} {
			b.Run(fmt.Sprintf("str/%s/uniform/%s", vmemtest.SizeName(n), v), func(b *testing.B) {
				m := s.m
				if v == "notier" || v == "keyonly" {
					m = s.notier
				}
				defer missVariant(v)()
				var acc uint64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					k := s.keys[stream[i&(tierStreamLen-1)]]
					if v == "keyonly" {
						acc += m.hash(&k)
						continue
					}
					x, _ := m.Get(k)
					acc += x
				}
				b.StopTimer()
				mapBenchSink += acc
			})
		}
		b.Run(fmt.Sprintf("str/%s/line2", vmemtest.SizeName(n)), func(b *testing.B) {
			missLines(b, s.notier.t, 2)
		})
	}
}

// missVariant sets the tier's switches for variant v and returns their
// restore.
func missVariant(v string) func() {
	pf, sample, sparse := tierPrefetch, tierAdmitSample, tierAdmitSparse
	switch v {
	case "noprefetch":
		tierPrefetch = false
	case "dense":
		tierAdmitSparse = 1
	case "noadmit":
		tierAdmitSample = 1 << 24
	}
	return func() { tierPrefetch, tierAdmitSample, tierAdmitSparse = pf, sample, sparse }
}

// missLines reads lines adjacent lines at random buckets of t's first
// mapped segment.
func missLines(b *testing.B, t *mapTable, lines int) {
	sg := &t.segs[0]
	if sg.kind != mapWC {
		b.Skip("no mapped segment")
	}
	bucket := sg.slots.Size() / uint64(len(t.segs[0:1])) / max(sg.n, 1)
	r := rand.New(rand.NewPCG(3, 4))
	idx := make([]uint64, 1<<16)
	for i := range idx {
		idx[i] = r.Uint64N(sg.n-1) * bucket &^ 63
	}
	var buf [2 * 64]byte
	var acc uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lineio.LoadLines(buf[:lines*64], unsafe.Add(sg.base, uintptr(idx[i&(1<<16-1)])))
		acc += uint64(buf[0])
	}
	b.StopTimer()
	mapBenchSink += acc
}
