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
// it finds in place (the old bytes freed once) and takes the full way for
// a key given twice, on every backend: the map matches a Go map after each
// batch and the arena holds exactly the strings its records name.
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
