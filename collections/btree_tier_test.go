package collections

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// btTierBudgets are the tier sizes the differential runs with: a couple
// of sets of leaves (every admission evicts) beside an entry tier of a few
// hundred pairs, and tiers that hold most leaves and keys.
var btTierBudgets = []int{32 << 10, 256 << 10}

// btTierOps encodes n operations for btRun weighted towards reads, with
// keys skewed to the front of 0..511 so that a few leaves are hot: the
// tier admits, hits and evicts constantly, between writes that must drop
// its copies.
func btTierOps(r *rand.Rand, n int) []byte {
	var b []byte
	key := func() {
		k := uint16(511 * math.Pow(r.Float64(), 3))
		if r.IntN(50) == 0 {
			k = uint16(r.IntN(1 << 16)) // now and then a large key
		}
		b = binary.LittleEndian.AppendUint16(b, k)
	}
	for range n {
		switch x := r.IntN(200); {
		case x < 90: // Get and Has
			b = append(b, 6)
			key()
		case x < 120:
			b = append(b, byte(r.IntN(4)))
			key()
		case x < 135:
			b = append(b, byte(4+r.IntN(2)))
			key()
		case x < 170: // a bounded or open scan, of any kind, maybe stopped early
			b = append(b, byte(10+r.IntN(2))|byte(r.IntN(16))<<4)
			key()
			key()
			b = append(b, byte(r.IntN(256)))
		case x < 180:
			b = append(b, byte(7+r.IntN(3)))
		case x < 185:
			b = append(b, 12, byte(r.IntN(80)), byte(r.IntN(4)))
		case x < 186:
			b = append(b, 13, 0)
		default:
			b = append(b, 14|byte(r.IntN(16))<<4)
		}
	}
	return b
}

