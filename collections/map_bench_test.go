package collections

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/vmemtest"

	"github.com/govram/govram/vmem"
)

// Benchmarks. Each compares, in the same run:
//
//	gomap   Go's map[K]V
//	govram  Map (streaming loads on mapped VRAM)
//	naive   the same Map, its mapped VRAM read and written with plain loads
//	        and stores (on the host backend this equals govram)
//
// Sizes: 1e6 by default; VMEM_BENCH_SIZES=1e6,1e7,1e8 adds the large ones.
// VMEM_BENCH_GC sets the entry count of BenchmarkMapGC (default 1e6; the
// issue's figure is 5e7). VMEM_MAP_EAGER=1 switches Get's VRAM load from
// predicted to unconditional (an experiment: compare both on a GPU). The device is the default one (VMEM_BACKEND picks
// another). Custom metrics: hostB/entry (host memory of the map: its
// control bytes on a GPU, every tier on the host backend, plus Go heap
// growth) and heapB (Go heap growth) for the builds, Mget/s for parallel
// readers.

// VMEM_MAP_EAGER=1 makes Get load the home line before the control bytes
// arrive rather than under the predicted branch (see mapEagerLoad).
func init() {
	if os.Getenv("VMEM_MAP_EAGER") == "1" {
		mapEagerLoad = true
	}
}

var (
	mapBenchOnce sync.Once
	mapBenchDev  *vmem.Device
	mapBenchErr  error
)

func mapBenchDevice(b *testing.B) *vmem.Device {
	mapBenchOnce.Do(func() { mapBenchDev, mapBenchErr = vmem.Open(vmem.Options{}) })
	if mapBenchErr != nil {
		b.Fatal(mapBenchErr)
	}
	return mapBenchDev
}

// mapBenchKey is the i-th key: distinct for distinct i (an odd multiplier).
func mapBenchKey(i uint64) uint64 { return i * 0x9E3779B97F4A7C15 }

// mapRand is a xorshift generator: a few ns, no allocation, one per
// goroutine.
type mapRand uint64

func (r *mapRand) next() uint64 {
	x := uint64(*r)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*r = mapRand(x)
	return x
}

// mapBenchSet is a Go map and a Map of the same n entries, built once per
// size and shared by the benchmarks that only read.
type mapBenchSet struct {
	n     int
	gomap map[uint64]uint64
	m     *Map[uint64, uint64]
	hostB float64
	heapB float64
}

var mapBenchSets = map[int]*mapBenchSet{}

func mapBenchBuild(b *testing.B, n int) *mapBenchSet {
	if s := mapBenchSets[n]; s != nil {
		return s
	}
	d := mapBenchDevice(b)
	s := &mapBenchSet{n: n, gomap: make(map[uint64]uint64)}
	for i := uint64(0); i < uint64(n); i++ {
		s.gomap[mapBenchKey(i)] = i
	}
	heap0, host0 := mapHeapInUse(), mapHostBytes(d)
	var opts []MapOption
	if os.Getenv("VMEM_BENCH_NOTIER") == "1" {
		opts = append(opts, WithHostCache(0)) // every Get from the table
	}
	m, err := NewMap[uint64, uint64](d, opts...)
	if err != nil {
		b.Fatal(err)
	}
	const batch = 1 << 16
	ks, vs := make([]uint64, batch), make([]uint64, batch)
	for lo := 0; lo < n; lo += batch {
		k := min(batch, n-lo)
		for i := range k {
			ks[i], vs[i] = mapBenchKey(uint64(lo+i)), uint64(lo+i)
		}
		if err := m.putMany(ks[:k], vs[:k]); err != nil {
			b.Fatal(err)
		}
	}
	ks, vs = nil, nil
	heap := float64(int64(mapHeapInUse()) - int64(heap0))
	s.m, s.heapB = m, heap
	s.hostB = (float64(mapHostBytes(d)-host0) + max(heap, 0)) / float64(n)
	mapBenchSets[n] = s
	return s
}

