package collections

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestBTreeNilMemory: a nil Memory, or a nil *Device or *Pool in one, is
// an error matching ErrNoDevice for every constructor and loader, not a
// panic.
func TestBTreeNilMemory(t *testing.T) {
	var dev *vmem.Device
	var pool *vmem.Pool
	less := func(a, b int) bool { return a < b }
	for name, mem := range map[string]vmem.Memory{"nil": nil, "nil device": dev, "nil pool": pool} {
		errs := map[string]error{}
		_, errs["NewBTree"] = NewBTree[int, int](mem, less)
		_, errs["NewBTreeOrdered"] = NewBTreeOrdered[int, int](mem)
		_, errs["LoadBTree"] = LoadBTree[int, int](mem, bytes.NewReader(nil), less)
		_, errs["LoadBTreeOrdered"] = LoadBTreeOrdered[int, int](mem, bytes.NewReader(nil))
		for call, err := range errs {
			if !errors.Is(err, vmem.ErrNoDevice) {
				t.Errorf("%s(%s): %v, want ErrNoDevice", call, name, err)
			}
		}
	}
	p := shOpenPool(t, shPoolKinds()[0], vmem.Options{})
	if _, err := LoadBTreeOrdered[int, int](p, nil); !errors.Is(err, vmem.ErrRange) {
		t.Errorf("LoadBTreeOrdered(pool, nil reader): %v", err)
	}
}

// TestBTreeSplitsOnDevice: on one device WithSplits is checked as on a
// pool (key type, order) and otherwise ignored.
func TestBTreeSplitsOnDevice(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		if _, err := NewBTreeOrdered[int, int](d, WithSplits(3, 2)); !errors.Is(err, ErrUnsorted) {
			t.Errorf("descending splits: %v", err)
		}
		if _, err := NewBTreeOrdered[int, int](d, WithSplits[int64](1)); err == nil {
			t.Error("splits of the wrong type accepted")
		}
		tr, err := NewBTreeOrdered[int, int](d, WithSplits(10, 20, 30, 40), btWithLeafEntries(4))
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		for k := range 50 {
			tr.ReplaceOrInsert(k, -k)
		}
		if v, ok := tr.Get(33); !ok || v != -33 || tr.Len() != 50 {
			t.Fatalf("Get(33) = %d, %v; Len %d", v, ok, tr.Len())
		}
		if st := tr.Stats(); st.Shards != nil || st.LeafEntries != 4 {
			t.Fatalf("Stats on one device: %d shards, %d entries a leaf", len(st.Shards), st.LeafEntries)
		}
	})
}

// TestBTreePoolStats: Stats on a pool adds the devices up and lists each
// in Shards, in the pool's order.
func TestBTreePoolStats(t *testing.T) {
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		tr, err := NewBTreeOrdered[int, int](p, WithSplits(100))
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		for k := range 150 {
			tr.ReplaceOrInsert(k, k)
		}
		st := tr.Stats()
		if len(st.Shards) != len(p.Devices()) {
			t.Fatalf("%d shards in Stats, want %d", len(st.Shards), len(p.Devices()))
		}
		lens := []int{100, 50}
		sum := 0
		for d, s := range st.Shards {
			want := 0
			if d < len(lens) {
				want = lens[d]
			}
			if s.Len != want || s.Shards != nil {
				t.Errorf("shard %d: Len %d, want %d (%d nested shards)", d, s.Len, want, len(s.Shards))
			}
			sum += s.Leaves
		}
		if st.Len != 150 || tr.Len() != 150 || st.Leaves != sum {
			t.Errorf("Stats: Len %d, tree Len %d, %d leaves (shards: %d)", st.Len, tr.Len(), st.Leaves, sum)
		}
	})
}

