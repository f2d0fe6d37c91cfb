package collections

import (
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/btree"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestBTreeDifferential runs random operation streams, every codec and
// tree shape, on every device, against google/btree.
func TestBTreeDifferential(t *testing.T) {
	ops, seeds := 1500, 8
	if testing.Short() {
		ops, seeds = 400, 4
	}
	if buildconst.Invariants {
		seeds = 2
	}
	for _, d := range btDevices(t) {
		t.Run(btDevName(d), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			for seed := range seeds {
				for codec := range btCodecs {
					data := append([]byte{byte(codec), byte(seed*3 + codec)}, btRandomOps(rng, ops)...)
					btRunAll(t, d, data)
				}
			}
			vmemtest.CheckNoLeaks(t, d)
		})
	}
}

// btN shrinks a test size for -short and more for the invariants build,
// which walks the whole tree after every write.
func btN(n int) int {
	if testing.Short() {
		n /= 4
	}
	if buildconst.Invariants {
		n = max(n/40, 200)
	}
	return n
}

func btDevName(d *vmem.Device) string {
	if d.Info().Tiers[vmem.Mapped].Limit > 0 {
		return string(d.Info().Backend) + "-spill"
	}
	return string(d.Info().Backend)
}

// btTake returns seq's entries, breaking out of the loop before the first
// key for which until (if not nil) holds and after limit entries (limit
// < 0: all), where a google/btree callback would return false.
func btTake(seq iter.Seq2[uint64, uint64], until func(uint64) bool, limit int) []btItem {
	var out []btItem
	for k, v := range seq {
		if until != nil && until(k) {
			break
		}
		out = append(out, btItem{k, v})
		if limit >= 0 && len(out) >= limit {
			break
		}
	}
	return out
}

// btModelEqual compares the whole tree with the model.
func btModelEqual(t *testing.T, tr *BTree[uint64, uint64], m *btree.BTreeG[btItem]) {
	t.Helper()
	var got []btItem
	for k, v := range tr.All() {
		got = append(got, btItem{k, v})
	}
	var want []btItem
	m.Ascend(func(it btItem) bool { want = append(want, it); return true })
	if !slices.Equal(got, want) {
		t.Fatalf("tree holds %d entries, model %d", len(got), len(want))
	}
	if tr.Len() != m.Len() {
		t.Fatalf("Len %d, model %d", tr.Len(), m.Len())
	}
	if err := tr.verify(); err != nil {
		t.Fatal(err)
	}
}

// TestBTreeLarge grows a default-shaped tree past several extents with
// random inserts, then deletes most of it, comparing throughout.
func TestBTreeLarge(t *testing.T) {
	n := btN(60000)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr, err := NewBTreeOrdered[uint64, uint64](d, btWithExtentLeaves(8))
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		m := btree.NewG(32, btItemLess)
		rng := rand.New(rand.NewPCG(3, 4))
		for i := range n {
			k := rng.Uint64N(uint64(4 * n))
			if _, _, err := tr.ReplaceOrInsert(k, uint64(i)); err != nil {
				t.Fatal(err)
			}
			m.ReplaceOrInsert(btItem{k, uint64(i)})
		}
		btModelEqual(t, tr, m)
		st := tr.Stats()
		if st.Extents < 2 {
			t.Errorf("%d extents: the extent split path was not taken", st.Extents)
		}
		for range 200 {
			a := rng.Uint64N(uint64(4 * n))
			var want []btItem
			got := btTake(tr.Range(a, a+500), nil, -1)
			m.AscendRange(btItem{k: a}, btItem{k: a + 500}, func(it btItem) bool { want = append(want, it); return true })
			if !slices.Equal(got, want) {
				t.Fatalf("Range(%d): %d items, model %d", a, len(got), len(want))
			}
		}
		for i := range n {
			k := rng.Uint64N(uint64(4 * n))
			if i%3 == 0 {
				if _, _, _, err := tr.DeleteMin(); err != nil {
					t.Fatal(err)
				}
				m.DeleteMin()
				continue
			}
			_, ok, err := tr.Delete(k)
			if err != nil {
				t.Fatal(err)
			}
			if _, mok := m.Delete(btItem{k: k}); ok != mok {
				t.Fatalf("Delete(%d) = %v, model %v", k, ok, mok)
			}
		}
		btModelEqual(t, tr, m)
	})
}

