package collections

import (
	"math"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestKeyIdentityOnOverwrite: writing a key equal to a stored one but
// with other bits (-0.0 over +0.0) replaces the value and keeps the stored
// key, through every write path, on every backend, as the Put and
// ReplaceOrInsert docs say. (Go's map and google/btree keep the new key.)
func TestKeyIdentityOnOverwrite(t *testing.T) {
	neg := math.Copysign(0, -1)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		check := func(name string, m *Map[float64, int], want int) {
			t.Helper()
			n := 0
			for k, v := range m.All() {
				n++
				if math.Signbit(k) || v != want {
					t.Errorf("%s: entry (%v, signbit %v) = %d, want +0 = %d", name, k, math.Signbit(k), v, want)
				}
			}
			if n != 1 || m.Len() != 1 {
				t.Errorf("%s: %d entries iterated, Len %d, want 1", name, n, m.Len())
			}
			if v, ok := m.Get(neg); !ok || v != want {
				t.Errorf("%s: Get(-0) = %d, %v, want %d", name, v, ok, want)
			}
		}
		for _, path := range []string{"Put", "PutMany", "PutBatch"} {
			m, err := NewMap[float64, int](d)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Put(0, 1); err != nil {
				t.Fatal(err)
			}
			switch path {
			case "Put":
				err = m.Put(neg, 2)
			case "PutMany":
				err = m.putMany([]float64{neg}, []int{2})
			case "PutBatch":
				err = m.PutBatch([]float64{neg}, []int{2})
			}
			if err != nil {
				t.Fatal(err)
			}
			check(path, m, 2)
			m.Close()
		}

		tr, err := NewBTreeOrdered[float64, int](d)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		if _, _, err := tr.ReplaceOrInsert(0, 1); err != nil {
			t.Fatal(err)
		}
		if old, replaced, err := tr.ReplaceOrInsert(neg, 2); err != nil || !replaced || old != 1 {
			t.Fatalf("ReplaceOrInsert(-0) = %d, %v, %v; want 1, true, nil", old, replaced, err)
		}
		k, v, ok := tr.Min()
		if !ok || math.Signbit(k) || v != 2 || tr.Len() != 1 {
			t.Errorf("BTree: Min = (%v signbit %v, %d, %v), Len %d; want (+0, 2, true), 1", k, math.Signbit(k), v, ok, tr.Len())
		}
	})
}
