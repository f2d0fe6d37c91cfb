package collections

// No data leaks between containers: memory a container freed never shows
// its bytes to the next owner (see docs/reliability.md). Each test fills
// device memory with a pattern through a container, frees it, and reads
// what the next allocation sees.

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

const dlByte = 0xA5

// dlRec is a record made of the pattern byte.
type dlRec [8]uint64

var dlPat = func() (r dlRec) {
	for i := range r {
		r[i] = 0xA5A5A5A5A5A5A5A5
	}
	return
}()

// dlOpts: 1 MiB chunks, so that the containers below fill chunks and the
// zero checks reuse them.
var dlOpts = vmem.Options{ChunkSize: 1 << 20}

// dlAllZero allocates the largest free range of each tier's chunks (where
// the freed containers lived) and fails if any byte is not zero.
func dlAllZero(t *testing.T, d *vmem.Device, after string) {
	t.Helper()
	for tier := vmem.Tier(0); tier <= vmem.Host; tier++ {
		st := d.Info().Tiers[tier]
		size := st.LargestFree &^ 63
		if size == 0 {
			continue
		}
		b, err := kdev(d).Alloc(block.Tier(tier), size, 64)
		if err != nil {
			t.Fatalf("%s: Alloc %d bytes of %s: %v", after, size, tier, err)
		}
		buf := make([]byte, size)
		if err := kdev(d).Read(buf, b, 0); err != nil {
			t.Fatal(err)
		}
		if i := bytes.IndexFunc(buf, func(r rune) bool { return r != 0 }); i >= 0 {
			t.Errorf("%s: a new %s block shows byte %#x at %d of %d: freed data leaked", after, tier, buf[i], i, size)
		}
		kdev(d).Free(b)
	}
}

func TestNoDataLeaks(t *testing.T) {
	fills := []struct {
		name string
		fill func(d *vmem.Device) error
	}{
		{"Slice", func(d *vmem.Device) error {
			s, err := vmem.NewSlice[dlRec](d, 5000)
			if err != nil {
				return err
			}
			if err := s.Fill(dlPat); err != nil {
				return err
			}
			return s.Close()
		}},
		{"Map", func(d *vmem.Device) error {
			m, err := NewMap[uint64, dlRec](d)
			if err != nil {
				return err
			}
			for i := range uint64(3000) { // grows the table several times
				if err := m.Put(i|0xA5A5A5A5A5A50000, dlPat); err != nil {
					return err
				}
			}
			for range m.All() { // an iteration's host snapshot buffer
			}
			return m.Close()
		}},
		{"Map/string", func(d *vmem.Device) error {
			m, err := NewMap[string, string](d)
			if err != nil {
				return err
			}
			v := strings.Repeat(string(rune(dlByte&0x7f))+"\xa5", 300)
			for i := range 300 {
				if err := m.Put(fmt.Sprint(i)+v, v); err != nil {
					return err
				}
			}
			return m.Close()
		}},
		{"BTree", func(d *vmem.Device) error {
			tr, err := NewBTreeOrdered[uint64, dlRec](d)
			if err != nil {
				return err
			}
			for i := range uint64(3000) {
				if _, _, err := tr.ReplaceOrInsert(i*7919%3001, dlPat); err != nil {
					return err
				}
			}
			return tr.Close()
		}},
		{"Ring", func(d *vmem.Device) error {
			r, err := NewRing[dlRec](d, 4000, withPolicy(ringOverwriteOldest))
			if err != nil {
				return err
			}
			batch := make([]dlRec, 1000)
			for i := range batch {
				batch[i] = dlPat
			}
			for range 5 {
				if _, err := r.PushBatch(batch); err != nil {
					return err
				}
			}
			if _, err := r.PopBatch(batch); err != nil {
				return err
			}
			return r.Close()
		}},
	}
	for _, f := range fills {
		t.Run(f.name, func(t *testing.T) {
			vmemtest.Each(t, dlOpts, func(t *testing.T, d *vmem.Device) {
				if err := f.fill(d); err != nil {
					t.Fatal(err)
				}
				dlAllZero(t, d, "after "+f.name+".Close")
			})
		})
	}
}

// TestNoDataLeaksNewContainers: containers made where others were freed
// start empty and zero, and a grown Slice shows zeros past its old end.
func TestNoDataLeaksNewContainers(t *testing.T) {
	vmemtest.Each(t, dlOpts, func(t *testing.T, d *vmem.Device) {
		a, err := vmem.NewSlice[dlRec](d, 4000)
		if err != nil {
			t.Fatal(err)
		}
		a.Fill(dlPat)
		a.Close()
		// Grown from one element, so every segment it takes is new.
		s, err := vmem.NewSlice[dlRec](d, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, n := range []int{10, 300, 4000} {
			if err := s.Resize(n); err != nil {
				t.Fatal(err)
			}
			for i, v := range s.All() {
				if v != (dlRec{}) {
					t.Fatalf("Resize(%d): element %d is %x", n, i, v)
				}
			}
		}

		r, err := NewRing[dlRec](d, 1000)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for range 500 {
			r.Push(dlPat)
		}
		r.Clear()
		if _, ok := r.Pop(); ok {
			t.Fatal("Pop after Reset found an element")
		}
		dst := make([]dlRec, 10)
		if n, err := r.PopBatch(dst); n != 0 || err != nil {
			t.Fatalf("PopBatch after Reset: %d, %v", n, err)
		}
		for range r.All() {
			t.Fatal("All after Reset yields an element")
		}
		r.Push(dlRec{1})
		if v, ok := r.Pop(); !ok || v != (dlRec{1}) {
			t.Fatalf("Pop after Reset and Push: %v, %v", v, ok)
		}

		m, err := NewMap[uint64, dlRec](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if m.Len() != 0 {
			t.Fatal("new Map not empty")
		}
		for range m.All() {
			t.Fatal("a new Map yields an entry")
		}
		if _, ok := m.Get(0); ok {
			t.Fatal("a new Map has key 0")
		}
		tr, err := NewBTreeOrdered[uint64, dlRec](d)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		if tr.Len() != 0 {
			t.Fatal("new BTree not empty")
		}
		for range tr.Ascend(0) {
			t.Fatal("a new BTree yields an entry")
		}
	})
}