// TestBTreeBulkLoad loads sorted entries, checks them, then mixes random
// changes into the bulk-loaded leaves.
func TestBTreeBulkLoad(t *testing.T) {
	n := btN(100000)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for oi, opts := range [][]BTreeOption{nil, {btWithExtentLeaves(16)}, {WithBTreeTier(vmem.Private)}} {
			tr, err := NewBTreeOrdered[uint64, uint64](d, opts...)
			if err != nil {
				t.Fatal(err)
			}
			keys := make([]uint64, n)
			vals := make([]uint64, n)
			m := btree.NewG(32, btItemLess)
			for i := range n {
				keys[i], vals[i] = uint64(i)*3+1, uint64(i)
				m.ReplaceOrInsert(btItem{keys[i], vals[i]})
			}
			bad := slices.Clone(keys)
			bad[n/2], bad[n/2+1] = bad[n/2+1], bad[n/2]
			if err := tr.BulkLoad(bad, vals); !errors.Is(err, ErrUnsorted) {
				t.Fatalf("unsorted BulkLoad: %v", err)
			}
			if tr.Len() != 0 || tr.Stats().DeviceBytes != 0 {
				t.Fatalf("failed BulkLoad left %d entries, %d bytes", tr.Len(), tr.Stats().DeviceBytes)
			}
			if err := tr.BulkLoad(keys[:n/2], vals[:n/2]); err != nil {
				t.Fatal(err)
			}
			if err := tr.BulkLoad(keys[n/2:], vals[n/2:]); err != nil {
				t.Fatal(err)
			}
			if err := tr.BulkLoad(keys[:1], vals[:1]); !errors.Is(err, ErrUnsorted) {
				t.Fatalf("BulkLoad below the maximum: %v", err)
			}
			btModelEqual(t, tr, m)
			st := tr.Stats()
			if st.Fill < 0.99 && n >= 20000 {
				t.Errorf("bulk-loaded fill %.2f", st.Fill)
			}
			// Extents of 16 leaves cost 100 bytes of bookkeeping per 8
			// KiB: the bound is for the default shape, and for the index
			// (the hot tier is a budget of its own).
			if per := float64(st.HostBytes-st.Cache.Bytes) / float64(st.Len); per > 1 && n >= 100000 && oi == 0 {
				t.Errorf("host memory %.2f bytes per entry (%+v)", per, st)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			for i := range n / 8 {
				k := rng.Uint64N(uint64(3 * n))
				if i%2 == 0 {
					tr.ReplaceOrInsert(k, k)
					m.ReplaceOrInsert(btItem{k, k})
				} else {
					tr.Delete(k)
					m.Delete(btItem{k: k})
				}
			}
			btModelEqual(t, tr, m)
			for range 100 {
				k := rng.Uint64N(uint64(3 * n))
				v, ok := tr.Get(k)
				mv, mok := m.Get(btItem{k: k})
				if ok != mok || v != mv.v {
					t.Fatalf("Get(%d) = %d,%v; model %d,%v", k, v, ok, mv.v, mok)
				}
			}
			tr.Close()
		}
	})
}

// TestBTreeAscendingInserts checks that appending in key order packs
// leaves and index nodes full (the right-edge split).
func TestBTreeAscendingInserts(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr, err := NewBTreeOrdered[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		for i := range uint64(btN(20000)) {
			tr.ReplaceOrInsert(i, i)
		}
		if st := tr.Stats(); st.Fill < 0.95 && tr.Len() >= 5000 {
			t.Errorf("fill after ascending inserts %.2f", st.Fill)
		}
		if err := tr.verify(); err != nil {
			t.Fatal(err)
		}
		i := uint64(0)
		for k, v := range tr.All() {
			if k != i || v != i {
				t.Fatalf("entry %d is %d:%d", i, k, v)
			}
			i++
		}
	})
}

