package collections

// String-keyed trees: freeing, snapshots, a named key type, the sharded
// tree and concurrent readers (the differential harness is in
// btree_strkey_test.go).

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestBTreeStrKeyFree checks that deleting every key gives the arena all
// its strings back, by each way of deleting, and that a closed tree leaves
// no block behind.
func TestBTreeStrKeyFree(t *testing.T) {
	for _, d := range btDevices(t) {
		t.Run(btDevName(d), func(t *testing.T) {
			n := btN(4000)
			rng := rand.New(rand.NewPCG(1, 1))
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprintf("https://www.example.com/a/b/c/%08d/%s", rng.IntN(1e8), strings.Repeat("q", rng.IntN(40)))
			}
			slices.Sort(keys)
			keys = slices.Compact(keys)
			for way := range 3 {
				tr, err := NewBTreeOrdered[string, string](d, btWithLeafEntries(6), btWithFan(4))
				if err != nil {
					t.Fatal(err)
				}
				for _, i := range rng.Perm(len(keys)) {
					if _, _, err := tr.ReplaceOrInsert(keys[i], keys[i]+"!"); err != nil {
						t.Fatal(err)
					}
				}
				// Overwrites keep the stored key and free the call's copy.
				for _, k := range keys[:len(keys)/3] {
					if _, rep, err := tr.ReplaceOrInsert(k, "x"); err != nil || !rep {
						t.Fatal(rep, err)
					}
				}
				if err := bsVerify(tr); err != nil {
					t.Fatal(err)
				}
				for i, j := range rng.Perm(len(keys)) {
					var err error
					switch way {
					case 0:
						_, _, err = tr.Delete(keys[j])
					case 1:
						_, _, _, err = tr.DeleteMin()
					case 2:
						_, _, _, err = tr.DeleteMax()
					}
					if err != nil {
						t.Fatal(err)
					}
					if i%500 == 0 {
						if err := bsVerify(tr); err != nil {
							t.Fatal(err)
						}
					}
				}
				if st := tr.sk.arena.Stats(); tr.Len() != 0 || st.Strings != 0 {
					t.Fatalf("way %d: %d entries and %d key strings left", way, tr.Len(), st.Strings)
				}
				tr.Close()
				vmemtest.CheckNoLeaks(t, d)
			}
		})
	}
}

// TestBTreeStrKeySnapshot saves string-keyed trees and loads them back,
// under < and under a less function, and checks Clear and Close.
func TestBTreeStrKeySnapshot(t *testing.T) {
	for _, d := range btDevices(t) {
		t.Run(btDevName(d), func(t *testing.T) {
			pool := bsPool(1)
			fold := bsOrders[2].less
			for _, less := range []func(a, b string) bool{nil, fold} {
				tr, err := bsMake[string](d, less)
				if err != nil {
					t.Fatal(err)
				}
				for i, k := range pool {
					if _, _, err := tr.ReplaceOrInsert(k, strconv.Itoa(i)+k); err != nil {
						t.Fatal(err)
					}
				}
				var buf bytes.Buffer
				if err := tr.Save(&buf); err != nil {
					t.Fatal(err)
				}
				var back *BTree[string, string]
				if less == nil {
					back, err = LoadBTreeOrdered[string, string](d, bytes.NewReader(buf.Bytes()))
				} else {
					back, err = LoadBTree[string, string](d, bytes.NewReader(buf.Bytes()), less)
				}
				if err != nil {
					t.Fatal(err)
				}
				if !bsSameEntries(tr, back) {
					t.Fatal("loaded tree differs")
				}
				if err := bsVerify(back); err != nil {
					t.Fatal(err)
				}
				// A snapshot of string keys is not one of integer keys.
				if _, err := LoadBTreeOrdered[uint64, string](d, bytes.NewReader(buf.Bytes())); !errors.Is(err, vmem.ErrTypeMismatch) {
					t.Fatalf("load as uint64 keys: %v", err)
				}
				if err := back.Clear(); err != nil || back.Len() != 0 {
					t.Fatal(err, back.Len())
				}
				if _, _, err := back.ReplaceOrInsert("after clear, a long key", "v"); err != nil {
					t.Fatal(err)
				}
				if v, ok := back.Get("after clear, a long key"); !ok || v != "v" {
					t.Fatal(v, ok)
				}
				if err := bsVerify(back); err != nil {
					t.Fatal(err)
				}
				back.Close()
				tr.Close()
				if err := tr.Close(); err != nil {
					t.Fatal(err)
				}
				if _, _, err := tr.ReplaceOrInsert("x", "y"); !errors.Is(err, vmem.ErrClosed) {
					t.Fatal(err)
				}
				if _, p := vmemtest.Panics(func() { tr.Get("after close") }); !p {
					t.Fatal("Get after Close did not panic")
				}
				vmemtest.CheckNoLeaks(t, d)
			}
		})
	}
}