// mapHostBytes is the host memory the device's blocks use: the host tier
// on a GPU, every tier on the host backend.
func mapHostBytes(d *vmem.Device) uint64 {
	b := d.Info().Tiers[vmem.Host].InUse
	if d.Info().Backend == vmem.BackendHost {
		b += d.Info().Tiers[vmem.Mapped].InUse + d.Info().Tiers[vmem.Private].InUse
	}
	return b
}

// setDirect makes Puts store at once (or records them again, on a GPU).
func (m *Map[K, V]) setDirect(direct bool) {
	m.flushForRead()
	m.cfg.noWB = direct
	m.wbRestart()
}

// wbRestart sets the recording of Puts up again for the current options.
func (m *Map[K, V]) wbRestart() {
	m.wbFree()
	m.wb = mapWB[K, V]{}
	m.wbInit()
}

// setPlain switches the map between streaming loads and batched stores
// (false) and plain loads and stores (true) of its mapped VRAM: the naive
// path, on the very same table.
func (m *Map[K, V]) setPlain(plain bool) {
	m.flushForRead()
	m.cfg.plain = plain
	m.wbRestart()
	t := m.t
	for i := range t.segs {
		sg := &t.segs[i]
		sg.View = kdev(m.dev).View(sg.slots)
		if plain {
			sg.View = sg.Plain()
		}
	}
	t.allDirect = true
	t.fast = true
	for i := range t.segs {
		k := t.segs[i].Kind
		t.allDirect = t.allDirect && k == access.Direct
		t.fast = t.fast && k != access.DMA && (k != access.WC || m.r.lines == 1)
	}
}

var mapBenchSink uint64

// mapImpls runs f as the sub-benchmarks gomap, govram and naive.
func mapImpls(b *testing.B, s *mapBenchSet, get func(*mapBenchSet, string) func(uint64) (uint64, bool)) {
	for _, impl := range []string{"gomap", "govram", "naive"} {
		b.Run(impl, func(b *testing.B) {
			s.m.setPlain(impl == "naive")
			defer s.m.setPlain(false)
			f := get(s, impl)
			r := mapRand(88172645463325252)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v, _ := f(r.next())
				mapBenchSink += v
			}
		})
	}
}

func mapGetter(hit bool) func(*mapBenchSet, string) func(uint64) (uint64, bool) {
	return func(s *mapBenchSet, impl string) func(uint64) (uint64, bool) {
		n := uint64(s.n)
		off := uint64(0)
		if !hit {
			off = n
		}
		if impl == "gomap" {
			return func(x uint64) (uint64, bool) {
				v, ok := s.gomap[mapBenchKey(x%n+off)]
				return v, ok
			}
		}
		return func(x uint64) (uint64, bool) { return s.m.Get(mapBenchKey(x%n + off)) }
	}
}

func BenchmarkMapGet(b *testing.B) {
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		for _, sc := range []struct {
			name string
			hit  bool
		}{{"hit", true}, {"miss", false}} {
			b.Run(sc.name+"/"+vmemtest.SizeName(n), func(b *testing.B) {
				s := mapBenchBuild(b, n)
				mapImpls(b, s, mapGetter(sc.hit))
			})
		}
	}
}

