package collections

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

type snapKV[K, V any] struct {
	K K
	V V
}

func snapBTreeEntries[K, V any](t *testing.T, tr *BTree[K, V]) []snapKV[K, V] {
	t.Helper()
	var out []snapKV[K, V]
	for k, v := range tr.All() {
		out = append(out, snapKV[K, V]{k, v})
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func snapSaveBytes(t testing.TB, save func(io.Writer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := save(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func snapBTreeRoundTrip[K, V any](t *testing.T, d *vmem.Device, n int, less func(a, b K) bool, key func(int) K, val func(int) V, opts ...BTreeOption) {
	t.Run(fmt.Sprintf("%v-%v/%d", reflect.TypeFor[K](), reflect.TypeFor[V](), n), func(t *testing.T) {
		tr, err := NewBTree[K, V](d, less, opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		for i := range n {
			// Inserted in a scrambled order, so the saved tree is not
			// the shape BulkLoad makes.
			j := (i * 7919) % max(n, 1)
			if _, _, err := tr.ReplaceOrInsert(key(j), val(j)); err != nil {
				t.Fatal(err)
			}
		}
		want := snapBTreeEntries(t, tr)
		data := snapSaveBytes(t, tr.Save)
		for _, r := range []io.Reader{bytes.NewReader(data), bytes.NewBuffer(bytes.Clone(data))} {
			l, err := LoadBTree[K, V](d, r, less, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := snapBTreeEntries(t, l); !reflect.DeepEqual(got, want) || l.Len() != len(want) {
				t.Fatalf("loaded %d entries, want %d", l.Len(), len(want))
			}
			for _, e := range want {
				if v, ok := l.Get(e.K); !ok || !reflect.DeepEqual(v, e.V) {
					t.Fatalf("Get(%v) = %v, %v", e.K, v, ok)
				}
			}
			// The tree takes changes after a load.
			if n > 0 {
				if _, _, err := l.Delete(want[0].K); err != nil {
					t.Fatal(err)
				}
				if _, _, err := l.ReplaceOrInsert(want[0].K, want[0].V); err != nil {
					t.Fatal(err)
				}
			}
			if again := snapSaveBytes(t, l.Save); !bytes.Equal(again, data) {
				t.Fatal("re-saved tree differs")
			}
			l.Close()
		}
	})
}

func TestBTreeSnapshotRoundTrip(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		big := 30000
		if testing.Short() || buildconst.Race {
			big = 3000
		}
		lessU := func(a, b uint64) bool { return a < b }
		moreU := func(a, b uint64) bool { return a > b }
		u := func(i int) uint64 { return uint64(i) * 3 }
		for _, n := range []int{0, 1, 100, big} {
			snapBTreeRoundTrip(t, d, n, lessU, u, func(i int) uint64 { return uint64(i) ^ 0xff })
			snapBTreeRoundTrip(t, d, n, lessU, u, snapStr)
		}
		snapBTreeRoundTrip(t, d, 2000, moreU, u, func(i int) snapRec { return snapRec{ID: uint32(i), At: 9} })
		snapBTreeRoundTrip(t, d, 2000, func(a, b snapRec) bool { return a.At < b.At },
			func(i int) snapRec { return snapRec{ID: 1, At: uint64(i)} }, func(i int) [64]byte { return [64]byte{byte(i)} },
			btWithLeafEntries(5), btWithExtentLeaves(2))
		if d.Info().Backend == vmem.BackendVulkan {
			snapBTreeRoundTrip(t, d, 5000, lessU, u, snapStr, WithBTreeTier(vmem.Private))
		}
	})
}

func TestBTreeSnapshotErrors(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tr, err := NewBTreeOrdered[uint64, string](d)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			tr.ReplaceOrInsert(uint64(i), snapStr(i))
		}
		data := snapSaveBytes(t, tr.Save)
		tr.Close()
		if err := tr.Save(io.Discard); !errors.Is(err, vmem.ErrClosed) {
			t.Errorf("Save after Close: %v", err)
		}
		load := func(r io.Reader) error {
			l, err := LoadBTreeOrdered[uint64, string](d, r)
			if err == nil {
				l.Close()
			}
			return err
		}
		if err := load(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		_, err = LoadBTreeOrdered[uint64, uint64](d, bytes.NewReader(data))
		if !errors.Is(err, vmem.ErrTypeMismatch) {
			t.Errorf("load as BTree[uint64, uint64]: %v", err)
		}
		_, err = LoadMap[uint64, string](d, bytes.NewReader(data))
		if !errors.Is(err, vmem.ErrTypeMismatch) {
			t.Errorf("load as Map: %v", err)
		}
		// Another order than the one saved under is corruption.
		_, err = LoadBTree[uint64, string](d, bytes.NewReader(data), func(a, b uint64) bool { return a > b })
		if !errors.Is(err, vmem.ErrCorrupt) {
			t.Errorf("load under the reverse order: %v, want vmem.ErrCorrupt", err)
		}
		snapDamage(t, data, load)

		fp := btSnapFingerprint[uint64, uint64]()
		var body []byte
		for _, k := range []uint64{5, 3} {
			body = binary.LittleEndian.AppendUint64(body, k)
			body = binary.LittleEndian.AppendUint64(body, 0)
		}
		for name, b := range map[string][]byte{
			"unsorted":  snapForge(snapfmt.Header{Kind: snapfmt.KindBTree, Fingerprint: fp, Count: 2}, body),
			"duplicate": snapForge(snapfmt.Header{Kind: snapfmt.KindBTree, Fingerprint: fp, Count: 2}, append(body[:16:16], body[:16]...)),
			"count":     snapForge(snapfmt.Header{Kind: snapfmt.KindBTree, Fingerprint: fp, Count: 1 << 60}, nil),
			"short":     snapForge(snapfmt.Header{Kind: snapfmt.KindBTree, Fingerprint: fp, Count: 3}, body),
		} {
			_, err := LoadBTreeOrdered[uint64, uint64](d, bytes.NewReader(b))
			if !errors.Is(err, vmem.ErrCorrupt) {
				t.Errorf("%s: %v, want vmem.ErrCorrupt", name, err)
			}
		}
	})
}

// FuzzLoadBTree loads arbitrary bytes as a BTree[uint64, string]: an
// error, or a tree that saves back to the same bytes.
func FuzzLoadBTree(f *testing.F) {
	d := snapFuzzDevice(f)
	for _, n := range []int{0, 1, 6} {
		tr, _ := NewBTreeOrdered[uint64, string](d)
		for i := range n {
			tr.ReplaceOrInsert(uint64(i*5), snapStr(i))
		}
		f.Add(snapSaveBytes(f, tr.Save))
		tr.Close()
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := LoadBTreeOrdered[uint64, string](d, bytes.NewReader(data))
		if err == nil {
			again := snapSaveBytes(t, tr.Save)
			tr.Close()
			if !bytes.HasPrefix(data, again) {
				t.Fatal("loaded tree saves to other bytes")
			}
		}
		snapFuzzErr(t, d, err)
	})
}