func bsSameEntries[V comparable](a, b *BTree[string, V]) bool {
	var ea, eb []bsItem
	ka, kb := []V{}, []V{}
	for k, v := range a.All() {
		ea, ka = append(ea, bsItem{k: k}), append(ka, v)
	}
	for k, v := range b.All() {
		eb, kb = append(eb, bsItem{k: k}), append(kb, v)
	}
	return slices.Equal(ea, eb) && slices.Equal(ka, kb) && a.Len() == b.Len()
}

// TestBTreeStrKeyNamed uses a named string key type with a big tree, the
// sharded tree over the same code, and the stats.
func TestBTreeStrKeyNamed(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr, err := NewBTreeOrdered[btName, uint32](d)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		n := btN(20000)
		keys := make([]btName, n)
		vals := make([]uint32, n)
		for i := range keys {
			keys[i] = btName(fmt.Sprintf("/srv/data/shard-%03d/object-%09d", i/1000, i))
			vals[i] = uint32(i)
		}
		if err := tr.BulkLoad(keys[:n/2], vals[:n/2]); err != nil {
			t.Fatal(err)
		}
		if err := tr.BulkLoad(keys[:1], vals[:1]); !errors.Is(err, ErrUnsorted) {
			t.Fatalf("BulkLoad below the maximum: %v", err)
		}
		for i := n - 1; i >= n/2; i-- {
			if _, _, err := tr.ReplaceOrInsert(keys[i], vals[i]); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]uint32, n)
		found := make([]bool, n)
		if err := tr.GetBatch(keys, got, found); err != nil {
			t.Fatal(err)
		}
		for i := range keys {
			if !found[i] || got[i] != uint32(i) {
				t.Fatalf("GetBatch[%d] = %d, %v", i, got[i], found[i])
			}
		}
		i, lo, hi := 0, n/4, n/2
		for k, v := range tr.Range(keys[lo], keys[hi]) {
			if k != keys[lo+i] || v != uint32(lo+i) {
				t.Fatalf("Range item %d = %q %d", i, k, v)
			}
			i++
		}
		if i != hi-lo {
			t.Fatalf("Range gave %d items", i)
		}
		st := tr.Stats()
		if st.Len != n || st.LeafEntries != 16 || st.Leaves == 0 {
			t.Fatalf("Stats %+v", st)
		}
		if err := bsVerify(tr); err != nil {
			t.Fatal(err)
		}
	})
}

// TestBTreeStrKeySharded runs a sharded tree of string keys.
func TestBTreeStrKeySharded(t *testing.T) {
	shEachPool(t, vmem.Options{}, func(t *testing.T, pool *vmem.Pool) {
		bsSharded(t, pool)
	})
}

func bsSharded(t *testing.T, pool *vmem.Pool) {
	tr, err := NewBTreeOrdered[string, string](pool, WithSplits("m"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	keys := bsPool(2)
	for _, k := range keys {
		if _, _, err := tr.ReplaceOrInsert(k, k); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for k, v := range tr.All() {
		if k != v {
			t.Fatalf("%q -> %q", k, v)
		}
		got = append(got, k)
	}
	if !slices.Equal(got, keys) {
		t.Fatalf("sharded All: %d keys, want %d", len(got), len(keys))
	}
	var buf bytes.Buffer
	if err := tr.Save(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := LoadBTreeOrdered[string, string](pool, &buf)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if back.Len() != len(keys) {
		t.Fatalf("loaded %d", back.Len())
	}
	for _, k := range keys[:len(keys)/2] {
		if _, ok, err := tr.Delete(k); !ok || err != nil {
			t.Fatal(k, ok, err)
		}
	}
	if mk, _, _ := tr.Min(); mk != keys[len(keys)/2] {
		t.Fatalf("Min %q", mk)
	}
}

// TestBTreeStrKeyConcurrentReads runs readers of long keys at once (each
// takes a search slot) under both orders.
func TestBTreeStrKeyConcurrentReads(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, o := range bsOrders[:2] {
			tr, err := bsMake[uint64](d, o.less, btWithLeafEntries(5), btWithFan(4))
			if err != nil {
				t.Fatal(err)
			}
			pool := bsPool(4)
			for i, k := range pool {
				if _, _, err := tr.ReplaceOrInsert(k, uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			errs := make(chan error, 8)
			for g := range 8 {
				go func() {
					for i := g; i < len(pool); i += 3 {
						if v, ok := tr.Get(pool[i]); !ok || v != uint64(i) {
							errs <- fmt.Errorf("Get(%q) = %d, %v", pool[i], v, ok)
							return
						}
						n := 0
						for range tr.Range(pool[i/2], pool[i]) {
							n++
						}
						if o.less == nil && n != i-i/2 {
							errs <- fmt.Errorf("Range gave %d, want %d", n, i-i/2)
							return
						}
					}
					errs <- nil
				}()
			}
			for range 8 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			if err := bsVerify(tr); err != nil {
				t.Fatal(err)
			}
			tr.Close()
		}
	})
}