// btTierRun runs data on a tree of codec c made with opts and returns its
// tiers' counters, and those of its entry tier alone.
func btTierRun[K, V any](t *testing.T, d *vmem.Device, c btCodec[K, V], opts []BTreeOption, data []byte) (all, entries CacheStats) {
	t.Helper()
	tr, err := c.make(d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.lv.hot == nil && tr.tierSlot() != 0 {
		t.Fatal("WithHostCache made no leaf tier")
	}
	if tr.et == nil && tr.etSlot() != 0 {
		t.Fatal("WithHostCache made no entry tier")
	}
	btRun(t, c, tr, data)
	return tr.Stats().Cache, tr.et.stats()
}

// TestBTreeTierDifferential checks trees with a hot tier against
// google/btree on every device (mapped, spilling to private, Vulkan), for
// every codec and tree shape, with every miss offered to tiny tiers.
func TestBTreeTierDifferential(t *testing.T) {
	tierAdmitEvery(t)
	ops, seeds := btN(3000), 3
	for _, d := range btDevices(t) {
		t.Run(btDevName(d), func(t *testing.T) {
			for _, budget := range btTierBudgets {
				var sum, ent CacheStats
				rng := rand.New(rand.NewPCG(3, uint64(budget)))
				for seed := range seeds {
					for codec := range btCodecs {
						opts := append(btOptsFor(byte(seed*5+codec)), WithHostCache(budget))
						data := btTierOps(rng, ops)
						var st, et CacheStats
						switch codec {
						case 0:
							st, et = btTierRun(t, d, btCodecU64, opts, data)
						case 1:
							st, et = btTierRun(t, d, btCodecI64, opts, data)
						case 2:
							st, et = btTierRun(t, d, btCodecK12, opts, data)
						case 3:
							st, et = btTierRun(t, d, btCodecSet, opts, data)
						case 4:
							st, et = btTierRun(t, d, btCodecStr, opts, data)
						}
						sum, ent = sum.add(st), ent.add(et)
					}
				}
				if sum.Hits == 0 || sum.Admissions == 0 {
					t.Errorf("budget %d: the tier was not used: %+v", budget, sum)
				}
				// The integer-key codecs (u64, i64-v12, u32-set) have an
				// entry tier.
				if ent.Hits == 0 || ent.Admissions == 0 {
					t.Errorf("budget %d: the entry tier was not used: %+v", budget, ent)
				}
				// The short and invariants runs' trees may fit the smallest
				// tier whole: only the full run is sure to evict.
				if budget == btTierBudgets[0] && sum.Evictions == 0 && !buildconst.Invariants && !testing.Short() {
					t.Errorf("budget %d: nothing evicted: %+v", budget, sum)
				}
			}
			vmemtest.CheckNoLeaks(t, d)
		})
	}
}

// btTierTree is a uint64 tree of n entries (key 2i, value i) with a tier
// of budget bytes.
func btTierTree(t *testing.T, d *vmem.Device, n, budget int, opts ...BTreeOption) *BTree[uint64, uint64] {
	t.Helper()
	tr, err := NewBTreeOrdered[uint64, uint64](d, append(opts, WithHostCache(budget))...)
	if err != nil {
		t.Fatal(err)
	}
	ks, vs := btBenchKeys(n)
	if err := tr.BulkLoad(ks, vs); err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestBTreeTierHits: hot Gets and Ranges are answered by the tier, and a
// write to a cached leaf is seen at once.
func TestBTreeTierHits(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr := btTierTree(t, d, 5000, 1<<20)
		defer tr.Close()
		for range 20 {
			for k := range uint64(200) {
				if v, ok := tr.Get(2 * k); !ok || v != k {
					t.Fatalf("Get(%d) = %d,%v", 2*k, v, ok)
				}
			}
		}
		st := tr.Stats().Cache
		if st.Entries == 0 || st.Hits == 0 || st.Admissions == 0 {
			t.Fatalf("hot Gets did not use the tier: %+v", st)
		}
		if et := tr.et.stats(); et.Entries == 0 || et.Hits == 0 {
			t.Fatalf("hot Gets did not use the entry tier: %+v", et)
		}
		// Writes to cached leaves: the next Get sees them.
		for k := range uint64(200) {
			if _, _, err := tr.ReplaceOrInsert(2*k, k+7); err != nil {
				t.Fatal(err)
			}
			if v, ok := tr.Get(2 * k); !ok || v != k+7 {
				t.Fatalf("Get(%d) after a write = %d,%v", 2*k, v, ok)
			}
			if k%3 == 0 {
				tr.Delete(2 * k)
				if tr.Has(2 * k) {
					t.Fatalf("Has(%d) after Delete", 2*k)
				}
			}
		}
		if err := tr.verify(); err != nil {
			t.Fatal(err)
		}
		// Short scans hit too.
		before := tr.Stats().Cache.Hits
		for range 200 {
			n := 0
			for k, v := range tr.Range(1000, 1200) {
				if v != k/2 {
					t.Fatalf("Range: %d:%d", k, v)
				}
				n++
			}
			if n != 100 {
				t.Fatalf("Range(1000, 1200) yields %d entries", n)
			}
		}
		if tr.Stats().Cache.Hits == before {
			t.Fatal("hot Ranges did not use the tier")
		}
		if err := tr.verify(); err != nil {
			t.Fatal(err)
		}
		// Everything goes at Clear.
		if err := tr.Clear(); err != nil {
			t.Fatal(err)
		}
		if st := tr.Stats().Cache; st.Entries != 0 {
			t.Fatalf("tier holds %d leaves after Clear", st.Entries)
		}
	})
}

// TestBTreeTierFillsFreeWays: the entry tier takes a key at its first miss
// while its set has a free way, as the Map's does
// (TestMapTierFillsFreeWays): the second Get of every key hits.
func TestBTreeTierFillsFreeWays(t *testing.T) {
	defer func(old uint32) { tierHitSample = old }(tierHitSample)
	tierHitSample = 1
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr := btTierTree(t, d, 5000, 8<<20)
		defer tr.Close()
		const n = 1000
		for pass := range 2 {
			for k := range uint64(n) {
				if v, ok := tr.Get(2 * k); !ok || v != k {
					t.Fatalf("pass %d: Get(%d) = %d,%v", pass, 2*k, v, ok)
				}
			}
		}
		st := tr.et.stats()
		if st.Misses != n || st.Hits != n || st.Admissions != n || st.Evictions != 0 {
			t.Fatalf("entry tier after two passes over %d keys: %+v; want every first Get admitted and every second a hit", n, st)
		}
	})
}