// BenchmarkMapGetParallel: g goroutines of Gets of random hits. ns/op is
// wall time per Get, so it compares throughput directly; Mget/s says the
// same as a rate. combined is govram with the combining of single Gets on
// (map_getcomb.go; VMEM_COMBINE_GETS=1 makes it the default) and its
// rounds on the GPU; combined-cpu the same with every round by line loads
// (the library's choice); combined-all the same with every Get combined,
// whatever the count of goroutines in Get (no direct path);
// combined/op the share of Gets that were answered in shared rounds.
func BenchmarkMapGetParallel(b *testing.B) {
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		for _, g := range []int{1, 4, 16, 64, 256} {
			b.Run(fmt.Sprintf("hit/%s/g=%d", vmemtest.SizeName(n), g), func(b *testing.B) {
				s := mapBenchBuild(b, n)
				for _, impl := range []string{"gomap", "govram", "combined", "combined-cpu", "combined-all"} {
					b.Run(impl, func(b *testing.B) {
						// b.Run calls this more than once: impl stays as it is.
						use := impl
						if strings.HasPrefix(impl, "combined") {
							// Combining of single Gets on (map_getcomb.go).
							if s.m.dev.Info().Backend != vmem.BackendVulkan {
								b.Skip("combining is for maps on a GPU")
							}
							comb, gpu := s.m.comb, getCombGPU
							getCombGPU = impl == "combined"
							s.m.getCombStart()
							getCombGPU = gpu
							if impl == "combined-all" {
								s.m.comb.min = -1
							}
							defer func() { s.m.comb = comb }()
							use = "govram"
						}
						before := s.m.Stats().CombinedGets
						f := mapGetter(true)(s, use)
						var wg sync.WaitGroup
						per := (b.N + g - 1) / g
						b.ResetTimer()
						for w := 0; w < g; w++ {
							wg.Go(func() {
								r := mapRand(88172645463325252 + uint64(w)*7919)
								var acc uint64
								for i := 0; i < per; i++ {
									v, _ := f(r.next())
									acc += v
								}
								mapSinkAdd(acc)
							})
						}
						wg.Wait()
						b.StopTimer()
						b.ReportMetric(float64(per*g)/b.Elapsed().Seconds()/1e6, "Mget/s")
						if use != "gomap" {
							b.ReportMetric(float64(s.m.Stats().CombinedGets-before)/float64(per*g), "combined/op")
						}
					})
				}
			})
		}
	}
}

var mapSinkMu sync.Mutex

func mapSinkAdd(v uint64) {
	mapSinkMu.Lock()
	mapBenchSink += v
	mapSinkMu.Unlock()
}

// BenchmarkMapGetMany: batches of random hits; ns/op is per key. seq uses
// batches small enough to stay in one goroutine (interleaved line loads
// only); par uses 64Ki-key batches spread over GOMAXPROCS goroutines.
func BenchmarkMapGetMany(b *testing.B) {
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		for _, sc := range []struct {
			name  string
			batch int
		}{{"seq", mapParMin - 1}, {"par", 1 << 16}} {
			b.Run(fmt.Sprintf("hit/%s/%s", vmemtest.SizeName(n), sc.name), func(b *testing.B) {
				s := mapBenchBuild(b, n)
				ks := make([]uint64, sc.batch)
				vs := make([]uint64, sc.batch)
				r := mapRand(88172645463325252)
				for _, impl := range []string{"gomap", "govram", "naive"} {
					b.Run(impl, func(b *testing.B) {
						s.m.setPlain(impl == "naive")
						defer s.m.setPlain(false)
						b.ResetTimer()
						for done := 0; done < b.N; done += len(ks) {
							b.StopTimer()
							ks := ks[:min(len(ks), b.N-done)]
							for i := range ks {
								ks[i] = mapBenchKey(r.next() % uint64(n))
							}
							b.StartTimer()
							if impl == "gomap" {
								for i, k := range ks {
									vs[i] = s.gomap[k]
								}
							} else {
								s.m.getMany(ks, vs[:len(ks)], nil)
							}
						}
					})
				}
			})
		}
	}
}