// TestBTreeOutOfMemory fails every allocation in turn and checks that the
// failing call reports vmem.ErrOutOfMemory and leaves the tree as it was.
func TestBTreeOutOfMemory(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, opts := range [][]BTreeOption{
			{btWithLeafEntries(4), btWithExtentLeaves(4), btWithFan(4)},
			nil,
		} {
			tr, err := NewBTreeOrdered[uint64, uint64](d, opts...)
			if err != nil {
				t.Fatal(err)
			}
			m := btree.NewG(8, btItemLess)
			rng := rand.New(rand.NewPCG(8, 9))
			failures := 0
			for i := range btN(3000) {
				if i%7 == 0 {
					kdev(d).InjectFaults(kern.Faults{FailAlloc: 1})
				}
				k := rng.Uint64N(5000)
				_, _, err := tr.ReplaceOrInsert(k, uint64(i))
				if err != nil {
					if !errors.Is(err, vmem.ErrOutOfMemory) {
						t.Fatal(err)
					}
					failures++
					kdev(d).InjectFaults(kern.Faults{})
					btModelEqual(t, tr, m)
					continue
				}
				m.ReplaceOrInsert(btItem{k, uint64(i)})
			}
			kdev(d).InjectFaults(kern.Faults{})
			if failures == 0 {
				t.Error("no allocation failed")
			}
			keys := make([]uint64, 5000)
			for i := range keys {
				keys[i] = 10000 + uint64(i)
			}
			kdev(d).InjectFaults(kern.Faults{FailAlloc: 1})
			if err := tr.BulkLoad(keys, keys); !errors.Is(err, vmem.ErrOutOfMemory) {
				t.Fatalf("BulkLoad with a failing allocation: %v", err)
			}
			kdev(d).InjectFaults(kern.Faults{})
			btModelEqual(t, tr, m)
			tr.Close()
		}
	})
}

// TestBTreeDeviceLost makes a transfer fail on a tree whose leaves go by
// DMA: the error surfaces, and the tree can still be closed without leaks.
func TestBTreeDeviceLost(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		if d.Info().Tiers[vmem.Private].Available == false {
			t.Skip("no private tier")
		}
		tr, err := NewBTreeOrdered[uint64, uint64](d, WithBTreeTier(vmem.Private), btWithLeafEntries(4))
		if err != nil {
			t.Fatal(err)
		}
		for i := range uint64(50) {
			if _, _, err := tr.ReplaceOrInsert(i, i); err != nil {
				t.Fatal(err)
			}
		}
		kdev(d).InjectFaults(kern.Faults{FailSubmit: 1})
		if _, _, err := tr.ReplaceOrInsert(100, 1); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("insert on a lost device: %v", err)
		}
		mustPanicLost(t, "Get", func() { tr.Get(3) })
		if !errors.Is(tr.Err(), vmem.ErrDeviceLost) {
			t.Errorf("Err() = %v", tr.Err())
		}
		mustPanicLost(t, "All", func() {
			for range tr.All() {
			}
		})
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestBTreeConcurrentReaders runs readers side by side between write
// phases (run with -race).
func TestBTreeConcurrentReaders(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr, err := NewBTreeOrdered[uint64, uint64](d, btWithExtentLeaves(8))
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		m := map[uint64]uint64{}
		rng := rand.New(rand.NewPCG(10, 11))
		for phase := range 4 {
			for range btN(2000) {
				k := rng.Uint64N(8000)
				v := rng.Uint64()
				if rng.IntN(4) == 0 {
					tr.Delete(k)
					delete(m, k)
					continue
				}
				tr.ReplaceOrInsert(k, v)
				m[k] = v
			}
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(phase), uint64(g)))
					for i := range 300 {
						k := r.Uint64N(8000)
						v, ok := tr.Get(k)
						if mv, mok := m[k]; ok != mok || v != mv {
							errs <- fmt.Errorf("Get(%d) = %d,%v; want %d,%v", k, v, ok, mv, mok)
							return
						}
						if i%50 == 0 {
							n := 0
							prev := uint64(0)
							for k, v := range tr.Range(k, k+1000) {
								if m[k] != v || (n > 0 && k <= prev) {
									errs <- fmt.Errorf("Range yields %d:%d", k, v)
									return
								}
								prev = k
								n++
							}
						}
					}
					if tr.Len() != len(m) {
						errs <- fmt.Errorf("Len %d, want %d", tr.Len(), len(m))
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		}
	})
}

