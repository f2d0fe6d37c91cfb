package collections

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/google/btree"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestBTreeHintBuckets checks hint answers on their own: for leaves of
// every shape (dense keys, spread keys, keys closer than a bucket across a
// line boundary, keys below the bound), every key and its neighbours get a
// line range that holds the key where it would be.
func TestBTreeHintBuckets(t *testing.T) {
	d := vmemtest.Open(t, vmem.BackendHost, vmem.Options{})
	tr, err := NewBTreeOrdered[uint64, uint64](d)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if !tr.hint {
		t.Fatal("uint64 keys keep no hints")
	}
	kpl := tr.g.keysPerLine
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 3000 {
		cnt := 1 + rng.IntN(tr.g.cap)
		keys := make([]uint64, 0, cnt)
		base := rng.Uint64() >> uint(rng.IntN(64))
		step := uint64(1) << uint(rng.IntN(40))
		k := base
		for len(keys) < cnt {
			switch rng.IntN(3) {
			case 0:
				k++
			case 1:
				k += 1 + rng.Uint64N(step)
			default:
				k += step
			}
			keys = append(keys, k)
		}
		if keys[cnt-1] < keys[0] {
			continue // wrapped around
		}
		lb := keys[0]
		if round%5 == 0 && lb > 0 {
			lb -= rng.Uint64N(lb) // a bound below the first key
		}
		if round%7 == 0 {
			lb = keys[0] + 1 // the first leaf: its bound is above a key
		}
		h := tr.hintFor(unsafe.Pointer(&keys[0]), cnt, lb)
		if h.sh == 0 {
			t.Fatal("no hint computed")
		}
		nl := (cnt + kpl - 1) / kpl
		for j, k := range keys {
			lo, hi := h.lines(k, lb, nl)
			if line := j / kpl; line < lo || line > hi {
				t.Fatalf("round %d: key %d (index %d): lines [%d, %d], want %d (keys %v, lb %d, hint %+v)", round, k, j, lo, hi, line, keys, lb, h)
			}
			if hi-lo > 1 && step > 1<<20 && lb == keys[0] {
				t.Errorf("round %d: key %d: %d lines for spread keys", round, k, hi-lo+1)
			}
		}
	}
}

// TestBTreeHintLookups looks up every key and absent neighbours in trees
// whose leaves hold keys of every spacing, with all writes in between, on
// every backend (the Vulkan path gathers the hinted lines).
func TestBTreeHintLookups(t *testing.T) {
	n := btN(20000)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, shape := range []string{"pairs", "spread", "signed"} {
			t.Run(shape, func(t *testing.T) {
				tr, err := NewBTreeOrdered[int64, uint64](d, btWithExtentLeaves(16))
				if err != nil {
					t.Fatal(err)
				}
				defer tr.Close()
				m := map[int64]uint64{}
				rng := rand.New(rand.NewPCG(9, uint64(len(shape))))
				key := func() int64 {
					switch shape {
					case "pairs":
						// Clusters of two keys a few apart, far from the
						// others: boundaries fall inside buckets.
						return int64(rng.Uint64N(1<<20))<<30 + int64(rng.IntN(3))
					case "spread":
						return int64(rng.Uint64() >> 1)
					}
					return int64(rng.Uint64())
				}
				for i := range n {
					k := key()
					if _, _, err := tr.ReplaceOrInsert(k, uint64(i)); err != nil {
						t.Fatal(err)
					}
					m[k] = uint64(i)
					if i%5 == 4 {
						dk := key()
						if _, _, err := tr.Delete(dk); err != nil {
							t.Fatal(err)
						}
						delete(m, dk)
					}
				}
				if err := tr.verify(); err != nil {
					t.Fatal(err)
				}
				// Nearly every leaf has a hint (only a lowered bound
				// clears one until the leaf is written again).
				leaves, hinted := 0, 0
				for b := tr.idx.first; b != btNil; b = tr.idx.nodes[b].next {
					nd := tr.idx.nodes[b]
					for i := range int(nd.n) {
						leaves++
						if nd.hint[i].sh != 0 {
							hinted++
						}
					}
				}
				if hinted*10 < leaves*9 {
					t.Errorf("%d of %d leaves have hints", hinted, leaves)
				}
				for k, v := range m {
					if got, ok := tr.Get(k); !ok || got != v {
						t.Fatalf("Get(%d) = %d, %v; want %d", k, got, ok, v)
					}
					if !tr.Has(k) {
						t.Fatalf("Has(%d) = false", k)
					}
					for _, q := range []int64{k - 1, k + 1} {
						if q == math.MinInt64 || q == math.MaxInt64 {
							continue
						}
						_, want := m[q]
						if _, ok := tr.Get(q); ok != want {
							t.Fatalf("Get(%d) = %v, want %v", q, ok, want)
						}
						if tr.Has(q) != want {
							t.Fatalf("Has(%d) = %v, want %v", q, !want, want)
						}
					}
				}

				if tr.Len() != len(m) {
					t.Fatalf("Len %d, want %d", tr.Len(), len(m))
				}
			})
		}
	})
}

