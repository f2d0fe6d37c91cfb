package collections

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestMapGetCombined: 64 goroutines mix single Gets (every one through a
// lane: combining forced), GetMany and GetBatch,
// hits and misses, checked against a Go map, on every backend, with and
// without a tier; then Puts (recorded, not yet stored) and Deletes, and
// the same again: combined rounds see every write (read-your-writes).
func TestMapGetCombined(t *testing.T) {
	defer func(n int, gpu bool) { getCombMin, getCombGPU = n, gpu }(getCombMin, getCombGPU)
	getCombMin = -1
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, tc := range []struct {
			cache int
			gpu   bool
		}{{0, true}, {1 << 16, true}, {0, false}} {
			t.Run(fmt.Sprintf("cache=%d/gpu=%v", tc.cache, tc.gpu), func(t *testing.T) {
				cache := tc.cache
				getCombGPU = tc.gpu
				m, err := NewMap[uint64, uint64](d, WithCapacity(20000), WithHostCache(cache))
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				if m.comb == nil {
					t.Fatal("no combining state with getCombMin set")
				}
				model := map[uint64]uint64{}
				for i := range uint64(10000) {
					k := mapBenchKey(i)
					model[k] = i * 3
					if err := m.Put(k, i*3); err != nil {
						t.Fatal(err)
					}
				}
				check := func(round int) {
					var wg sync.WaitGroup
					for g := range 64 {
						wg.Go(func() {
							keys := make([]uint64, 0, 64)
							for i := range 600 {
								k := mapBenchKey(uint64((g*7919 + i*131) % 14000)) // a fifth absent
								want, wok := model[k]
								switch i % 10 {
								case 8:
									keys = append(keys, k)
								case 9:
									keys = append(keys, k)
									vals := make([]uint64, len(keys))
									found := make([]bool, len(keys))
									if g%2 == 0 {
										m.getMany(keys, vals, found)
									} else if err := m.GetBatch(keys, vals, found); err != nil {
										t.Errorf("GetBatch: %v", err)
										return
									}
									for j, kk := range keys {
										w, ok := model[kk]
										if found[j] != ok || vals[j] != w {
											t.Errorf("round %d: batch key %d = %d, %v; want %d, %v", round, kk, vals[j], found[j], w, ok)
											return
										}
									}
									keys = keys[:0]
								default:
									v, ok := m.Get(k)
									if ok != wok || v != want {
										t.Errorf("round %d: Get(%d) = %d, %v; want %d, %v", round, k, v, ok, want, wok)
										return
									}
								}
							}
						})
					}
					wg.Wait()
				}
				check(0)
				for i := uint64(0); i < 14000; i += 3 {
					k := mapBenchKey(i)
					if i%2 == 0 {
						model[k] = i + 1
						if err := m.Put(k, i+1); err != nil {
							t.Fatal(err)
						}
					} else {
						delete(model, k)
						m.Delete(k)
					}
				}
				check(1)
				if st := m.Stats(); st.CombinedGets == 0 {
					t.Errorf("no Get was combined: %+v", st)
				}
				// Rounds of several Gets go to the GPU where kernels run
				// (and only there).
				gpuRounds := m.comb.gpuRounds.Load()
				switch want := tc.gpu && kdev(d).KernelsAvailable(); {
				case want && gpuRounds == 0:
					t.Errorf("no combined round went to the GPU")
				case !want && gpuRounds != 0:
					t.Errorf("%d combined rounds went to the GPU", gpuRounds)
				}
				if err := m.Err(); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}

// TestMapGetLoneDirect: with the default bound, one goroutine's Gets never
// combine, and the gauge is back at zero after each.
func TestMapGetLoneDirect(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		m.getCombStart() // the default bound
		for i := range uint64(1000) {
			if err := m.Put(i, i); err != nil {
				t.Fatal(err)
			}
		}
		for i := range uint64(2000) {
			if v, ok := m.Get(i); ok != (i < 1000) || (ok && v != i) {
				t.Fatalf("Get(%d) = %d, %v", i, v, ok)
			}
		}
		if n := m.Stats().CombinedGets; n != 0 {
			t.Errorf("a lone goroutine's Gets were combined: %d", n)
		}
		if g := *m.comb.gauge; g != 0 {
			t.Errorf("gauge %d after the Gets, want 0", g)
		}
	})
}

// TestMapBatchStats: Stats shows the path each batch lookup took: a small
// GetMany by CPU line loads; on a GPU, a GetBatch of thousands of keys by
// a round that counts its keys; the sharded map sums its shards.
func TestMapBatchStats(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		const n = 8192
		keys, vals := make([]uint64, n), make([]uint64, n)
		for i := range keys {
			keys[i], vals[i] = uint64(i)*7+1, uint64(i)
		}
		if err := m.PutBatch(keys, vals); err != nil {
			t.Fatal(err)
		}
		got := make([]uint64, n)
		if f := m.getMany(keys[:8], got[:8], nil); f != 8 {
			t.Fatalf("GetMany found %d of 8", f)
		}
		st := m.Stats().Batch
		if st.CPUCalls != 1 || st.GPUCalls != 0 {
			t.Errorf("after a GetMany of 8 keys: %+v, want one CPU call", st)
		}
		if err := m.GetBatch(keys, got, nil); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, vals) {
			t.Fatal("GetBatch: wrong values")
		}
		st = m.Stats().Batch
		if st.CPUCalls+st.GPUCalls != 2 {
			t.Errorf("after two calls: %+v", st)
		}
		if kdev(d).KernelsAvailable() {
			if st.GPUCalls != 1 || st.Rounds == 0 || st.RoundKeys < n {
				t.Errorf("a GetBatch of %d keys on a GPU: %+v, want one GPU call and its round's keys", n, st)
			}
		}
	})
}
