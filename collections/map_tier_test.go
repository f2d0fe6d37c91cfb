package collections

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// tierBudgets are the tier sizes the differential tests run with: two
// sets (every admission evicts), a few dozen sets, and a tier that holds
// the whole map.
var tierBudgets = []int{1, 4 << 10, 1 << 20}

// tierSetsBudget returns a budget of about n sets for slot size slot.
func tierSetsBudget(n int, slot uintptr) int {
	return n*int(tierHdr+tierWays*slot+tierWays*tierSketchPer) + tierFixedBytes
}

// tierRun runs the map differential with hot keys: a skewed choice of keys
// makes the tier admit, hit and evict constantly.
func tierRun[K comparable, V comparable](t *testing.T, x *mapDiff[K, V], steps int, keys []K) {
	t.Helper()
	r := x.r
	for step := 0; step < steps; step++ {
		k := keys[int(float64(len(keys))*math.Pow(r.Float64(), 3))] // skewed to the front
		switch op := r.IntN(100); {
		case op < 60:
			x.get(k)
		case op < 75:
			x.put(k, x.genV(r))
		case op < 82:
			x.del(k)
		case op < 84:
			x.putMany(r.IntN(20))
		case op < 85:
			x.putMany(tierBatchDrop + 1 + r.IntN(100))
		case op < 87:
			x.getMany(r.IntN(50))
		case op < 88:
			x.compare()
		case op < 89:
			if r.IntN(10) == 0 {
				x.m.Clear()
				clear(x.model)
			}
		default:
			x.get(x.genK(r))
		}
		if step%97 == 0 && x.m.Len() != len(x.model) {
			t.Fatalf("step %d: Len = %d, want %d", step, x.m.Len(), len(x.model))
		}
	}
	x.compare()
}

func tierKeys[K comparable](r *rand.Rand, gen func(*rand.Rand) K, n int) []K {
	ks := make([]K, n)
	for i := range ks {
		ks[i] = gen(r)
	}
	return ks
}

// TestMapTierDifferential checks maps with a hot tier against Go maps, on
// every backend, for every kind of slot, with tiers from two sets (every
// admission evicts) to larger than the map.
func TestMapTierDifferential(t *testing.T) {
	steps := mapSteps(6000, 1500)
	tierAdmitEvery(t) // every miss admits its key: constant eviction in small tiers
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, budget := range tierBudgets {
			t.Run(fmt.Sprint("budget=", budget), func(t *testing.T) {
				t.Run("u64", func(t *testing.T) {
					b := max(budget, tierSetsBudget(2, 16))
					x := newMapDiff(t, d, 1, genU64(3000), func(r *rand.Rand) uint64 { return r.Uint64() }, WithHostCache(b))
					defer x.close()
					tierRunChecked(t, x, steps, tierKeys(x.r, x.genK, 500), budget)
				})
				t.Run("str-u64", func(t *testing.T) {
					b := max(budget, tierSetsBudget(2, tierStrSlot))
					x := newMapDiff(t, d, 2, genStr(3000, 150), func(r *rand.Rand) uint64 { return r.Uint64() }, WithHostCache(b))
					defer x.close()
					tierRunChecked(t, x, steps, tierKeys(x.r, x.genK, 500), budget)
				})
				t.Run("u64-str", func(t *testing.T) {
					b := max(budget, tierSetsBudget(2, tierStrSlot))
					x := newMapDiff(t, d, 3, genU64(3000), genVStr(150), WithHostCache(b))
					defer x.close()
					tierRun(t, x, steps, tierKeys(x.r, x.genK, 500))
				})
				t.Run("str-str", func(t *testing.T) {
					b := max(budget, tierSetsBudget(2, tierStrSlot))
					x := newMapDiff(t, d, 4, genStr(3000, 80), genVStr(60), WithHostCache(b))
					defer x.close()
					tierRun(t, x, steps, tierKeys(x.r, x.genK, 500))
				})
				t.Run("float", func(t *testing.T) {
					// 0 and -0 are one key; NaN is never found.
					gen := func(r *rand.Rand) float64 {
						switch r.IntN(20) {
						case 0:
							return math.Copysign(0, -1)
						case 1:
							return 0
						case 2:
							return math.NaN()
						}
						return float64(r.IntN(2000)) / 4
					}
					b := max(budget, tierSetsBudget(2, 16))
					x := newMapDiff(t, d, 5, gen, func(r *rand.Rand) uint64 { return r.Uint64() }, WithHostCache(b))
					defer x.close()
					tierRun(t, x, steps, tierKeys(x.r, x.genK, 300))
				})
				t.Run("struct", func(t *testing.T) {
					gen := func(r *rand.Rand) mapPadded {
						return mapPadded{A: uint8(r.IntN(8)), B: uint32(r.IntN(300)), C: uint16(r.IntN(3))}
					}
					genV := func(r *rand.Rand) mapBig { var b mapBig; b[r.IntN(100)] = byte(r.Uint32()); return b }
					b := max(budget, tierSetsBudget(2, 128))
					x := newMapDiff(t, d, 6, gen, genV, WithHostCache(b))
					defer x.close()
					tierRun(t, x, steps, tierKeys(x.r, x.genK, 300))
				})
			})
		}
	})
}

