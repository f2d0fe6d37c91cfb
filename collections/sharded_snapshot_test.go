package collections

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/govram/govram/vmem"
)

// TestShardedSnapshots: snapshots of a Map and a BTree on a pool
// round-trip, load as a Map or BTree on one device and back (the formats
// are the same), spread a tree's entries evenly when no splits are given, and
// report damage and other types as vmem.ErrCorrupt and vmem.ErrTypeMismatch.
func TestShardedSnapshots(t *testing.T) {
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		for _, n := range []int{0, 1, 5000, 3*snapBatch + 17} {
			t.Run(fmt.Sprint(n), func(t *testing.T) {
				d := newShSnapData(t, p, n)

				sm, err := NewMap[string, int](p)
				if err != nil {
					t.Fatal(err)
				}
				defer sm.Close()
				d.mapRoundTrips(sm)

				st, err := NewBTreeOrdered[int64, int](p)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				snap := d.treeRoundTrips(st)

				if n == 0 {
					return
				}
				d.damaged(sm, snap)
			})
		}
		sm, err := NewMap[int, int](p)
		if err != nil {
			t.Fatal(err)
		}
		sm.Close()
		if err := sm.Save(&bytes.Buffer{}); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("Save after Close: %v", err)
		}
	})
}

// shSnapData is the content of one case of TestShardedSnapshots: n entries
// with string keys for the maps, and with int64 keys for the trees.
type shSnapData struct {
	t     *testing.T
	p     *vmem.Pool
	n     int
	want  map[string]int
	keys  []string
	vals  []int
	tkeys []int64
}

// newShSnapData makes the n entries of a case.
func newShSnapData(t *testing.T, p *vmem.Pool, n int) *shSnapData {
	want := map[string]int{}
	for i := range n {
		want[fmt.Sprintf("https://example.org/%d/%x", i, i*7919)] = i
	}
	keys := slices.Sorted(maps.Keys(want))
	vals := make([]int, len(keys))
	for i, k := range keys {
		vals[i] = want[k]
	}
	// BTrees take fixed-size keys.
	tkeys := make([]int64, n)
	for i := range tkeys {
		tkeys[i] = int64(i)*7919 - 1e6
	}
	return &shSnapData{t: t, p: p, n: n, want: want, keys: keys, vals: vals, tkeys: tkeys}
}

// checkMap checks a map's entries and length against the string-key entries.
func (d *shSnapData) checkMap(what string, got func(func(string, int) bool), l int) {
	t := d.t
	t.Helper()
	m := maps.Collect(got)
	if l != d.n || !maps.Equal(m, d.want) {
		t.Fatalf("%s: %d entries (Len %d), want %d", what, len(m), l, d.n)
	}
}

// checkTree checks a tree's keys and values, in order, against the int64-key entries.
func (d *shSnapData) checkTree(what string, gotK func(func(int64) bool), gotV func(func(int) bool)) {
	t := d.t
	t.Helper()
	if k, v := slices.Collect(gotK), slices.Collect(gotV); !slices.Equal(k, d.tkeys) || !slices.Equal(v, d.vals) {
		t.Fatalf("%s: %d keys and %d values, want %d in order", what, len(k), len(v), d.n)
	}
}

// mapRoundTrips fills sm, a map on the pool, and round-trips its snapshot
// through a map on the pool, a map on one device and back.
func (d *shSnapData) mapRoundTrips(sm *Map[string, int]) {
	t, p := d.t, d.p
	if err := sm.putMany(d.keys, d.vals); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := sm.Save(&b); err != nil {
		t.Fatal(err)
	}
	snap := bytes.Clone(b.Bytes())
	sm2, err := LoadMap[string, int](p, bytes.NewReader(snap))
	if err != nil {
		t.Fatal(err)
	}
	d.checkMap("pool map round trip", sm2.All(), sm2.Len())
	sm2.Close()
	m, err := LoadMap[string, int](p.Devices()[0], bytes.NewReader(snap))
	if err != nil {
		t.Fatal(err)
	}
	d.checkMap("pool map loaded on a device", m.All(), m.Len())
	b.Reset()
	if err := m.Save(&b); err != nil {
		t.Fatal(err)
	}
	m.Close()
	sm3, err := LoadMap[string, int](p, &b)
	if err != nil {
		t.Fatal(err)
	}
	d.checkMap("device map loaded on a pool", sm3.All(), sm3.Len())
	sm3.Close()
}