// TestBTreeTierDefault: the tier is on by default only on Vulkan, grows
// with the tree there, and is off with a budget of 0.
func TestBTreeTierDefault(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr, err := NewBTreeOrdered[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		st := tr.Stats()
		if on := d.Info().Backend == vmem.BackendVulkan; (st.Cache.Bytes > 0) != on {
			t.Fatalf("%v: default tier bytes %d", d.Info().Backend, st.Cache.Bytes)
		}
		off, err := NewBTreeOrdered[uint64, uint64](d, WithHostCache(0))
		if err != nil {
			t.Fatal(err)
		}
		defer off.Close()
		if b := off.Stats().Cache.Bytes; b != 0 {
			t.Fatalf("WithHostCache(0) made a tier of %d bytes", b)
		}
		if d.Info().Backend != vmem.BackendVulkan || testing.Short() {
			return
		}
		// 1,000,000 entries: 16 MB of leaves want a tier over twice the
		// minimum.
		small := st.Cache.Bytes
		ks, vs := btBenchKeys(1_000_000)
		if err := tr.BulkLoad(ks, vs); err != nil {
			t.Fatal(err)
		}
		st = tr.Stats()
		if st.Cache.Bytes < 2*small {
			t.Fatalf("tier of %d bytes for %d device bytes (it started at %d)", st.Cache.Bytes, st.DeviceBytes, small)
		}
		if st.HostBytes < st.Cache.Bytes {
			t.Fatal("HostBytes leaves out the tier")
		}
	})
}

// TestBTreeTierConcurrent runs 16 readers (Get, Has, Range) side by side
// on a tree with a tiny tier between write phases, against a frozen model
// (run with -race).
func TestBTreeTierConcurrent(t *testing.T) {
	tierAdmitEvery(t)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr, err := NewBTreeOrdered[uint64, uint64](d, btWithExtentLeaves(8), WithHostCache(32<<10))
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		m := map[uint64]uint64{}
		rng := rand.New(rand.NewPCG(12, 13))
		const keys = 8000
		for phase := range 3 {
			for range btN(3000) {
				k := rng.Uint64N(keys)
				if rng.IntN(4) == 0 {
					tr.Delete(k)
					delete(m, k)
					continue
				}
				v := rng.Uint64()
				tr.ReplaceOrInsert(k, v)
				m[k] = v
			}
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for g := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(phase), uint64(g)))
					for i := range btN(1500) {
						k := uint64(keys * math.Pow(r.Float64(), 3)) // hot leaves at the front
						v, ok := tr.Get(k)
						if mv, mok := m[k]; ok != mok || v != mv || tr.Has(k) != mok {
							errs <- fmt.Errorf("Get(%d) = %d,%v; want %d,%v", k, v, ok, mv, mok)
							return
						}
						if i%10 == 0 {
							n, want := 0, 0
							for j := k; j < k+300; j++ {
								if _, ok := m[j]; ok {
									want++
								}
							}
							for kk, vv := range tr.Range(k, k+300) {
								if mv, ok := m[kk]; !ok || mv != vv {
									errs <- fmt.Errorf("Range yields %d:%d", kk, vv)
									return
								}
								n++
							}
							if n != want {
								errs <- fmt.Errorf("Range(%d, %d) yields %d entries, want %d", k, k+300, n, want)
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if err := tr.verify(); err != nil {
				t.Fatal(err)
			}
		}
		if st := tr.Stats().Cache; st.Hits == 0 || st.Evictions == 0 {
			t.Fatalf("the tier was not exercised: %+v", st)
		}
		if st := tr.et.stats(); st.Hits == 0 || st.Admissions == 0 {
			t.Fatalf("the entry tier was not exercised: %+v", st)
		}
	})
}

