package collections

import (
	"cmp"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// btGPUCheck runs GetBatch over keys and compares with the model.
func btGPUCheck[K comparable, V comparable](t *testing.T, tr *BTree[K, V], model map[K]V, keys []K) {
	t.Helper()
	vals := make([]V, len(keys))
	found := make([]bool, len(keys))
	for i := range found {
		found[i] = true
	}
	if err := tr.GetBatch(keys, vals, found); err != nil {
		t.Fatalf("GetBatch(%d keys): %v", len(keys), err)
	}
	for i, k := range keys {
		w, ok := model[k]
		if ok != found[i] || vals[i] != w {
			t.Fatalf("GetBatch[%d of %d](%v) = %v, %v; want %v, %v", i, len(keys), k, vals[i], found[i], w, ok)
		}
	}
}

// btGPURun drives a tree and a Go map with random inserts, deletes and
// batch lookups (hits, misses, duplicates, sizes around workgroups).
func btGPURun[K cmp.Ordered, V comparable](t *testing.T, tr *BTree[K, V], genK func(*rand.Rand) K, genV func(*rand.Rand) V, steps int) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(steps), 3))
	model := map[K]V{}
	sizes := []int{0, 1, 3, 4, 5, 255, 256, 257, 1023, 1024, 1025, 3000}
	for step := 0; step < steps; step++ {
		switch op := r.IntN(10); {
		case op < 4:
			for range r.IntN(300) {
				k, v := genK(r), genV(r)
				if _, _, err := tr.ReplaceOrInsert(k, v); err != nil {
					t.Fatal(err)
				}
				model[k] = v
			}
		case op < 5:
			for range r.IntN(100) {
				k := genK(r)
				if _, _, err := tr.Delete(k); err != nil {
					t.Fatal(err)
				}
				delete(model, k)
			}
		default:
			n := sizes[r.IntN(len(sizes))]
			keys := make([]K, n)
			for i := range keys {
				if i > 0 && r.IntN(8) == 0 {
					keys[i] = keys[r.IntN(i)]
				} else {
					keys[i] = genK(r)
				}
			}
			btGPUCheck(t, tr, model, keys)
		}
	}
	if err := tr.Clear(); err != nil {
		t.Fatal(err)
	}
	btGPUCheck(t, tr, map[K]V{}, []K{genK(r), genK(r)})
}

type btGPUVal12 struct{ A, B, C uint32 }

func TestBTreeBatchDifferential(t *testing.T) {
	steps := mapSteps(150, 50)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		before := kdev(d).KernelDispatches()
		t.Run("u64", func(t *testing.T) {
			tr, err := NewBTreeOrdered[uint64, uint64](d)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			btGPURun(t, tr, func(r *rand.Rand) uint64 { return uint64(r.IntN(20000)) }, func(r *rand.Rand) uint64 { return r.Uint64() }, steps)
			// A batch of a key per leaf and more routes on the GPU.
			if kdev(d).KernelsAvailable() {
				for k := range uint64(3000) {
					if _, _, err := tr.ReplaceOrInsert(k, k); err != nil {
						t.Fatal(err)
					}
				}
				ks := make([]uint64, tr.Len())
				if err := tr.GetBatch(ks, make([]uint64, len(ks)), nil); err != nil {
					t.Fatal(err)
				}
				if !tr.rt.inStep || tr.rt.ver != tr.writes {
					t.Error("a large batch did not route on the GPU")
				}
			}
		})
		t.Run("i64-small-chunks", func(t *testing.T) {
			old := btGPUChunk
			btGPUChunk = 600
			defer func() { btGPUChunk = old }()
			tr, err := NewBTreeOrdered[int64, uint32](d)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			btGPURun(t, tr, func(r *rand.Rand) int64 { return int64(r.IntN(20000)) - 10000 }, func(r *rand.Rand) uint32 { return r.Uint32() }, steps)
		})
		t.Run("i32-val12", func(t *testing.T) {
			tr, err := NewBTreeOrdered[int32, btGPUVal12](d)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			btGPURun(t, tr, func(r *rand.Rand) int32 { return int32(r.IntN(9000)) - 4500 }, func(r *rand.Rand) btGPUVal12 { return btGPUVal12{r.Uint32(), 2, r.Uint32()} }, steps)
		})
		t.Run("u32-cpu-generic", func(t *testing.T) {
			tr, err := NewBTree[uint32, uint64](d, func(a, b uint32) bool { return a < b })
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			btGPURun(t, tr, func(r *rand.Rand) uint32 { return uint32(r.IntN(5000)) }, func(r *rand.Rand) uint64 { return r.Uint64() }, steps/2)
		})
		t.Run("string-values-cpu", func(t *testing.T) {
			tr, err := NewBTreeOrdered[uint64, string](d)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			btGPURun(t, tr, func(r *rand.Rand) uint64 { return uint64(r.IntN(3000)) }, func(r *rand.Rand) string { return string(rune('a' + r.IntN(26))) }, steps/2)
		})
		if kdev(d).KernelsAvailable() && kdev(d).KernelDispatches() == before {
			t.Error("no kernel ran on a device that runs kernels")
		}
	})
}

func TestBTreeBatchErrors(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr, err := NewBTreeOrdered[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.GetBatch(make([]uint64, 2), make([]uint64, 1), nil); !errors.Is(err, vmem.ErrRange) {
			t.Fatalf("GetBatch with short vals: %v", err)
		}
		if err := tr.GetBatch(make([]uint64, 2), make([]uint64, 2), make([]bool, 1)); !errors.Is(err, vmem.ErrRange) {
			t.Fatalf("GetBatch with short found: %v", err)
		}
		if err := tr.GetBatch(nil, nil, nil); err != nil {
			t.Fatal(err)
		}
		vals := []uint64{5, 5}
		if err := tr.GetBatch([]uint64{1, 2}, vals, nil); err != nil || vals[0] != 0 || vals[1] != 0 {
			t.Fatalf("GetBatch on an empty tree: %v %v", vals, err)
		}
		keys := make([]uint64, 2000)
		for i := range keys {
			keys[i] = uint64(i)
		}
		if err := tr.BulkLoad(keys, keys); err != nil {
			t.Fatal(err)
		}
		if kdev(d).KernelsAvailable() {
			kdev(d).InjectFaults(kern.Faults{FailSubmit: 1})
			if err := tr.GetBatch(keys, make([]uint64, len(keys)), nil); !errors.Is(err, vmem.ErrDeviceLost) {
				t.Fatalf("GetBatch on a lost device: %v", err)
			}
		}
		tr.Close()
		if err := tr.GetBatch(nil, nil, nil); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("GetBatch after Close: %v", err)
		}
	})
}
