package collections

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestMapPutBehind runs bursts of Puts with no read between them (on a
// GPU they are recorded and stored later), each followed by one operation
// that must see them: Get, Len, Delete, PutMany, GetMany, PutBatch,
// GetBatch, a full comparison, Clear, or an iteration that writes in its
// loop body. The buffer is made small so that it fills (stored by a
// PutBatch) and reads come after a few Puts (stored one by one) often, and
// the table starts small so that the room check sends Puts that need a
// growth the direct way.
func TestMapPutBehind(t *testing.T) {
	steps := mapSteps(400, 120)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, space := range []uint64{3000, 1 << 40} { // many overwrites; mostly new keys
			t.Run(fmt.Sprint("u64/keys=", space), func(t *testing.T) {
				x := newMapDiff(t, d, 40+space%7, genU64(space), func(r *rand.Rand) uint64 { return r.Uint64() })
				putBehindRun(t, d, x, steps)
			})
		}
		// With strings, the recorded pairs point into the buffer's byte log:
		// keys and values of every length, the empty one and strings too
		// long for the log's share (stored direct) included.
		// (The invariants build checks the whole map after every Put: fewer
		// steps there.)
		strSteps := mapSteps(200, 60)
		if buildconst.Invariants {
			strSteps = 12
		}
		for _, space := range []int{3000, 1 << 30} {
			t.Run(fmt.Sprint("str-u64/keys=", space), func(t *testing.T) {
				x := newMapDiff(t, d, 41+uint64(space%7), genStrWB(space, 90), func(r *rand.Rand) uint64 { return r.Uint64() })
				putBehindRun(t, d, x, strSteps)
			})
			t.Run(fmt.Sprint("str-str/keys=", space), func(t *testing.T) {
				x := newMapDiff(t, d, 42+uint64(space%7), genStrWB(space, 40), genVStr(120))
				putBehindRun(t, d, x, strSteps)
			})
		}
		t.Run("u64-str", func(t *testing.T) {
			x := newMapDiff(t, d, 43, genU64(2000), genVStr(70))
			putBehindRun(t, d, x, strSteps)
		})
	})
}

// genStrWB is genStr with, now and then, a key longer than a quarter of
// the write-behind log (such a Put is stored direct).
func genStrWB(space, maxLen int) func(*rand.Rand) string {
	g := genStr(space, maxLen)
	return func(r *rand.Rand) string {
		if r.IntN(500) == 0 {
			return fmt.Sprintf("%d/%s", r.IntN(4), strings.Repeat("x", mapWBLog/4+1))
		}
		return g(r)
	}
}

func putBehindRun[K, V comparable](t *testing.T, d *vmem.Device, x *mapDiff[K, V], steps int) {
	defer x.close()
	m := x.m
	if !m.wb.off {
		m.wb.max = 500
	}
	r := x.r
	recorded := false
	for step := 0; step < steps; step++ {
		n := r.IntN(700)
		if r.IntN(4) == 0 {
			n = r.IntN(mapWBDirect)
		}
		var last K
		for i := range n {
			k := x.genK(r)
			if r.IntN(10) == 0 && i > 0 {
				k = last // the same key twice in a batch: the later value wins
			}
			x.put(k, x.genV(r))
			last = k
			recorded = recorded || len(m.wb.keys) > 0
		}
		switch r.IntN(10) {
		case 0:
			x.get(last)
		case 1:
			if m.Len() != len(x.model) {
				t.Fatalf("step %d: Len = %d, want %d", step, m.Len(), len(x.model))
			}
		case 2:
			x.del(last)
		case 3:
			x.putMany(r.IntN(300))
		case 4:
			x.getMany(r.IntN(300))
		case 5:
			ks := []K{last, x.genK(r), last}
			vs := []V{x.genV(r), x.genV(r), x.genV(r)}
			if err := m.PutBatch(ks, vs); err != nil {
				t.Fatal(err)
			}
			x.model[ks[0]], x.model[ks[1]] = vs[2], vs[1]
			if ks[1] == ks[0] {
				x.model[ks[0]] = vs[2]
			}
		case 6:
			ks := []K{last, x.genK(r)}
			vs := make([]V, 2)
			found := make([]bool, 2)
			if err := m.GetBatch(ks, vs, found); err != nil {
				t.Fatal(err)
			}
			for i, k := range ks {
				if w, ok := x.model[k]; ok != found[i] || w != vs[i] {
					t.Fatalf("step %d: GetBatch(%v) = %v %v, want %v %v", step, k, vs[i], found[i], w, ok)
				}
			}
		case 7:
			x.compare()
		case 8:
			if r.IntN(4) == 0 {
				m.Clear()
				clear(x.model)
			}
		case 9:
			// Puts in the loop body: overwrites of what it meets.
			i := 0
			for k := range keysOf(m.All()) {
				if i++; i%3 == 0 {
					x.put(k, x.genV(r))
				}
				if i > 200 {
					break
				}
			}
		}
	}
	x.compare()
	if d.Info().Backend == vmem.BackendVulkan {
		if !recorded {
			t.Fatal("no Put was recorded")
		}
		if m.wb.batches == 0 {
			t.Fatal("no recorded Puts were stored as a batch")
		}
		if m.locMode() && kdev(d).KernelsAvailable() && m.wb.located == 0 {
			t.Fatal("no batch of recorded string keys had its slots found by a GPU round")
		}
	}
}

