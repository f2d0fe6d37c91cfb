package collections

import (
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestBatchHasherPanic: a WithHasher function that panics inside a large
// batch (split over goroutines, on the CPU or around the GPU's kernels)
// panics in the caller, and the container answers the next batch.
func TestBatchHasherPanic(t *testing.T) {
	const n = 1 << 16
	const bad = uint64(1) << 40
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = uint64(i)
	}
	q := append([]uint64(nil), keys...)
	q[n*3/4] = bad
	vals := make([]uint64, n)
	found := make([]bool, n)
	armed := false
	hasher := WithHasher(func(k uint64) uint64 {
		if armed && k == bad {
			panic("hasher")
		}
		return k * 0x9e3779b97f4a7c15
	})
	type batcher interface {
		GetBatch(keys, vals []uint64, found []bool) error
		getMany(keys, vals []uint64, found []bool) int
		PutBatch(keys, vals []uint64) error
	}
	check := func(t *testing.T, m batcher) {
		if err := m.PutBatch(keys, keys); err != nil {
			t.Fatal(err)
		}
		ops := map[string]func(){
			"GetBatch": func() { m.GetBatch(q, vals, found) },
			"GetMany":  func() { m.getMany(q, vals, found) },
			"PutBatch": func() { m.PutBatch(q, q) },
		}
		for name, op := range ops {
			armed = true
			msg, ok := vmemtest.Panics(op)
			armed = false
			if !ok || msg != "hasher" {
				t.Fatalf("%s: panic %q (%v), want the hasher's", name, msg, ok)
			}
			if err := m.GetBatch(keys, vals, found); err != nil {
				t.Fatalf("after %s: %v", name, err)
			}
			for i, k := range keys {
				if !found[i] || vals[i] != k {
					t.Fatalf("after %s: key %d: %d %v", name, k, vals[i], found[i])
				}
			}
		}
	}
	t.Run("Map", func(t *testing.T) {
		vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
			m, err := NewMap[uint64, uint64](d, hasher)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			check(t, m)
		})
	})
	t.Run("Map/pool", func(t *testing.T) {
		shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
			s, err := NewMap[uint64, uint64](p, hasher)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			check(t, s)
		})
	})
}
