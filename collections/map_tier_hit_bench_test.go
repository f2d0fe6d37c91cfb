package collections

import (
	"fmt"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
)

// BenchmarkMapTierHit times Gets that the hot tier answers, one at a time,
// against the Go map in the same process: the map's tier is made large
// enough for every key of the timed stream and is filled with them before
// the timing, so every Get is a hit (hit% says so). With BenchmarkMapTier's
// rows of the same size (the tier's own mix of hits and misses, and the
// tier off: every Get a miss) it splits a skewed Get's time into the cost of
// a hit and that of a miss.
//
//	gomap, govram         Gets of independent keys: the CPU overlaps the
//	                      memory reads of consecutive Gets where it can
//	gomap-dep, govram-dep each key picked by the last value found: one
//	                      Get's latency, nothing overlapped
//
// Sizes: VMEM_BENCH_SIZES (uint64 keys, default 1e6) and
// VMEM_BENCH_STR_SIZES (URL-like string keys, default 1e5); the Go maps
// are BenchmarkMapTier's, shared within a process.
func BenchmarkMapTierHit(b *testing.B) {
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		for _, dist := range []string{"uniform", "zipf1.1"} {
			stream := tierBenchStream(n, dist)
			b.Run(fmt.Sprintf("u64/%s/%s", vmemtest.SizeName(n), dist), func(b *testing.B) {
				gm := tierBenchBuild(b, n).gomap
				b.StopTimer()
				m := tierBenchFill(b, n, WithHostCache(tierHitBudget(stream, 64)))
				defer m.Close()
				for range 2 {
					for _, x := range stream {
						m.Get(mapBenchKey(uint64(x)))
					}
				}
				b.StartTimer()
				tierHitRows(b, m.Stats, func(i int) uint64 { return gm[mapBenchKey(uint64(stream[i]))] },
					func(i int) uint64 { v, _ := m.Get(mapBenchKey(uint64(stream[i]))); return v })
			})
		}
	}
	for _, n := range tierBenchStrSizes(b) {
		for _, dist := range []string{"uniform", "zipf1.1"} {
			stream := tierBenchStream(n, dist)
			b.Run(fmt.Sprintf("str/%s/%s", vmemtest.SizeName(n), dist), func(b *testing.B) {
				s := tierBenchBuildStr(b, n)
				b.StopTimer()
				m := tierBenchFillStr(b, s.keys, WithHostCache(tierHitBudget(stream, 512)))
				defer m.Close()
				probes := tierBenchProbes(s, stream)
				for range 2 {
					for _, k := range probes {
						m.Get(k)
					}
				}
				b.StartTimer()
				tierHitRows(b, m.Stats, func(i int) uint64 { return s.gomap[probes[i]] },
					func(i int) uint64 { v, _ := m.Get(probes[i]); return v })
			})
		}
	}
}

// tierHitBudget is a tier budget of per bytes for each distinct key of
// stream: room enough that no set of the tier overflows.
func tierHitBudget(stream []uint32, per int) int {
	seen := make(map[uint32]struct{}, len(stream))
	for _, x := range stream {
		seen[x] = struct{}{}
	}
	return len(seen) * per
}

// tierHitRows runs the rows of BenchmarkMapTierHit: gomap and govram
// look up the key at position i of the timed stream.
func tierHitRows(b *testing.B, stats func() MapStats, gomap, govram func(i int) uint64) {
	for _, dep := range []bool{false, true} {
		for _, impl := range []string{"gomap", "govram"} {
			name := impl
			if dep {
				name += "-dep"
			}
			b.Run(name, func(b *testing.B) {
				look := govram
				if impl == "gomap" {
					look = gomap
				}
				before := stats().Cache
				var acc uint64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					j := i
					if dep {
						j += int(acc & 1) // the next key waits for this value
						acc = look(j & (tierStreamLen - 1))
					} else {
						acc += look(j & (tierStreamLen - 1))
					}
				}
				b.StopTimer()
				mapBenchSink += acc
				if impl == "govram" {
					tierBenchReport(b, before, stats())
				}
			})
		}
	}
}