// BenchmarkMapPut/grow: Puts of new keys into a map that starts empty and
// is replaced by a fresh one (untimed) when it reaches n entries, so ns/op
// is the amortized cost of a Put, growth included, for maps of up to n
// entries. heapB and hostB/entry are measured on the last full map.
// overwrite stores new values for random existing keys.
func BenchmarkMapPut(b *testing.B) {
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		b.Run("grow/"+vmemtest.SizeName(n), func(b *testing.B) {
			d := mapBenchDevice(b)
			for _, impl := range []string{"gomap", "govram", "govram-direct"} {
				b.Run(impl, func(b *testing.B) {
					var m *Map[uint64, uint64]
					var gm map[uint64]uint64
					var heap0, host0 uint64
					fresh := func() {
						if m != nil {
							m.Close()
						}
						m, gm = nil, nil
						heap0, host0 = mapHeapInUse(), mapHostBytes(d)
						if impl == "gomap" {
							gm = map[uint64]uint64{}
							return
						}
						var err error
						var opts []MapOption
						if impl == "govram-direct" {
							opts = append(opts, mapWithDirectPuts())
						}
						if m, err = NewMap[uint64, uint64](d, opts...); err != nil {
							b.Fatal(err)
						}
					}
					fresh()
					j, full := uint64(0), false
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if j == uint64(n) {
							if m != nil {
								m.flushForRead() // recorded Puts are stored inside the timing
							}
							b.StopTimer()
							heap := float64(int64(mapHeapInUse()) - int64(heap0))
							b.ReportMetric(max(heap, 0), "heapB")
							b.ReportMetric((float64(mapHostBytes(d)-host0)+max(heap, 0))/float64(n), "hostB/entry")
							full = true
							fresh()
							j = 0
							b.StartTimer()
						}
						if gm != nil {
							gm[mapBenchKey(j)] = j
						} else if err := m.Put(mapBenchKey(j), j); err != nil {
							b.Fatal(err)
						}
						j++
					}
					if m != nil {
						m.flushForRead()
					}
					b.StopTimer()
					if !full && j > 0 {
						heap := float64(int64(mapHeapInUse()) - int64(heap0))
						b.ReportMetric(max(heap, 0), "heapB")
						b.ReportMetric((float64(mapHostBytes(d)-host0)+max(heap, 0))/float64(j), "hostB/entry")
					}
					runtime.KeepAlive(gm)
					if m != nil {
						m.Close()
					}
				})
			}
		})
		b.Run("overwrite/"+vmemtest.SizeName(n), func(b *testing.B) {
			s := mapBenchBuild(b, n)
			// govram records Puts on a GPU and stores them in batches
			// (map_wb.go); govram-direct stores each at once.
			for _, impl := range []string{"gomap", "govram", "govram-direct", "naive"} {
				b.Run(impl, func(b *testing.B) {
					s.m.setPlain(impl == "naive")
					defer s.m.setPlain(false)
					s.m.setDirect(impl == "govram-direct")
					defer s.m.setDirect(false)
					r := mapRand(88172645463325252)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						x := r.next()
						k := mapBenchKey(x % uint64(n))
						if impl == "gomap" {
							s.gomap[k] = x % uint64(n)
						} else if err := s.m.Put(k, x%uint64(n)); err != nil {
							b.Fatal(err)
						}
					}
					s.m.flushForRead() // timed: what is pending is part of the cost
					b.StopTimer()
				})
			}
		})
	}
}

// BenchmarkMapAll: one op is a whole range over the map; ns/entry and
// Mentries/s compare Map.All with ranging over the Go map.
func BenchmarkMapAll(b *testing.B) {
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		b.Run(vmemtest.SizeName(n), func(b *testing.B) {
			s := mapBenchBuild(b, n)
			for _, impl := range []string{"gomap", "govram"} {
				b.Run(impl, func(b *testing.B) {
					var acc uint64
					for b.Loop() {
						seen := 0
						if impl == "gomap" {
							for k, v := range s.gomap {
								acc += k ^ v
								seen++
							}
						} else {
							for k, v := range s.m.All() {
								acc += k ^ v
								seen++
							}
						}
						if seen != n {
							b.Fatalf("%d entries, want %d", seen, n)
						}
					}
					mapBenchSink += acc
					per := b.Elapsed().Seconds() / float64(b.N) / float64(n)
					b.ReportMetric(per*1e9, "ns/entry")
					b.ReportMetric(1/per/1e6, "Mentries/s")
				})
			}
		})
	}
}

// BenchmarkMapDelete deletes random present keys, then puts them back
// (untimed) so the size stays n.
func BenchmarkMapDelete(b *testing.B) {
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		b.Run(vmemtest.SizeName(n), func(b *testing.B) {
			s := mapBenchBuild(b, n)
			for _, impl := range []string{"gomap", "govram", "naive"} {
				b.Run(impl, func(b *testing.B) {
					s.m.setPlain(impl == "naive")
					defer s.m.setPlain(false)
					r := mapRand(88172645463325252)
					const round = 1 << 12
					ks := make([]uint64, round)
					vs := make([]uint64, round)
					b.ResetTimer()
					for done := 0; done < b.N; done += round {
						b.StopTimer()
						for i := range ks {
							x := (r.next() % uint64(n))
							ks[i], vs[i] = mapBenchKey(x), x
						}
						b.StartTimer()
						for _, k := range ks[:min(round, b.N-done)] {
							if impl == "gomap" {
								delete(s.gomap, k)
							} else {
								s.m.Delete(k)
							}
						}
						b.StopTimer()
						for i, k := range ks {
							if impl == "gomap" {
								s.gomap[k] = vs[i]
							} else if err := s.m.Put(k, vs[i]); err != nil {
								b.Fatal(err)
							}
						}
						b.StartTimer()
					}
				})
			}
		})
	}
}

