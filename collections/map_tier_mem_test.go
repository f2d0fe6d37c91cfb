package collections

import (
	"runtime"
	"testing"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestMapTierMemory: the hot tier lives off the Go heap and within its
// budget. A map of n entries with a tier, filled and read with hot keys,
// grows the Go heap by less than 1 MiB whatever n; the tier's bytes stay
// within the budget; on a GPU the host memory beside the tier (control
// bytes, the recorded Puts' buffer) is at most 2 bytes an entry plus that
// buffer's fixed size.
func TestMapTierMemory(t *testing.T) {
	const budget = 4 << 20
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, n := range []int{1 << 14, 1 << 18} {
			before := liveHeap()
			m, err := NewMap[uint64, uint64](d, WithCapacity(n), WithHostCache(budget))
			if err != nil {
				t.Fatal(err)
			}
			ks, vs := make([]uint64, n), make([]uint64, n)
			for i := range ks {
				ks[i], vs[i] = uint64(i)*0x9e3779b97f4a7c15, uint64(i)
			}
			if err := m.PutBatch(ks, vs); err != nil {
				t.Fatal(err)
			}
			ks, vs = nil, nil
			for round := range 8 {
				for i := range 4096 {
					k := uint64(i*i%n) * 0x9e3779b97f4a7c15
					if v, ok := m.Get(k); !ok || v != uint64(i*i%n) {
						t.Fatalf("round %d: Get(%d) = %d, %v", round, k, v, ok)
					}
				}
			}
			st := m.Stats()
			if grew := liveHeap() - before; grew > 1<<20 {
				t.Errorf("n=%d: Go heap grew by %d bytes with the map alive", n, grew)
			}
			if st.Cache.Bytes == 0 || st.Cache.Bytes > budget || st.Cache.Entries == 0 {
				t.Errorf("n=%d: tier %+v, budget %d", n, st.Cache, budget)
			}
			if d.Info().Backend == vmem.BackendVulkan {
				// HostBytes: control bytes, the recorded Puts' buffer (at
				// most 4 MiB) and the tier.
				if other := st.HostBytes - st.Cache.Bytes; other > 2*uint64(n)+4<<20 {
					t.Errorf("n=%d: %d host bytes beside the tier, over 2 an entry + 4 MiB", n, other)
				}
			}
			runtime.KeepAlive(m)
			m.Close()
		}
	})
}

// liveHeap collects garbage and returns the bytes of the Go heap that
// stay live: measured before a container is made and while it is alive,
// the heap it keeps.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestTierOffersAllocateNothing: a Get that misses the tier and offers its
// key (every miss, here) allocates nothing on the Go heap, for the Map and
// for the B-tree's entry tier.
func TestTierOffersAllocateNothing(t *testing.T) {
	if buildconst.Race || buildconst.Invariants {
		t.Skip("the race detector and the invariants checks allocate")
	}
	tierAdmitEvery(t)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		const n = 1 << 15
		m, err := NewMap[uint64, uint64](d, WithHostCache(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		tr, err := NewBTreeOrdered[uint64, uint64](d, WithHostCache(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		for i := range uint64(n) {
			if err := m.Put(i, i); err != nil {
				t.Fatal(err)
			}
			if _, _, err := tr.ReplaceOrInsert(i, i); err != nil {
				t.Fatal(err)
			}
		}
		m.Len() // the recorded Puts stored
		// Two passes fill the tier's sets, so the offers that follow meet a
		// victim (the path that hashes a stored key).
		for range 2 {
			for i := range uint64(n) {
				m.Get(i)
				tr.Get(i)
			}
		}
		const calls = 20000
		mallocs := func(f func(i uint64)) uint64 {
			var a, b runtime.MemStats
			runtime.ReadMemStats(&a)
			for i := range uint64(calls) {
				f(i * 7919 % n)
			}
			runtime.ReadMemStats(&b)
			return b.Mallocs - a.Mallocs
		}
		before := m.Stats().Cache
		if a := mallocs(func(k uint64) { m.Get(k) }); a > calls/100 {
			t.Errorf("Map.Get with offers: %d allocations in %d calls", a, calls)
		}
		if after := m.Stats().Cache; after.Admissions == before.Admissions || after.Rejections == before.Rejections {
			t.Errorf("Gets did not both admit and reject: the test measured nothing (%+v)", after)
		}
		before = tr.Stats().Cache
		if a := mallocs(func(k uint64) { tr.Get(k) }); a > calls/100 {
			t.Errorf("BTree.Get with offers: %d allocations in %d calls", a, calls)
		}
		if after := tr.Stats().Cache; after.Admissions == before.Admissions {
			t.Errorf("BTree Gets admitted nothing: the test measured nothing (%+v)", after)
		}
	})
}
