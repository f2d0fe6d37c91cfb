package collections

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// mapCombSmall makes combined rounds small, so that a test's callers fill
// several rounds, wait for room in the queue, and run batches over the
// join limit on their own.
func mapCombSmall(t *testing.T, gpuMin int) {
	oldR, oldJ, oldQ, oldF, oldMin := mapCombRoundMax, mapCombJoinMax, mapCombQueueMax, mapCombFlights, mapBatchGPUMin
	mapCombRoundMax, mapCombJoinMax, mapCombQueueMax, mapBatchGPUMin = 3000, 1500, 6000, gpuMin
	mapCombFlights = 2 // whatever VMEM_COMBINE says
	t.Cleanup(func() {
		mapCombRoundMax, mapCombJoinMax, mapCombQueueMax, mapCombFlights, mapBatchGPUMin = oldR, oldJ, oldQ, oldF, oldMin
	})
}

// mapCombReaders runs g goroutines that each make ops lookups of random
// sizes (GetBatch, GetMany, Get), found flags wanted or not, and check
// every answer against model. Keys are hits and misses.
func mapCombReaders(t *testing.T, m *Map[uint64, uint64], model map[uint64]uint64, keySpace uint64, g, ops int, seed uint64) {
	t.Helper()
	sizes := []int{1, 2, 17, 64, 400, 1000, 1499, 1501, 2600}
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for w := range g {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for range ops {
				n := sizes[r.IntN(len(sizes))]
				ks := make([]uint64, n)
				for i := range ks {
					ks[i] = r.Uint64N(keySpace)
				}
				vs := make([]uint64, n)
				var found []bool
				if r.IntN(3) > 0 {
					found = make([]bool, n)
				}
				for i := range vs {
					vs[i] = ^uint64(0) // stale contents: every answer must be written
				}
				kind := r.IntN(3)
				switch kind {
				case 0:
					if err := m.GetBatch(ks, vs, found); err != nil {
						errs <- fmt.Errorf("GetBatch(%d keys): %v", n, err)
						return
					}
				case 1:
					got := m.getMany(ks, vs, found)
					want := 0
					for _, k := range ks {
						if _, ok := model[k]; ok {
							want++
						}
					}
					if got != want {
						errs <- fmt.Errorf("GetMany(%d keys) found %d, want %d", n, got, want)
						return
					}
				default:
					for i, k := range ks[:min(n, 64)] {
						v, ok := m.Get(k)
						vs[i] = v
						if found != nil {
							found[i] = ok
						}
					}
					ks = ks[:min(n, 64)]
				}
				for i, k := range ks {
					want, ok := model[k]
					if vs[i] != want || (found != nil && found[i] != ok) {
						errs <- fmt.Errorf("op %d, %d keys, key %d (%d): got %d, %v; want %d, %v", kind, n, i, k, vs[i], found != nil && found[i], want, ok)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestMapCombineConcurrent: 64 goroutines mix batch and single lookups of
// many sizes, in phases separated by writes (PutBatch, Put, Delete, which
// leave the device's copy of the control bytes out of step), every answer
// checked against a Go map. With kernels, some calls must have shared a
// round, and both paths must have been chosen.
func TestMapCombineConcurrent(t *testing.T) {
	const keySpace = 30000
	phases, ops := 4, 12
	if testing.Short() || buildconst.Invariants {
		phases, ops = 2, 6
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, gpuMin := range []int{mapBatchGPUMin, 16} {
			t.Run(fmt.Sprintf("gpu-from-%d", gpuMin), func(t *testing.T) {
				mapCombSmall(t, gpuMin)
				m, err := NewMap[uint64, uint64](d)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				model := map[uint64]uint64{}
				r := rand.New(rand.NewPCG(uint64(gpuMin), 1))
				for p := range phases {
					ks := make([]uint64, 4000)
					vs := make([]uint64, len(ks))
					for i := range ks {
						ks[i], vs[i] = r.Uint64N(keySpace), r.Uint64()
					}
					if err := m.PutBatch(ks, vs); err != nil {
						t.Fatal(err)
					}
					for i := range ks {
						model[ks[i]] = vs[i]
					}
					for range 50 {
						k, v := r.Uint64N(keySpace), r.Uint64()
						if err := m.Put(k, v); err != nil {
							t.Fatal(err)
						}
						model[k] = v
						k = r.Uint64N(keySpace)
						want, had := model[k]
						if old, ok, err := m.Delete(k); ok != had || old != want || err != nil {
							t.Fatalf("Delete(%d) disagrees with the model", k)
						}
						delete(model, k)
					}
					mapCombReaders(t, m, model, keySpace, 64, ops, uint64(p))
					if t.Failed() {
						return
					}
				}
				st := &m.gpu.stats
				t.Logf("rounds %d, keys %d, combined calls %d, cpu %d, gpu %d", st.rounds.Load(), st.keys.Load(), st.combined.Load(), st.cpuPath.Load(), st.gpuPath.Load())
				if st.cpuPath.Load() == 0 {
					t.Error("no batch took the CPU path")
				}
				if kdev(d).KernelsAvailable() {
					if st.gpuPath.Load() == 0 || st.rounds.Load() == 0 {
						t.Error("no batch took the GPU path on a device with kernels")
					}
					if st.combined.Load() == 0 {
						t.Error("64 goroutines never shared a round")
					}
				} else if st.gpuPath.Load() != 0 {
					t.Error("a batch took the GPU path on a device without kernels")
				}
			})
		}
	})
}

// TestMapCombineFailedRound: the device is lost at a submission while 64
// goroutines' lookups are queued and combined. A call either succeeds
// with every answer right, or fails with vmem.ErrDeviceLost having written
// nothing into its results: no caller gets another's answers, or
// answers from a round that failed.
func TestMapCombineFailedRound(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		if !kdev(d).KernelsAvailable() {
			t.Skip("no kernels")
		}
		for _, nth := range []int64{1, 2, 3} {
			t.Run(fmt.Sprint(nth), func(t *testing.T) {
				d := vmemtest.Open(t, vmem.BackendVulkan, vmem.Options{})
				mapCombSmall(t, 16)
				mapCombFlights = 1 // rounds one at a time: the rest queue and combine
				m, err := NewMap[uint64, uint64](d)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				const keySpace = 5000
				ks := make([]uint64, keySpace)
				for i := range ks {
					ks[i] = uint64(i) * 3 // the multiples of 3 are present
				}
				if err := m.PutBatch(ks, ks); err != nil {
					t.Fatal(err)
				}
				// One lookup first, so that the mirror of the control bytes
				// is in step and every later submission is a lookup's.
				if err := m.GetBatch(ks[:100], make([]uint64, 100), nil); err != nil {
					t.Fatal(err)
				}
				kdev(d).InjectFaults(kern.Faults{FailSubmit: nth})
				const g = 64
				start := make(chan struct{})
				var wg sync.WaitGroup
				var mu sync.Mutex
				failed, ok := 0, 0
				for w := range g {
					wg.Go(func() {
						r := rand.New(rand.NewPCG(uint64(nth), uint64(w)))
						n := 20 + r.IntN(500)
						keys := make([]uint64, n)
						for i := range keys {
							keys[i] = r.Uint64N(3 * keySpace)
						}
						vs := make([]uint64, n)
						found := make([]bool, n)
						for i := range vs {
							vs[i] = 0xdead
						}
						<-start
						err := m.GetBatch(keys, vs, found)
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							failed++
							if !errors.Is(err, vmem.ErrDeviceLost) {
								t.Errorf("GetBatch: %v, want vmem.ErrDeviceLost", err)
							}
							for i := range vs {
								if vs[i] != 0xdead || found[i] {
									t.Errorf("a failed GetBatch wrote its results (key %d: %d, %v)", i, vs[i], found[i])
									return
								}
							}
							return
						}
						ok++
						for i, k := range keys {
							want, present := k, k%3 == 0
							if !present {
								want = 0
							}
							if vs[i] != want || found[i] != present {
								t.Errorf("key %d (%d): %d, %v; want %d, %v", i, k, vs[i], found[i], want, present)
								return
							}
						}
					})
				}
				close(start)
				wg.Wait()
				t.Logf("%d calls failed, %d succeeded; %d calls shared a round", failed, ok, m.gpu.stats.combined.Load())
				if failed == 0 {
					t.Error("no call saw the lost device")
				}
			})
		}
	})
}

// TestMapCombineStrings: 32 goroutines look string keys up by GetBatch and
// GetMany at once (keys inline and too long to be, hits and misses), so
// that rounds of string key images are shared; every answer is checked
// against a Go map.
func TestMapCombineStrings(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		mapCombSmall(t, 16)
		m, err := NewMap[string, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		gen := genStrEdge(mapStrInline(m.r.keyW))
		r := rand.New(rand.NewPCG(5, 6))
		model := map[string]uint64{}
		for range 3000 {
			k, v := gen(r)+fmt.Sprint(r.IntN(500)), r.Uint64()
			if err := m.Put(k, v); err != nil {
				t.Fatal(err)
			}
			model[k] = v
		}
		var known []string
		for k := range model {
			known = append(known, k)
		}
		var wg sync.WaitGroup
		for w := range 32 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(w), 9))
				for op := range 8 {
					ks := make([]string, []int{20, 300, 1400, 2500}[r.IntN(4)])
					for i := range ks {
						if r.IntN(2) == 0 {
							ks[i] = known[r.IntN(len(known))]
						} else {
							ks[i] = gen(r) + "x"
						}
					}
					vs, found := make([]uint64, len(ks)), make([]bool, len(ks))
					if op%2 == 0 {
						if err := m.GetBatch(ks, vs, found); err != nil {
							t.Error(err)
							return
						}
					} else {
						m.getMany(ks, vs, found)
					}
					for i, k := range ks {
						want, ok := model[k]
						if found[i] != ok || vs[i] != want {
							t.Errorf("%q: %d, %v; want %d, %v", k, vs[i], found[i], want, ok)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		if kdev(d).KernelsAvailable() && m.gpu.stats.combined.Load() == 0 {
			t.Error("32 goroutines never shared a round")
		}
	})
}