// TestBTreeTierDeviceLost: once the device is lost, no lookup or scan is
// answered from the tier (each panics), the tier is emptied, and Err says
// why.
func TestBTreeTierDeviceLost(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr := btTierTree(t, d, 2000, 64<<10)
		defer tr.Close()
		for range 5 {
			for k := range uint64(300) {
				tr.Get(2 * k)
			}
			for range tr.Range(0, 200) {
			}
		}
		if tr.Stats().Cache.Entries == 0 || tr.et.entries() == 0 {
			t.Fatalf("nothing admitted: %+v; entry tier %+v", tr.Stats().Cache, tr.et.stats())
		}
		// Writes the tier must drop, then the loss.
		for k := range uint64(50) {
			if _, _, err := tr.ReplaceOrInsert(2*k, 1000+k); err != nil {
				t.Fatal(err)
			}
		}
		kdev(d).InjectFaults(kern.Faults{LoseDevice: true})
		c, e := tr.lv.hot, tr.et
		hits := c.total(cntHits) + e.total(cntHits)
		for k := range uint64(300) {
			mustPanicLost(t, "Get", func() { tr.Get(2 * k) })
			mustPanicLost(t, "Has", func() { tr.Has(2 * k) })
		}
		mustPanicLost(t, "Range", func() {
			for range tr.Range(0, 200) {
			}
		})
		if h := c.total(cntHits) + e.total(cntHits); h != hits {
			t.Fatalf("the tier answered %d lookups after the device was lost", h-hits)
		}
		if n := tr.Stats().Cache.Entries; n != 0 {
			t.Fatalf("the tiers kept %d leaves and entries after the device was lost", n)
		}
		if !errors.Is(tr.Err(), vmem.ErrDeviceLost) {
			t.Fatalf("Err = %v after lookups on a lost device", tr.Err())
		}
	})
}

// TestBTreeTierSharded: the option reaches every shard, and Stats adds the
// shards' tiers up.
func TestBTreeTierSharded(t *testing.T) {
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		s, err := NewBTreeOrdered[uint64, uint64](p, WithHostCache(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ks, vs := btBenchKeys(20000)
		if err := s.BulkLoad(ks, vs); err != nil {
			t.Fatal(err)
		}
		for range 10 {
			for i := range 2000 {
				k := uint64(i * 19 % 40000)
				if v, ok := s.Get(k); ok != (k%2 == 0) || ok && v != k/2 {
					t.Fatalf("Get(%d) = %d,%v", k, v, ok)
				}
			}
		}
		var bytes uint64
		var hits uint64
		for _, st := range s.Stats().Shards {
			if st.Cache.Bytes == 0 {
				t.Fatal("a shard has no tier")
			}
			bytes += st.Cache.Bytes
			hits += st.Cache.Hits
		}
		st := s.Stats()
		if st.Cache.Bytes != bytes || st.Cache.Hits < hits || st.Cache.Hits == 0 {
			t.Fatalf("Stats().Cache = %+v; shards' bytes %d, hits %d", st.Cache, bytes, hits)
		}
	})
}

// btLeafOf returns the id and count of the leaf that holds (or would
// hold) key k.
func btLeafOf[K, V any](tr *BTree[K, V], k K) (uint32, int) {
	var p btPath
	tr.idx.descend(k, &p)
	nd := tr.idx.nodes[p.id[0]]
	return nd.kids[p.ix[0]], int(nd.cnts[p.ix[0]])
}