// tierCheckStats checks that a tier did its work in a skewed run: hits,
// admissions, and evictions where it is smaller than the keys.
// tierRunChecked is tierRun, then tierCheckStats. A tier of two sets
// evicts once a set is full and a key beats its victim, which depends on
// the map's random hash seed: after a short run it sometimes had not yet
// (two runs of the package's tier tests in a hundred), so a small tier
// runs on, up to ten times as long, until it has.
func tierRunChecked[K comparable, V comparable](t *testing.T, x *mapDiff[K, V], steps int, keys []K, budget int) {
	t.Helper()
	tierRun(t, x, steps, keys)
	for i := 0; i < 10 && budget == 1 && x.m.Stats().Cache.Evictions == 0; i++ {
		tierRun(t, x, steps, keys)
	}
	tierCheckStats(t, x.m.Stats().Cache, budget)
}

func tierCheckStats(t *testing.T, s CacheStats, budget int) {
	t.Helper()
	if s.Capacity == 0 || s.Bytes == 0 {
		t.Fatalf("no tier: %+v", s)
	}
	if s.Admissions == 0 || s.Misses == 0 || s.Hits == 0 {
		t.Fatalf("the tier was not used: %+v", s)
	}
	if budget == 1 && s.Evictions == 0 {
		t.Fatalf("a small tier evicted nothing: %+v", s)
	}
	if s.Entries > s.Capacity {
		t.Fatalf("%d entries in a tier of %d", s.Entries, s.Capacity)
	}
}

// TestMapTierDefault: the tier is on by default where the table is in
// device memory, off on the host backend, off with WithHostCache(0), and
// grows with the table.
func TestMapTierDefault(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if on := m.tier != nil; on != (d.Info().Backend == vmem.BackendVulkan) {
			t.Fatalf("default tier on = %v on %v", on, d.Info().Backend)
		}
		off, _ := NewMap[uint64, uint64](d, WithHostCache(0))
		defer off.Close()
		if off.tier != nil {
			t.Fatal("WithHostCache(0) made a tier")
		}
		if m.tier == nil {
			return
		}
		small := m.Stats().Cache.Capacity
		ks := make([]uint64, 200000)
		for i := range ks {
			ks[i] = uint64(i)
		}
		for i := range 1000 {
			m.Put(uint64(i), uint64(i))
		}
		for range 3 {
			for i := range 1000 {
				m.Get(uint64(i))
			}
		}
		if err := m.putMany(ks, ks); err != nil {
			t.Fatal(err)
		}
		st := m.Stats()
		if st.Cache.Capacity <= small {
			t.Fatalf("the tier did not grow with the table: %d then %d entries", small, st.Cache.Capacity)
		}
		if st.Cache.Bytes > st.DeviceBytes/tierDefaultDiv+tierMinBytes {
			t.Fatalf("tier of %d bytes for %d device bytes", st.Cache.Bytes, st.DeviceBytes)
		}
		for i := range 1000 {
			if v, ok := m.Get(uint64(i)); !ok || v != uint64(i) {
				t.Fatalf("Get(%d) = %d, %v after growth", i, v, ok)
			}
		}
	})
}