// TestMapPutBehindFaults fails an allocation, a batch, then a submission,
// while recorded Puts are stored: a failed allocation or batch loses
// nothing (the Puts go the direct way); a lost device is reported by the
// call that stored them and by Err.
func TestMapPutBehindFaults(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for nth := int64(1); nth <= 4; nth++ {
			t.Run(fmt.Sprint("alloc", nth), func(t *testing.T) {
				x := newMapDiff(t, d, 50+uint64(nth), genU64(1<<40), func(r *rand.Rand) uint64 { return r.Uint64() }, WithCapacity(10000))
				defer x.close()
				for range 2 * mapWBDirect {
					x.put(x.genK(x.r), x.genV(x.r))
				}
				kdev(d).InjectFaults(kern.Faults{FailAlloc: nth})
				n := x.m.Len() // stores the recorded Puts
				kdev(d).InjectFaults(kern.Faults{})
				if err := x.m.Err(); err != nil {
					t.Fatalf("after a failed allocation: %v", err)
				}
				if n != len(x.model) {
					t.Fatalf("Len = %d, want %d", n, len(x.model))
				}
				x.compare()
			})
		}
		// A batch that cannot run (no memory for its work, no kernels)
		// leaves the Puts to the direct way; without kernels, later Puts
		// go direct at once.
		for _, fail := range []error{vmem.ErrOutOfMemory, kern.ErrNoKernels} {
			t.Run(fmt.Sprint("batch-", fail), func(t *testing.T) {
				mapWBFail = fmt.Errorf("injected: %w", fail)
				defer func() { mapWBFail = nil }()
				x := newMapDiff(t, d, 60, genU64(500), func(r *rand.Rand) uint64 { return r.Uint64() }, WithCapacity(10000))
				defer x.close()
				for range 3 * mapWBDirect {
					x.put(x.genK(x.r), x.genV(x.r))
				}
				x.compare()
				if err := x.m.Err(); err != nil {
					t.Fatalf("after a failed batch: %v", err)
				}
				if d.Info().Backend == vmem.BackendVulkan && x.m.wb.off != errors.Is(fail, kern.ErrNoKernels) {
					t.Fatalf("write-behind off = %v after %v", x.m.wb.off, fail)
				}
			})
		}
		if d.Info().Backend != vmem.BackendVulkan {
			return
		}
		m, err := NewMap[uint64, uint64](d, WithCapacity(10000))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		for i := range uint64(2 * mapWBDirect) {
			if err := m.Put(i, i); err != nil {
				t.Fatal(err)
			}
		}
		kdev(d).InjectFaults(kern.Faults{FailSubmit: 1})
		mustPanicLost(t, "Get storing recorded Puts", func() { m.Get(1) })
		if err := m.Err(); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("Err after the device was lost storing recorded Puts: %v", err)
		}
	})
}

// TestMapPutBehindStringsLost loses the device while Puts of string keys
// and values are recorded: no read answers from the recorded pairs or the
// tier, and every call reports the loss.
func TestMapPutBehindStringsLost(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		if d.Info().Backend != vmem.BackendVulkan {
			t.Skip("Puts are recorded on a GPU only")
		}
		m, err := NewMap[string, string](d, WithCapacity(10000), WithHostCache(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		for i := range 2 * mapWBDirect {
			if err := m.Put(fmt.Sprint("key-", i), fmt.Sprint("value-", i)); err != nil {
				t.Fatal(err)
			}
		}
		m.Len() // stored
		for i := range mapWBDirect {
			if v, ok := m.Get(fmt.Sprint("key-", i)); !ok || v != fmt.Sprint("value-", i) {
				t.Fatalf("Get(key-%d) = %q %v", i, v, ok)
			}
		}
		for i := range 2 * mapWBDirect {
			if err := m.Put(fmt.Sprint("key-", i), fmt.Sprint("new-", i)); err != nil {
				t.Fatal(err)
			}
		}
		if len(m.wb.keys) == 0 {
			t.Fatal("Puts of string pairs were not recorded")
		}
		kdev(d).InjectFaults(kern.Faults{LoseDevice: true})
		mustPanicLost(t, "Get of a recorded key after the loss", func() { m.Get("key-1") })
		mustPanicLost(t, "Get of a key the tier held", func() { m.Get("key-2") })
		if err := m.Err(); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("Err after the loss: %v", err)
		}
		if err := m.Put("key-3", "x"); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("Put after the loss: %v", err)
		}
		vs := make([]string, 1)
		if err := m.GetBatch([]string{"key-4"}, vs, nil); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("GetBatch after the loss: %v", err)
		}
	})
}

