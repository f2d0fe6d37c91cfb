package collections

import (
	"runtime"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestBTreeTierMemory: the BTree's hot tiers live off the Go heap and
// within their budget, as the Map's do (TestMapTierMemory). A tree of n
// entries with a tier, loaded, then read and written with hot keys (Get,
// Range, overwrites), grows the Go heap by less than 1 MiB whatever n; the
// tiers' bytes stay within the budget and serve hits; the host memory
// beside them (the index, scan and write buffers) is at most 2 bytes an
// entry plus 1 MiB for the buffers.
func TestBTreeTierMemory(t *testing.T) {
	const budget = 4 << 20
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, n := range []int{1 << 14, 1 << 18} {
			before := liveHeap()
			tr, err := NewBTreeOrdered[uint64, uint64](d, WithHostCache(budget))
			if err != nil {
				t.Fatal(err)
			}
			ks, vs := btBenchKeys(n)
			if err := tr.BulkLoad(ks, vs); err != nil {
				t.Fatal(err)
			}
			ks, vs = nil, nil
			for round := range 8 {
				for i := range 512 {
					j := i * i % n
					if v, ok := tr.Get(uint64(2 * j)); !ok || v != uint64(j) {
						t.Fatalf("round %d: Get(%d) = %d, %v", round, 2*j, v, ok)
					}
					got := 0
					for k, v := range tr.Range(uint64(2*j), uint64(2*j+200)) {
						if v != k/2 {
							t.Fatalf("round %d: Range gave %d for key %d", round, v, k)
						}
						got++
					}
					if want := min(100, n-j); got != want {
						t.Fatalf("round %d: Range from %d visited %d entries, want %d", round, 2*j, got, want)
					}
					if i%8 == 0 {
						if _, _, err := tr.ReplaceOrInsert(uint64(2*j), uint64(j)); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			st := tr.Stats()
			if grew := liveHeap() - before; grew > 1<<20 {
				t.Errorf("n=%d: Go heap grew by %d bytes with the tree alive", n, grew)
			}
			if st.Cache.Bytes == 0 || st.Cache.Bytes > budget || st.Cache.Hits == 0 {
				t.Errorf("n=%d: tier %+v, budget %d", n, st.Cache, budget)
			}
			if other := st.HostBytes - st.Cache.Bytes; other > 2*uint64(n)+1<<20 {
				t.Errorf("n=%d: %d host bytes beside the tier, over 2 an entry + 1 MiB", n, other)
			}
			t.Logf("n=%d: tier %d bytes, %d hits; %d host bytes beside it", n, st.Cache.Bytes, st.Cache.Hits, st.HostBytes-st.Cache.Bytes)
			runtime.KeepAlive(tr)
			tr.Close()
		}
	})
}
