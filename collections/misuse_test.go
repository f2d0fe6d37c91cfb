package collections

import (
	"strings"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestZeroValueContainers: a container declared as a variable, not made
// by its constructor, panics with a message that says so (not a nil
// dereference), and its Close is harmless.
func TestZeroValueContainers(t *testing.T) {
	cases := map[string]func(){
		"Map.Get":               func() { var m Map[uint64, uint64]; m.Get(1) },
		"Map.Put":               func() { var m Map[uint64, uint64]; m.Put(1, 1) },
		"BTree.Get":             func() { var b BTree[uint64, uint64]; b.Get(1) },
		"BTree.ReplaceOrInsert": func() { var b BTree[uint64, uint64]; b.ReplaceOrInsert(1, 1) },
		"BTree.All": func() {
			var b BTree[uint64, uint64]
			for range b.All() {
			}
		},
		"BTree.Min":  func() { var b BTree[uint64, uint64]; b.Min() },
		"Ring.Push":  func() { var r Ring[uint64]; r.Push(1) },
		"Ring.Pop":   func() { var r Ring[uint64]; r.Pop() },
		"Ring.Clear": func() { var r Ring[uint64]; r.Clear() },
	}
	for name, f := range cases {
		msg, ok := vmemtest.Panics(f)
		if !ok || !strings.Contains(msg, "zero value is not usable") {
			t.Errorf("%s on a zero value: panicked %v with %q", name, ok, msg)
		}
	}
	var m Map[uint64, uint64]
	var b BTree[uint64, uint64]
	var r Ring[uint64]
	for name, c := range map[string]func() error{"Map": m.Close, "BTree": b.Close, "Ring": r.Close} {
		if msg, ok := vmemtest.Panics(func() { c() }); ok {
			t.Errorf("%s.Close on a zero value panicked: %s", name, msg)
		}
	}
}

// TestBTreeWriteInIteration: a write in the body of a scan of the same
// tree panics at the scan's next step, for every scan form; the write
// itself is kept and the tree stays valid.
func TestBTreeWriteInIteration(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		bt, err := NewBTreeOrdered[uint64, uint64](d, btWithLeafEntries(8))
		if err != nil {
			t.Fatal(err)
		}
		defer bt.Close()
		const n = 1000
		for i := range uint64(n) {
			if _, _, err := bt.ReplaceOrInsert(2*i, i); err != nil {
				t.Fatal(err)
			}
		}
		next := uint64(1) // odd keys: new ones
		write := func() {
			if _, _, err := bt.ReplaceOrInsert(next, next); err != nil {
				t.Fatal(err)
			}
			next += 2
		}
		scans := map[string]func(){
			"All": func() {
				for range bt.All() {
					write()
				}
			},
			"Backward": func() {
				for range bt.Backward() {
					write()
				}
			},
			"Range": func() {
				for range bt.Range(0, 2*n) {
					write()
				}
			},
			"Ascend": func() {
				for range bt.Ascend(0) {
					write()
				}
			},
			"Descend": func() {
				for range bt.Descend(2 * n) {
					write()
				}
			},
			"Delete": func() {
				for k := range bt.All() {
					if _, _, err := bt.Delete(k); err != nil {
						t.Fatal(err)
					}
				}
			},
		}
		for name, scan := range scans {
			before := bt.Len()
			msg, ok := vmemtest.Panics(scan)
			if !ok || !strings.Contains(msg, "changed during an iteration") {
				t.Fatalf("%s with a write in its body: panicked %v with %q", name, ok, msg)
			}
			if name != "Delete" && bt.Len() == before {
				t.Fatalf("%s: the write in the body was lost", name)
			}
		}
		// Still valid: every entry is there and in order, writes work.
		write()
		var prev uint64
		cnt := 0
		for k, v := range bt.All() {
			if cnt > 0 && k <= prev {
				t.Fatalf("keys out of order: %d after %d", k, prev)
			}
			if k%2 == 1 && v != k {
				t.Fatalf("key %d holds %d", k, v)
			}
			prev = k
			cnt++
		}
		if cnt != bt.Len() {
			t.Fatalf("All yielded %d entries, Len %d", cnt, bt.Len())
		}
		if v, ok := bt.Get(next - 2); !ok || v != next-2 {
			t.Fatalf("Get(%d) = %d, %v", next-2, v, ok)
		}
	})
}