// treeRoundTrips fills st, and round-trips its snapshot through a BTree
// on the pool (with and without splits), one on a device and back; it
// returns the snapshot.
func (d *shSnapData) treeRoundTrips(st *BTree[int64, int]) []byte {
	t, p, n, tkeys, vals := d.t, d.p, d.n, d.tkeys, d.vals
	if err := st.BulkLoad(tkeys, vals); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := st.Save(&b); err != nil {
		t.Fatal(err)
	}
	snap := bytes.Clone(b.Bytes())
	st2, err := LoadBTreeOrdered[int64, int](p, bytes.NewReader(snap))
	if err != nil {
		t.Fatal(err)
	}
	d.checkTree("BTree on a pool round trip", keysOf(st2.All()), valuesOf(st2.All()))
	if lens := st2.sh.shardLens(); n >= len(p.Devices()) {
		for _, l := range lens {
			if l < n/len(p.Devices()) || l > n/len(p.Devices())+1 {
				t.Fatalf("shards hold %v entries: not an even spread of %d", lens, n)
			}
		}
	}
	for i, k := range tkeys[:min(n, 50)] {
		if v, ok := st2.Get(k); !ok || v != vals[i] {
			t.Fatalf("Get(%d) = %d, %v after load", k, v, ok)
		}
	}
	st2.Close()
	if n > 2 && len(p.Devices()) > 1 {
		st3, err := LoadBTreeOrdered[int64, int](p, bytes.NewReader(snap), WithSplits(tkeys[n/3:n/3+len(p.Devices())-1]...))
		if err != nil {
			t.Fatal(err)
		}
		d.checkTree("BTree on a pool loaded with splits", keysOf(st3.All()), valuesOf(st3.All()))
		if got := st3.sh.splitKeys(); !slices.Equal(got, tkeys[n/3:n/3+len(p.Devices())-1]) {
			t.Fatalf("splits %v after a load with splits", got)
		}
		st3.Close()
	}
	bt, err := LoadBTreeOrdered[int64, int](p.Devices()[0], bytes.NewReader(snap))
	if err != nil {
		t.Fatal(err)
	}
	d.checkTree("BTree on a pool loaded on one device", keysOf(bt.All()), valuesOf(bt.All()))
	b.Reset()
	if err := bt.Save(&b); err != nil {
		t.Fatal(err)
	}
	bt.Close()
	st4, err := LoadBTree[int64, int](p, &b, func(a, b int64) bool { return a < b })
	if err != nil {
		t.Fatal(err)
	}
	d.checkTree("BTree on one device loaded on a pool", keysOf(st4.All()), valuesOf(st4.All()))
	st4.Close()
	return snap
}

// damaged checks that damaged snapshots load as vmem.ErrCorrupt and other types
// as vmem.ErrTypeMismatch; snap is the tree's snapshot.
func (d *shSnapData) damaged(sm *Map[string, int], snap []byte) {
	t, p := d.t, d.p
	bad := bytes.Clone(snap)
	bad[len(bad)/2] ^= 1
	if _, err := LoadBTreeOrdered[int64, int](p, bytes.NewReader(bad)); !errors.Is(err, vmem.ErrCorrupt) {
		t.Fatalf("LoadBTree on a pool of a damaged snapshot: %v", err)
	}
	if _, err := LoadBTreeOrdered[int64, int64](p, bytes.NewReader(snap)); !errors.Is(err, vmem.ErrTypeMismatch) {
		t.Fatalf("LoadBTree on a pool of other types: %v", err)
	}
	if _, err := LoadMap[int64, int](p, bytes.NewReader(snap)); !errors.Is(err, vmem.ErrTypeMismatch) {
		t.Fatalf("LoadMap on a pool of a tree's snapshot: %v", err)
	}
	var b bytes.Buffer
	if err := sm.Save(&b); err != nil {
		t.Fatal(err)
	}
	bad = bytes.Clone(b.Bytes())
	bad[len(bad)/2] ^= 1
	if _, err := LoadMap[string, int](p, bytes.NewReader(bad)); !errors.Is(err, vmem.ErrCorrupt) {
		t.Fatalf("LoadMap on a pool of a damaged snapshot: %v", err)
	}
}