// TestBTreeTypes checks the constructor's type rules.
func TestBTreeTypes(t *testing.T) {
	d := vmemtest.Open(t, vmem.BackendHost, vmem.Options{})
	if tr, err := NewBTreeOrdered[string, uint64](d); err != nil {
		t.Errorf("string keys: %v", err)
	} else {
		tr.Close()
	}
	if _, err := NewBTree[[2]string, uint64](d, func(a, b [2]string) bool { return a[0] < b[0] }); !errors.Is(err, vmem.ErrPointerType) {
		t.Errorf("keys holding strings: %v", err)
	}
	if tr, err := NewBTreeOrdered[uint64, string](d); err != nil {
		t.Errorf("string values: %v", err)
	} else {
		tr.Close()
	}
	type withPtr struct {
		A int
		P *int
	}
	if _, err := NewBTreeOrdered[int, withPtr](d); !errors.Is(err, vmem.ErrPointerType) || !strings.Contains(err.Error(), "P") {
		t.Errorf("pointer values: %v", err)
	}
	if _, err := NewBTree[uint64, uint64](d, nil); err == nil {
		t.Error("nil less accepted")
	}
	if _, err := NewBTreeOrdered[uint64, uint64](d, btWithLeafEntries(1000)); err == nil {
		t.Error("1000 entries per leaf accepted")
	}
}

// TestBTreeClosed checks use after Close.
func TestBTreeClosed(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr, err := NewBTreeOrdered[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		tr.ReplaceOrInsert(1, 1)
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := tr.ReplaceOrInsert(2, 2); !errors.Is(err, vmem.ErrClosed) {
			t.Errorf("ReplaceOrInsert after Close: %v", err)
		}
		if _, _, err := tr.Delete(1); !errors.Is(err, vmem.ErrClosed) {
			t.Errorf("Delete after Close: %v", err)
		}
		if err := tr.BulkLoad([]uint64{5}, []uint64{5}); !errors.Is(err, vmem.ErrClosed) {
			t.Errorf("BulkLoad after Close: %v", err)
		}
		if tr.Len() != 0 {
			t.Errorf("Len after Close: %d", tr.Len())
		}
		for name, f := range map[string]func(){
			"Get":     func() { tr.Get(1) },
			"Min":     func() { tr.Min() },
			"Ascend":  func() { btTake(tr.Ascend(0), nil, -1) },
			"Descend": func() { btTake(tr.Descend(9), nil, -1) },
		} {
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Close") {
						t.Errorf("%s after Close: panic %v", name, r)
					}
				}()
				f()
			}()
		}
	})
}

