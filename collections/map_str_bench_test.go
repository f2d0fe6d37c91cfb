package collections

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
)

// BenchmarkMapStrGetBatch: batch lookups in a Map[string, uint64] of
// URL-like keys (40 to 90 bytes; VMEM_BENCH_STR_SIZES entries, default
// 1e5), a batch of VMEM_BENCH_BATCH random hits (default 1e6), against:
//
//	gpu-batch  GetBatch (string key images probed by a kernel on a GPU;
//	           VMEM_BENCH_PARTS=1,2,4 runs it once per count of parts a
//	           batch is cut into, VMEM_BENCH_STR_ROUNDS=65536,262144 once
//	           per most keys of a round, and each part of the one by each
//	           of the other)
//	cpu-batch  the CPU batch path GetBatch takes without kernels
//	gomap-1    a Go map, one goroutine
//	gomap-16   a Go map, 16 goroutines
//
// and onebuf/gpu-batch, onebuf/gomap-16: the same keys copied, in batch
// order, into one buffer, as keys parsed from a request arrive (the
// others pick each key's bytes from wherever the map's 10^7 or more
// strings lie in the heap).
//
// Metric Mkeys/s: keys answered per second, keys in Go memory to answers
// in Go memory.
func BenchmarkMapStrGetBatch(b *testing.B) {
	batch := mapGPUBenchBatch()
	for _, n := range tierBenchStrSizes(b) {
		b.Run(vmemtest.SizeName(n), func(b *testing.B) {
			keys := make([]string, n)
			gomap := make(map[string]uint64, n)
			for i := range keys {
				keys[i] = tierBenchURL(i)
				gomap[keys[i]] = uint64(i)
			}
			m := tierBenchFillStr(b, keys)
			defer m.Close()
			r := mapRand(77)
			ks := make([]string, batch)
			for i := range ks {
				ks[i] = keys[r.next()%uint64(n)]
			}
			keys = nil
			debug.FreeOSMemory()
			vs := make([]uint64, batch)
			found := make([]bool, batch)
			check := func(b *testing.B) {
				for i := 0; i < batch; i += 9973 {
					if !found[i] || vs[i] != gomap[ks[i]] {
						b.Fatalf("key %q: %d, %v", ks[i], vs[i], found[i])
					}
				}
			}
			gpu := func(prefix string, keys []string) {
				for _, c := range mapStrBenchShapes() {
					b.Run(prefix+c.name(), func(b *testing.B) {
						defer mapStrBenchShape(c)()
						gpuBenchWarm(b, func() error { return m.GetBatch(keys, vs, found) })
						for range b.N {
							if err := m.GetBatch(keys, vs, found); err != nil {
								b.Fatal(err)
							}
						}
						mapGPUReport(b, batch)
						check(b)
						st := m.Stats().Batch
						b.ReportMetric(float64(st.GPUCalls)/float64(st.GPUCalls+st.CPUCalls), "gpu-share")
					})
				}
			}
			gpu("", ks)
			b.Run("cpu-batch", func(b *testing.B) {
				for range b.N {
					m.getManyCPU(m.t, ks, vs, found)
				}
				mapGPUReport(b, batch)
				check(b)
			})
			mapGoMapBatch(b, gomap, ks, vs, found, check)
			var sb strings.Builder
			for _, k := range ks {
				sb.WriteString(k)
			}
			buf, off := sb.String(), 0
			one := make([]string, batch)
			for i, k := range ks {
				one[i], off = buf[off:off+len(k)], off+len(k)
			}
			gpu("onebuf/", one)
			b.Run("onebuf/gomap-16", func(b *testing.B) {
				for range b.N {
					mapGPUPar16(batch, func(_, lo, hi int) {
						for i := lo; i < hi; i++ {
							vs[i], found[i] = gomap[one[i]]
						}
					})
				}
				mapGPUReport(b, batch)
				check(b)
			})
		})
	}
}

// mapStrBenchCase is one shape of a string GetBatch: parts it is cut into
// and most keys of a round (0: GetBatch's own).
type mapStrBenchCase struct{ parts, round int }

// name is the benchmark's name for c: gpu-batch, then its shape where it
// is not GetBatch's own.
func (c mapStrBenchCase) name() string {
	s := "gpu-batch"
	if c.parts > 0 {
		s += fmt.Sprintf("-parts%d", c.parts)
	}
	if c.round > 0 {
		s += fmt.Sprintf("-round%d", c.round)
	}
	return s
}

// mapStrBenchShapes: VMEM_BENCH_PARTS by VMEM_BENCH_STR_ROUNDS.
func mapStrBenchShapes() []mapStrBenchCase {
	rounds := []int{0}
	if env := os.Getenv("VMEM_BENCH_STR_ROUNDS"); env != "" {
		rounds = nil
		for _, f := range strings.Split(env, ",") {
			if v, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && v >= 1 {
				rounds = append(rounds, v)
			}
		}
	}
	var out []mapStrBenchCase
	for _, p := range mapGPUBenchParts() {
		for _, r := range rounds {
			out = append(out, mapStrBenchCase{p, r})
		}
	}
	return out
}

// mapStrBenchShape sets c's shape and returns what puts GetBatch's own
// back.
func mapStrBenchShape(c mapStrBenchCase) func() {
	oldP, oldR := mapGetStrParts, mapGetStrRound
	if c.parts > 0 {
		mapGetStrParts = c.parts
	}
	if c.round > 0 {
		mapGetStrRound = c.round
	}
	return func() { mapGetStrParts, mapGetStrRound = oldP, oldR }
}