// TestBTreePoolSequences: All, Range, Keys and Backward over a pool cross
// the devices in key order, stop early when the loop breaks or panics
// (the tree stays usable), with integer and with string keys.
func TestBTreePoolSequences(t *testing.T) {
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		t.Run("int", func(t *testing.T) {
			keys := make([]int, 3000)
			for i := range keys {
				keys[i] = 3 * i
			}
			tr, err := NewBTreeOrdered[int, int](p, btWithLeafEntries(8))
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			if err := tr.BulkLoad(keys, keys); err != nil {
				t.Fatal(err)
			}
			btPoolSeqs(t, tr, keys, 999, 7998)
		})
		t.Run("string", func(t *testing.T) {
			keys := make([]string, 600)
			for i := range keys {
				keys[i] = fmt.Sprintf("key %05d, long enough for the arena", i)
			}
			tr, err := NewBTreeOrdered[string, string](p, WithSplits([]string{keys[200], keys[400]}[:len(p.Devices())-1]...))
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			for _, k := range keys {
				if _, _, err := tr.ReplaceOrInsert(k, k); err != nil {
					t.Fatal(err)
				}
			}
			btPoolSeqs(t, tr, keys, keys[150], keys[450])
		})
	})
}

// btPoolSeqs checks tr's sequences against keys (ascending, each its own
// value), with the range [lo, hi) for Range.
func btPoolSeqs[K comparable](t *testing.T, tr *BTree[K, K], keys []K, lo, hi K) {
	t.Helper()
	collect := func(seq func(func(K, K) bool), limit int) []K {
		var got []K
		for k, v := range seq {
			if k != v {
				t.Fatalf("%v holds %v", k, v)
			}
			if len(got) == limit {
				break
			}
			got = append(got, k)
		}
		return got
	}
	i := slices.Index(keys, lo)
	j := slices.Index(keys, hi)
	if got := collect(tr.All(), -1); !slices.Equal(got, keys) {
		t.Fatalf("All: %d keys, want %d", len(got), len(keys))
	}
	if got := collect(tr.Range(lo, hi), -1); !slices.Equal(got, keys[i:j]) {
		t.Fatalf("Range: %d keys, want %d", len(got), j-i)
	}
	if got := collect(tr.Range(hi, lo), -1); len(got) != 0 {
		t.Fatalf("Range over an empty interval: %d keys", len(got))
	}
	back := slices.Clone(keys)
	slices.Reverse(back)
	if got := collect(tr.Backward(), -1); !slices.Equal(got, back) {
		t.Fatalf("Backward: %d keys, want %d", len(got), len(back))
	}
	if got := slices.Collect(keysOf(tr.All())); !slices.Equal(got, keys) {
		t.Fatalf("Keys: %d keys, want %d", len(got), len(keys))
	}
	// Breaks at every device: each leaves the tree usable.
	for _, n := range []int{0, 1, len(keys) / 3, len(keys)/2 + 1, len(keys) - 1} {
		if got := collect(tr.All(), n); !slices.Equal(got, keys[:n]) {
			t.Fatalf("All stopped after %d: %d keys", n, len(got))
		}
		if got := collect(tr.Range(lo, hi), n); !slices.Equal(got, keys[i:min(i+n, j)]) {
			t.Fatalf("Range stopped after %d: %d keys", n, len(got))
		}
	}
	// A panic in the loop body abandons the scan; a collection gives back
	// what it held.
	for range 3 {
		if _, panicked := vmemtest.Panics(func() {
			n := 0
			for range tr.All() {
				if n++; n == len(keys)/2 {
					panic("stop")
				}
			}
		}); !panicked {
			t.Fatal("the loop body's panic was lost")
		}
		runtime.GC()
	}
	if _, _, err := tr.ReplaceOrInsert(keys[0], keys[0]); err != nil {
		t.Fatal(err)
	}
	if got := collect(tr.All(), -1); !slices.Equal(got, keys) {
		t.Fatalf("All after the panics: %d keys, want %d", len(got), len(keys))
	}
}