// TestMapTierConcurrent: readers from many goroutines admit and hit at
// once, between rounds of writes; every answer is checked.
func TestMapTierConcurrent(t *testing.T) {
	rounds := mapSteps(12, 4)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, str := range []bool{false, true} {
			t.Run(fmt.Sprint("str=", str), func(t *testing.T) {
				m, err := NewMap[string, uint64](d, WithHostCache(tierSetsBudget(8, tierStrSlot)))
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				key := func(i int) string {
					if str {
						return fmt.Sprintf("https://example.com/%d/%s", i, strings.Repeat("x", i%70))
					}
					return fmt.Sprint(i)
				}
				const n = 2000
				want := make([]uint64, n)
				for i := range n {
					want[i] = uint64(i)
					m.Put(key(i), want[i])
				}
				for round := range rounds {
					var wg sync.WaitGroup
					for g := range 16 {
						wg.Go(func() {
							r := rand.New(rand.NewPCG(uint64(g), uint64(round)))
							for range 3000 {
								i := int(float64(n) * math.Pow(r.Float64(), 4))
								v, ok := m.Get(key(i))
								if want[i] == math.MaxUint64 {
									if ok {
										t.Errorf("round %d: Get(%d) = %d, deleted", round, i, v)
										return
									}
								} else if !ok || v != want[i] {
									t.Errorf("round %d: Get(%d) = %d, %v; want %d", round, i, v, ok, want[i])
									return
								}
							}
						})
					}
					wg.Wait()
					r := rand.New(rand.NewPCG(99, uint64(round)))
					for range 300 {
						i := int(float64(n) * math.Pow(r.Float64(), 4))
						if r.IntN(5) == 0 {
							m.Delete(key(i))
							want[i] = math.MaxUint64
						} else {
							want[i] = r.Uint64N(1 << 60)
							m.Put(key(i), want[i])
						}
					}
				}
				if s := m.Stats().Cache; s.Hits == 0 || s.Evictions == 0 {
					t.Fatalf("tier not exercised: %+v", s)
				}
			})
		}
	})
}

// TestMapTierDeviceLost: once the device is lost, the tier answers
// nothing: Gets go to the device path and Err reports the loss.
func TestMapTierDeviceLost(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[uint64, uint64](d, WithHostCache(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		for i := range uint64(500) {
			m.Put(i, i)
		}
		for range 3 {
			for i := range uint64(500) {
				m.Get(i)
			}
		}
		if m.Stats().Cache.Entries == 0 {
			t.Fatal("nothing admitted")
		}
		// Puts the tier takes at once and the device later (recorded on a
		// GPU), then the loss.
		for i := range uint64(100) {
			m.Put(i, i+1000)
		}
		kdev(d).InjectFaults(kern.Faults{LoseDevice: true})
		hits := m.tier.total(cntHits)
		for i := range uint64(500) {
			mustPanicLost(t, "Get", func() { m.Get(i) })
		}
		if h := m.tier.total(cntHits); h != hits {
			t.Fatalf("the tier answered %d Gets after the device was lost", h-hits)
		}
		if m.Stats().Cache.Entries != 0 {
			t.Fatal("the tier kept entries after the device was lost")
		}
		if !errors.Is(m.Err(), vmem.ErrDeviceLost) {
			t.Fatalf("Err = %v after Gets on a lost device", m.Err())
		}
	})
}

// TestMapTierFailedWriteBack: recorded Puts the tier took but the table
// never got (their batch failed) are not answered from the tier.
func TestMapTierFailedWriteBack(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[uint64, uint64](d, WithHostCache(64<<10), WithCapacity(10000))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if m.wb.off {
			t.Skip("Puts are not deferred on this backend")
		}
		for i := range uint64(1000) {
			m.Put(i, i)
		}
		for range 3 {
			for i := range uint64(1000) {
				m.Get(i)
			}
		}
		mapWBFail = vmem.ErrDeviceLost
		defer func() { mapWBFail = nil }()
		for i := range uint64(1000) {
			m.Put(i, i+1)
		}
		if err := m.flushForRead(); err == nil {
			t.Fatal("the write-back did not fail")
		}
		if n := m.Stats().Cache.Entries; n != 0 {
			t.Fatalf("%d entries left in the tier after a failed write-back", n)
		}
	})
}

