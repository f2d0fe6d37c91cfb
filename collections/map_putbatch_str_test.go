package collections

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestMapPutBatchStringValues: PutBatch overwrites string values of keys
// it finds in place (the old bytes freed once), storing a key given twice
// once, with its last value, on every backend: the map matches a Go map
// after each batch and the arena holds exactly the strings its records
// name.
func TestMapPutBatchStringValues(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[uint64, string](d, WithCapacity(3000))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ms, err := NewMap[string, string](d)
		if err != nil {
			t.Fatal(err)
		}
		defer ms.Close()
		model := map[uint64]string{}
		rng := rand.New(rand.NewPCG(5, 11))
		// Keys of 6 to 60 bytes: inline and in the arena.
		skey := func(k uint64) string { return fmt.Sprintf("key/%s/%d", strings.Repeat("k", int(k%50)), k) }
		val := func() string {
			// Inline and arena values, so each kind replaces each kind.
			return strings.Repeat(string(rune('a'+rng.IntN(26))), []int{0, 3, 7, 40, 300}[rng.IntN(5)])
		}
		for round := range 30 {
			n := 1 + rng.IntN(600)
			keys, vals := make([]uint64, n), make([]string, n)
			skeys := make([]string, n)
			for i := range keys {
				keys[i] = uint64(rng.IntN(1500))
				if i > 0 && rng.IntN(8) == 0 {
					keys[i] = keys[rng.IntN(i)] // the same key again in the batch
				}
				vals[i] = val()
				skeys[i] = skey(keys[i])
				model[keys[i]] = vals[i]
			}
			if err := m.PutBatch(keys, vals); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if err := ms.PutBatch(skeys, vals); err != nil {
				t.Fatalf("round %d, string keys: %v", round, err)
			}
			if err := m.check(); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if err := ms.check(); err != nil {
				t.Fatalf("round %d, string keys: %v", round, err)
			}
			if m.Len() != len(model) || ms.Len() != len(model) {
				t.Fatalf("round %d: Len %d and %d, want %d", round, m.Len(), ms.Len(), len(model))
			}
			for k, want := range model {
				if v, ok := m.Get(k); !ok || v != want {
					t.Fatalf("round %d: Get(%d) = %d bytes, %v; want %d bytes", round, k, len(v), ok, len(want))
				}
			}
		}
		for k, want := range model {
			if v, ok := ms.Get(skey(k)); !ok || v != want {
				t.Fatalf("string-key Get(%d): %d bytes, %v; want %d bytes", k, len(v), ok, len(want))
			}
		}
	})
}

// TestMapBatchDisplaced: batch lookups and overwrites of keys displaced
// from their home buckets (a map filled to its capacity, with deletes
// leaving tombstones on the probe paths), found through the host's
// control bytes, agree with a Go map on every backend.
func TestMapBatchDisplaced(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		const n = 4000
		m, err := NewMap[string, uint64](d, WithCapacity(n))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		key := func(i int) string { return fmt.Sprintf("displaced/%d", i) }
		model := map[string]uint64{}
		keys, vals := make([]string, n), make([]uint64, n)
		for i := range keys {
			keys[i], vals[i] = key(i), uint64(i)
			model[keys[i]] = vals[i]
		}
		if err := m.PutBatch(keys, vals); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i += 3 {
			if _, _, err := m.Delete(key(i)); err != nil {
				t.Fatal(err)
			}
			delete(model, key(i))
		}
		rng := rand.New(rand.NewPCG(2, 3))
		for round := range 20 {
			q := make([]string, 1500)
			for i := range q {
				q[i] = key(rng.IntN(n + n/4)) // present, deleted and never stored
			}
			got, found := make([]uint64, len(q)), make([]bool, len(q))
			if err := m.GetBatch(q, got, found); err != nil {
				t.Fatal(err)
			}
			for i, k := range q {
				want, in := model[k]
				if found[i] != in || got[i] != want {
					t.Fatalf("round %d: GetBatch(%q) = %d, %v; want %d, %v", round, k, got[i], found[i], want, in)
				}
			}
			for i := range q {
				got[i] = uint64(round*10000 + i)
				model[q[i]] = got[i]
			}
			if err := m.PutBatch(q, got); err != nil {
				t.Fatal(err)
			}
			if m.Len() != len(model) {
				t.Fatalf("round %d: Len %d, want %d", round, m.Len(), len(model))
			}
			if err := m.check(); err != nil {
				t.Fatal(err)
			}
		}
		for k, want := range model {
			if v, ok := m.Get(k); !ok || v != want {
				t.Fatalf("Get(%q) = %d, %v; want %d", k, v, ok, want)
			}
		}
	})
}

// TestMapPutBatchFullNoGrowth: a map of string keys filled to the
// capacity it was made with keeps its table through PutBatch calls that
// overwrite its own keys (most of them displaced from their home buckets
// at that load), on every backend, and then holds the new values.
func TestMapPutBatchFullNoGrowth(t *testing.T) {
	n := mapSteps(20000, 4000)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[string, string](d, WithCapacity(n))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ks, vs := make([]string, n), make([]string, n)
		for i := range ks {
			ks[i], vs[i] = fmt.Sprintf("key-%016d", i*7919), fmt.Sprintf("val-%027d", i)
		}
		if err := m.PutBatch(ks, vs); err != nil {
			t.Fatal(err)
		}
		tb := m.t
		rng := rand.New(rand.NewPCG(3, 9))
		for round := range 8 {
			lo := rng.IntN(n - n/4)
			b := ks[lo : lo+n/4]
			for i := range b {
				vs[lo+i] = fmt.Sprintf("new-%d-%023d", round, i)
			}
			if err := m.PutBatch(b, vs[lo:lo+len(b)]); err != nil {
				t.Fatal(err)
			}
			if m.t != tb {
				t.Fatalf("round %d: a PutBatch of %d present keys grew the table (%d entries, capacity %d)", round, len(b), m.Len(), n)
			}
		}
		if m.Len() != n {
			t.Fatalf("Len %d, want %d", m.Len(), n)
		}
		for i, k := range ks {
			if v, ok := m.Get(k); !ok || v != vs[i] {
				t.Fatalf("Get(%q) = %q, %v; want %q", k, v, ok, vs[i])
			}
		}
		if err := m.check(); err != nil {
			t.Fatal(err)
		}
	})
}