// TestBTreeTierWrites: writes to leaves the tier holds (overwrites,
// deletes that leave the leaf at least a third full, inserts into the room
// a delete made) take the leaf's image from the tier, not the device, and
// leave the leaf in the tier with its new bytes; a Range after them is
// answered by the tier with the new values. A write to a leaf the tier
// does not hold offers it, as a miss does.
func TestBTreeTierWrites(t *testing.T) {
	tierAdmitEvery(t)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr := btTierTree(t, d, 5000, 1<<20)
		defer tr.Close()
		const lo, hi = 2000, 2400 // keys 2000..2398: values 1000..1199
		rangeOnce := func(want func(k uint64) (uint64, bool)) {
			t.Helper()
			n := 0
			for k, v := range tr.Range(lo, hi) {
				if w, ok := want(k); !ok || v != w {
					t.Fatalf("Range: key %d value %d, want %d (present %v)", k, v, w, ok)
				}
				n++
			}
			for k := uint64(lo); k < hi; k += 2 {
				if _, ok := want(k); ok {
					n--
				}
			}
			if n != 0 {
				t.Fatalf("Range yields %d entries more than the model", n)
			}
		}
		model := map[uint64]uint64{}
		for k := uint64(lo); k < hi; k += 2 {
			model[k] = k / 2
		}
		want := func(k uint64) (uint64, bool) { v, ok := model[k]; return v, ok }
		for range 4 {
			rangeOnce(want)
		}
		held := func(k uint64) bool {
			id, cnt := btLeafOf(tr, k)
			return tr.tierHolds(id, cnt)
		}
		for k := uint64(lo); k < hi; k += 2 {
			if !held(k) {
				t.Fatalf("key %d's leaf is not in the tier after four Ranges over it", k)
			}
		}
		reads := tr.imgReads
		r := rand.New(rand.NewPCG(1, 2))
		for i := range 300 {
			k := uint64(lo) + 2*uint64(r.IntN((hi-lo)/2))
			id, cnt := btLeafOf(tr, k)
			_, present := model[k]
			switch {
			case !present:
				if cnt == tr.g.cap {
					continue // a full leaf splits or shares: not this test's path
				}
				model[k] = uint64(i)
				if _, _, err := tr.ReplaceOrInsert(k, uint64(i)); err != nil {
					t.Fatal(err)
				}
			case i%3 == 0 && cnt-1 >= tr.minLeaf():
				delete(model, k)
				if _, ok, err := tr.Delete(k); err != nil || !ok {
					t.Fatalf("Delete(%d) = %v, %v", k, ok, err)
				}
			default:
				model[k] = uint64(i)
				if _, _, err := tr.ReplaceOrInsert(k, uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			if nid, ncnt := btLeafOf(tr, k); nid != id || !tr.tierHolds(nid, ncnt) {
				t.Fatalf("write %d of key %d: leaf %d (now %d, %d entries) left the tier", i, k, id, nid, ncnt)
			}
		}
		if id, _ := btLeafOf(tr, lo); tr.lv.extentOf(id).Kind != access.Direct && tr.imgReads != reads {
			t.Fatalf("writes to leaves in the tier read %d leaf images from the device", tr.imgReads-reads)
		}
		if err := tr.verify(); err != nil {
			t.Fatal(err)
		}
		m0, h0 := tr.lv.hot.total(cntMisses), tr.lv.hot.total(cntHits)
		rangeOnce(want)
		if tr.lv.hot.total(cntMisses) != m0 || tr.lv.hot.total(cntHits) == h0 {
			t.Fatalf("a Range over the written leaves missed the tier (misses %d -> %d, hits %d -> %d)",
				m0, tr.lv.hot.total(cntMisses), h0, tr.lv.hot.total(cntHits))
		}
		// A leaf the tier does not hold is offered by a write (every offer
		// admitted here) and then held.
		cold := uint64(8000)
		if held(cold) {
			t.Fatalf("key %d's leaf is in the tier before any read of it", cold)
		}
		if _, _, err := tr.ReplaceOrInsert(cold, 1); err != nil {
			t.Fatal(err)
		}
		if !held(cold) {
			t.Fatalf("a write of key %d did not offer its leaf to the tier", cold)
		}
		if err := tr.verify(); err != nil {
			t.Fatal(err)
		}
	})
}