// TestBTreeScanWindows scans bulk-loaded trees large enough that windows
// go by DMA (several in flight) on Vulkan, with bounds in the middle of
// windows and callbacks that stop early, in both directions; private
// leaves too.
func TestBTreeScanWindows(t *testing.T) {
	n := btN(120000)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, opts := range [][]BTreeOption{{btWithExtentLeaves(64)}, {btWithExtentLeaves(32), WithBTreeTier(vmem.Private)}} {
			tr, err := NewBTreeOrdered[uint64, uint64](d, opts...)
			if err != nil {
				t.Fatal(err)
			}
			keys := make([]uint64, n)
			vals := make([]uint64, n)
			m := btree.NewG(32, btItemLess)
			for i := range keys {
				keys[i], vals[i] = uint64(3*i+1), uint64(i)
				m.ReplaceOrInsert(btItem{keys[i], vals[i]})
			}
			if err := tr.BulkLoad(keys, vals); err != nil {
				t.Fatal(err)
			}
			btModelEqual(t, tr, m)
			rng := rand.New(rand.NewPCG(11, 12))
			for r := range 30 {
				a := rng.Uint64N(uint64(3 * n))
				b := a + rng.Uint64N(uint64(3*n)-a+3)
				stop := 1 + rng.IntN(3*n/2)
				if r%3 == 0 {
					stop = n + 1
				}
				var want []btItem
				got := btTake(tr.Range(a, b), nil, stop)
				m.AscendRange(btItem{k: a}, btItem{k: b}, func(it btItem) bool { want = append(want, it); return len(want) < stop })
				if !slices.Equal(got, want) {
					t.Fatalf("Range(%d, %d) stop %d: %d items, model %d", a, b, stop, len(got), len(want))
				}
				want = want[:0]
				got = btTake(tr.Descend(b), func(k uint64) bool { return k <= a }, stop)
				m.DescendRange(btItem{k: b}, btItem{k: a}, func(it btItem) bool { want = append(want, it); return len(want) < stop })
				if !slices.Equal(got, want) {
					t.Fatalf("Descend(%d) until %d stop %d: %d items, model %d", b, a, stop, len(got), len(want))
				}
				want = want[:0]
				got = btTake(tr.Ascend(a), nil, stop)
				m.AscendGreaterOrEqual(btItem{k: a}, func(it btItem) bool { want = append(want, it); return len(want) < stop })
				if !slices.Equal(got, want) {
					t.Fatalf("Ascend(%d) stop %d: %d items, model %d", a, stop, len(got), len(want))
				}
				want = want[:0]
				got = btTake(tr.Descend(b), nil, stop)
				m.DescendLessOrEqual(btItem{k: b}, func(it btItem) bool { want = append(want, it); return len(want) < stop })
				if !slices.Equal(got, want) {
					t.Fatalf("Descend(%d) stop %d: %d items, model %d", b, stop, len(got), len(want))
				}
			}
			if err := tr.Err(); err != nil {
				t.Fatal(err)
			}
			tr.Close()
		}
	})
}

// TestBTreeHostBytes keeps the host index, hints included, under a byte
// per entry, after a bulk load and after random inserts.
func TestBTreeHostBytes(t *testing.T) {
	if buildconst.Invariants {
		t.Skip("the invariants build walks the whole tree after every insert")
	}
	n := 400000
	d := vmemtest.Open(t, vmem.BackendHost, vmem.Options{})
	tr, err := NewBTreeOrdered[uint64, uint64](d)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = uint64(2 * i)
	}
	if err := tr.BulkLoad(keys, keys); err != nil {
		t.Fatal(err)
	}
	bulk := tr.Stats().HostPerEntry
	if err := tr.Clear(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for range n {
		if _, _, err := tr.ReplaceOrInsert(rng.Uint64(), 1); err != nil {
			t.Fatal(err)
		}
	}
	random := tr.Stats().HostPerEntry
	t.Logf("host bytes per entry: %.3f after BulkLoad, %.3f after random inserts", bulk, random)
	if bulk > 1 || random > 1 {
		t.Errorf("host bytes per entry %.3f (bulk), %.3f (random): over 1", bulk, random)
	}
}