// TestMapTierScanResistant: a pass over many keys read once does not
// displace a hot set that fits the tier.
func TestMapTierScanResistant(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[uint64, uint64](d, WithHostCache(tierSetsBudget(64, 16)))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ks := make([]uint64, 100000)
		for i := range ks {
			ks[i] = uint64(i)
		}
		m.putMany(ks, ks)
		hot := 64 * tierWays / 4
		for range 20 {
			for i := range hot {
				m.Get(uint64(i))
			}
		}
		for i := hot; i < len(ks); i++ {
			m.Get(uint64(i)) // each once, the hot keys still in use
			if i%4 == 0 {
				m.Get(uint64(i / 4 % hot))
			}
		}
		before := m.tier.total(cntMisses)
		for i := range hot {
			m.Get(uint64(i))
		}
		if missed := int(m.tier.total(cntMisses) - before); missed > hot/10 {
			t.Fatalf("%d of %d hot keys missed after a scan", missed, hot)
		}
	})
}

// A tier with free ways takes a key at its first miss: it displaces
// nothing, so a tier larger than what has been read fills at once (a key
// must be missed twice only to displace an entry). The second read of
// every key hits, with the default admission settings. The tiers have
// thousands of sets for the thousand keys, so that no set is asked for
// more than its eight ways.
func TestMapTierFillsFreeWays(t *testing.T) {
	defer func(old uint32) { tierHitSample = old }(tierHitSample)
	tierHitSample = 1
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		const n = 1000
		t.Run("u64", func(t *testing.T) {
			ks := make([]uint64, n)
			for i := range ks {
				ks[i] = uint64(i) * 7919
			}
			tierFillCheck(t, d, ks, func(k uint64) uint64 { return k + 1 })
		})
		t.Run("string", func(t *testing.T) {
			ks := make([]string, n)
			for i := range ks {
				ks[i] = fmt.Sprintf("https://example.com/item/%d", i)
			}
			tierFillCheck(t, d, ks, func(k string) uint64 { return uint64(len(k)) })
		})
	})
}

func tierFillCheck[K comparable](t *testing.T, d *vmem.Device, ks []K, val func(K) uint64) {
	t.Helper()
	m, err := NewMap[K, uint64](d, WithHostCache(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	vs := make([]uint64, len(ks))
	for i, k := range ks {
		vs[i] = val(k)
	}
	if err := m.PutBatch(ks, vs); err != nil {
		t.Fatal(err)
	}
	for pass := range 2 {
		for i, k := range ks {
			if v, ok := m.Get(k); !ok || v != vs[i] {
				t.Fatalf("pass %d: Get(%v) = %d, %v; want %d", pass, k, v, ok, vs[i])
			}
		}
	}
	st := m.Stats().Cache
	if st.Misses != uint64(len(ks)) || st.Hits != uint64(len(ks)) {
		t.Fatalf("two passes over %d keys: %d hits, %d misses; want every first read to miss and every second to hit", len(ks), st.Hits, st.Misses)
	}
	if st.Admissions != uint64(len(ks)) || st.Evictions != 0 {
		t.Fatalf("%d admissions, %d evictions; want %d and 0", st.Admissions, st.Evictions, len(ks))
	}
}

// tierAdmitEvery makes every miss offer its key, admitted from its first
// count, and counts every hit, until the test ends.
func tierAdmitEvery(tb testing.TB) {
	n, sp, hs, a := tierAdmitSample, tierAdmitSparse, tierHitSample, tierAdmitMin
	tb.Cleanup(func() { tierAdmitSample, tierAdmitSparse, tierHitSample, tierAdmitMin = n, sp, hs, a })
	tierAdmitSample, tierAdmitSparse, tierHitSample, tierAdmitMin = 1, 1, 1, 1
}

// TestTierEqualString compares keys of every length up to 40 with slot
// bytes that hold them, followed by bytes that are not part of the key,
// and with slots that differ in each byte.
func TestTierEqualString(t *testing.T) {
	var slot [48 + 8]uint64 // 8-byte aligned, as slots are
	b := unsafe.Slice((*byte)(unsafe.Pointer(&slot[0])), len(slot)*8)
	for n := 0; n <= 40; n++ {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte('a' + (i*7+n)%26)
		}
		for i := range b {
			b[i] = 0xA5 // what lies past the key must not count
		}
		copy(b, key)
		s := string(key)
		if !tierEqualString(unsafe.Pointer(&slot[0]), s) {
			t.Fatalf("len %d: equal key reported different", n)
		}
		for i := range n {
			b[i] ^= 0x20
			if tierEqualString(unsafe.Pointer(&slot[0]), s) {
				t.Fatalf("len %d: a difference in byte %d not seen", n, i)
			}
			b[i] ^= 0x20
		}
	}
}