// TestMapPutLocatedThenGetBatch: recorded Puts of string keys, new and
// present, stored by a GPU round that found their slots (where the
// kernels run), then answered by GPU GetBatch rounds, which must see the
// keys those Puts inserted (the device's copy of the control bytes is
// stale after them), and by Get; checked against a Go map, string and
// fixed-size values.
func TestMapPutLocatedThenGetBatch(t *testing.T) {
	old := mapBatchGPUMin
	mapBatchGPUMin = 1 // every GetBatch a GPU round where the kernels run
	defer func() { mapBatchGPUMin = old }()
	oldChunk := mapGPUChunk
	defer func() { mapGPUChunk = oldChunk }()
	for _, chunk := range []int{oldChunk, 50} { // one round per batch; many
		mapGPUChunk = chunk
		t.Run(fmt.Sprint("round=", chunk), func(t *testing.T) { putLocatedRun(t) })
	}
}

func putLocatedRun(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		mu, err := NewMap[string, uint64](d, WithCapacity(4000))
		if err != nil {
			t.Fatal(err)
		}
		defer mu.Close()
		ms, err := NewMap[string, string](d, WithCapacity(4000))
		if err != nil {
			t.Fatal(err)
		}
		defer ms.Close()
		model := map[string]uint64{}
		r := rand.New(rand.NewPCG(7, 8))
		var keys []string
		for round := range 12 {
			// A burst of Puts: new keys and overwrites (some twice), more
			// than a read stores one by one, so that they are stored as a
			// batch.
			for range 3 * mapWBDirect {
				var k string
				if len(keys) == 0 || r.IntN(2) == 0 {
					k = fmt.Sprintf("https://example.org/%d/%s", len(keys), strings.Repeat("p", r.IntN(70)))
					keys = append(keys, k)
				} else {
					k = keys[r.IntN(len(keys))]
				}
				v := r.Uint64()
				model[k] = v
				if err := mu.Put(k, v); err != nil {
					t.Fatal(err)
				}
				if err := ms.Put(k, fmt.Sprint(v)); err != nil {
					t.Fatal(err)
				}
			}
			probe := append(append([]string(nil), keys...), fmt.Sprint("absent/", round))
			vu, fu := make([]uint64, len(probe)), make([]bool, len(probe))
			vs, fs := make([]string, len(probe)), make([]bool, len(probe))
			if err := mu.GetBatch(probe, vu, fu); err != nil {
				t.Fatal(err)
			}
			if err := ms.GetBatch(probe, vs, fs); err != nil {
				t.Fatal(err)
			}
			for i, k := range probe {
				want, ok := model[k]
				if fu[i] != ok || vu[i] != want {
					t.Fatalf("round %d: GetBatch(%q) = %d, %v; want %d, %v", round, k, vu[i], fu[i], want, ok)
				}
				if ws := fmt.Sprint(want); fs[i] != ok || ok && vs[i] != ws {
					t.Fatalf("round %d: string values: GetBatch(%q) = %q, %v; want %q, %v", round, k, vs[i], fs[i], ws, ok)
				}
				if v, ok2 := mu.Get(k); ok2 != ok || v != want {
					t.Fatalf("round %d: Get(%q) = %d, %v; want %d, %v", round, k, v, ok2, want, ok)
				}
			}
			if err := mu.check(); err != nil {
				t.Fatal(err)
			}
			if err := ms.check(); err != nil {
				t.Fatal(err)
			}
		}
		if d.Info().Backend == vmem.BackendVulkan && kdev(d).KernelsAvailable() {
			if mu.wb.located == 0 || ms.wb.located == 0 {
				t.Fatalf("batches located by the GPU: %d and %d, want some", mu.wb.located, ms.wb.located)
			}
			if mu.Stats().Batch.GPUCalls == 0 {
				t.Fatal("no GetBatch ran on the GPU")
			}
		}
	})
}