// BenchmarkMapGC holds n string-keyed entries in a map[string]uint64 or a
// Map[string, uint64] and runs a read workload that allocates (it formats
// each key it looks up), so the collector runs. It reports the Go heap the
// map added (heapMB), and for the collections during the workload (two more
// are forced at its end, so there are some) their number (gcs), their
// average CPU time (gcCPU-ms/cycle) and stop-the-world pause
// (pause-µs/cycle), from runtime/metrics.
func BenchmarkMapGC(b *testing.B) {
	n := int(1e6)
	if s := os.Getenv("VMEM_BENCH_GC"); s != "" {
		if v, err := strconv.ParseFloat(s, 64); err == nil && v >= 1 {
			n = int(v)
		}
	}
	key := func(i int) string { return fmt.Sprintf("user:%010d", i) }
	for _, impl := range []string{"gomap", "govram"} {
		b.Run(fmt.Sprintf("%s/%s", impl, vmemtest.SizeName(n)), func(b *testing.B) {
			d := mapBenchDevice(b)
			heap0 := mapHeapInUse()
			var gm map[string]uint64
			var m *Map[string, uint64]
			if impl == "gomap" {
				gm = make(map[string]uint64)
				for i := 0; i < n; i++ {
					gm[key(i)] = uint64(i)
				}
			} else {
				var err error
				if m, err = NewMap[string, uint64](d); err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				const batch = 1 << 14
				ks, vs := make([]string, batch), make([]uint64, batch)
				for lo := 0; lo < n; lo += batch {
					k := min(batch, n-lo)
					for i := range k {
						ks[i], vs[i] = key(lo+i), uint64(lo+i)
					}
					if err := m.putMany(ks[:k], vs[:k]); err != nil {
						b.Fatal(err)
					}
				}
			}
			runtime.GC()
			before := mapGCMetrics()
			r := mapRand(88172645463325252)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := key(int(r.next() % uint64(n)))
				var v uint64
				if gm != nil {
					v = gm[k]
				} else {
					v, _ = m.Get(k)
				}
				mapBenchSink += v
			}
			b.StopTimer()
			runtime.GC()
			runtime.GC()
			after := mapGCMetrics()
			cycles := after.cycles - before.cycles
			b.ReportMetric(float64(int64(after.heap)-int64(heap0))/(1<<20), "heapMB")
			b.ReportMetric(float64(cycles), "gcs")
			if cycles > 0 {
				b.ReportMetric((after.cpu-before.cpu)/float64(cycles)*1e3, "gcCPU-ms/cycle")
				b.ReportMetric((after.pause-before.pause)/float64(cycles)*1e6, "pause-µs/cycle")
			}
			runtime.KeepAlive(gm)
		})
	}
}

type mapGCStat struct {
	cycles uint64
	cpu    float64 // seconds
	pause  float64 // seconds, summed over the pause histogram
	heap   uint64
}

func mapGCMetrics() mapGCStat {
	ss := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/sched/pauses/total/gc:seconds"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}
	metrics.Read(ss)
	var st mapGCStat
	st.cycles = ss[0].Value.Uint64()
	st.cpu = ss[1].Value.Float64()
	if h := ss[2].Value.Float64Histogram(); h != nil {
		for i, c := range h.Counts {
			lo := h.Buckets[i]
			if math.IsInf(lo, -1) {
				lo = 0
			}
			st.pause += float64(c) * lo
		}
	}
	st.heap = ss[3].Value.Uint64()
	return st
}