// TestBTreeStringValues checks string values: stored in the arena, freed
// on delete and replace, all or nothing when memory runs out (the device's
// tiers are capped so that it does).
func TestBTreeStringValues(t *testing.T) {
	lim := [3]uint64{vmem.Mapped: 192 << 10, vmem.Private: 128 << 10}
	vmemtest.Each(t, vmem.Options{ChunkSize: 64 << 10, Limits: lim}, func(t *testing.T, d *vmem.Device) {
		tr, err := NewBTreeOrdered[int32, string](d, btWithLeafEntries(8))
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		m := map[int32]string{}
		rng := rand.New(rand.NewPCG(12, 13))
		val := func(i int) string { return strings.Repeat(fmt.Sprint(i), 1+i%60) }
		ooms := 0
		for i := range btN(4000) {
			k := int32(rng.IntN(2000)) - 1000
			if i%9 == 0 {
				kdev(d).InjectFaults(kern.Faults{FailAlloc: 1})
			}
			switch rng.IntN(4) {
			case 0:
				old, ok, err := tr.Delete(k)
				if err != nil {
					t.Fatal(err)
				}
				if mv, mok := m[k]; ok != mok || old != mv {
					t.Fatalf("Delete(%d) = %q,%v; want %q,%v", k, old, ok, mv, mok)
				}
				delete(m, k)
			default:
				v := val(i)
				old, rep, err := tr.ReplaceOrInsert(k, v)
				if errors.Is(err, vmem.ErrOutOfMemory) {
					ooms++
					kdev(d).InjectFaults(kern.Faults{})
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if mv, mok := m[k]; rep != mok || old != mv {
					t.Fatalf("ReplaceOrInsert(%d) = %q,%v; want %q,%v", k, old, rep, mv, mok)
				}
				m[k] = v
			}
		}
		kdev(d).InjectFaults(kern.Faults{})
		if ooms == 0 && !buildconst.Invariants {
			t.Error("no allocation failed")
		}
		n := 0
		for k, v := range tr.All() {
			if m[k] != v {
				t.Fatalf("entry %d = %q, want %q", k, v, m[k])
			}
			n++
		}
		if n != len(m) || tr.Len() != len(m) {
			t.Fatalf("%d entries, Len %d, want %d", n, tr.Len(), len(m))
		}
		live := 0
		for _, v := range m {
			if v != "" {
				live++
			}
		}
		if st := tr.arena.Stats(); st.Strings != live {
			t.Errorf("arena holds %d strings, tree %d", st.Strings, live)
		}
		keys := []int32{5000, 5001, 5002}
		vals := []string{"a", "", strings.Repeat("z", 300)}
		for _, k := range []int32{-1000, -999, -998} {
			tr.Delete(k) // make room
		}
		if err := tr.BulkLoad(keys, vals); err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			if v, ok := tr.Get(k); !ok || v != vals[i] {
				t.Fatalf("Get(%d) = %q, %v", k, v, ok)
			}
		}
		if err := tr.Clear(); err != nil {
			t.Fatal(err)
		}
		if st := tr.arena.Stats(); st.Strings != 0 {
			t.Errorf("arena holds %d strings after Clear", st.Strings)
		}
	})
}

// TestBTreeScanNoAllocs: a short scan of fixed-size types (Range, All
// stopped early, Backward, Ascend, over the tier's leaves and past them)
// allocates nothing on the Go heap: a walk that escaped to the heap made
// every Range allocate, and in a large process touch fresh pages.
func TestBTreeScanNoAllocs(t *testing.T) {
	if buildconst.Invariants {
		t.Skip("invariants builds allocate in their checks")
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr, err := NewBTreeOrdered[uint64, uint64](d, WithHostCache(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		const n = 20000
		keys, vals := make([]uint64, n), make([]uint64, n)
		for i := range keys {
			keys[i], vals[i] = uint64(i)*3, uint64(i)
		}
		if err := tr.BulkLoad(keys, vals); err != nil {
			t.Fatal(err)
		}
		lo := uint64(0)
		var sum uint64
		scans := map[string]func(){
			"Range": func() {
				for k, v := range tr.Range(lo, lo+300) {
					sum += k + v
				}
			},
			"All": func() {
				i := 0
				for k := range tr.All() {
					if sum += k; i == 50 {
						break
					}
					i++
				}
			},
			"Backward": func() {
				i := 0
				for k := range tr.Backward() {
					if sum += k; i == 50 {
						break
					}
					i++
				}
			},
			"Ascend": func() {
				i := 0
				for k := range tr.Ascend(lo) {
					if sum += k; i == 50 {
						break
					}
					i++
				}
			},
		}
		for name, scan := range scans {
			if a := testing.AllocsPerRun(200, func() {
				scan()
				lo = (lo + 7919) % (3 * n)
			}); a != 0 {
				t.Errorf("%s: %v allocations a scan", name, a)
			}
		}
		if sum == 0 {
			t.Fatal("the scans found nothing")
		}
	})
}
