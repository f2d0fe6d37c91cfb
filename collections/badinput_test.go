package collections

// Bad input gives the documented error or panic (docs/reliability.md, "Bad
// input"), on every backend, and leaves the container as it was.

import (
	"errors"
	"strings"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

func TestBadInput(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		type withPtr struct {
			A uint64
			P *int
		}
		want := func(what string, err, target error) {
			t.Helper()
			if !errors.Is(err, target) {
				t.Errorf("%s: %v, want %v", what, err, target)
			}
		}
		_, err := vmem.NewSlice[withPtr](d, 1)
		want("NewSlice of a pointer type", err, vmem.ErrPointerType)
		if err != nil && !strings.Contains(err.Error(), "P") {
			t.Errorf("vmem.ErrPointerType does not name the field: %v", err)
		}
		_, err = NewMap[uint64, withPtr](d)
		want("NewMap of a pointer type", err, vmem.ErrPointerType)
		_, err = NewBTreeOrdered[uint64, withPtr](d)
		want("NewBTree of a pointer type", err, vmem.ErrPointerType)
		_, err = NewRing[withPtr](d, 4)
		want("NewRing of a pointer type", err, vmem.ErrPointerType)
		_, err = NewRing[uint64](d, 0)
		want("NewRing(0)", err, vmem.ErrRange)
		_, err = vmem.NewSlice[uint64](d, -1)
		want("NewSlice(-1)", err, vmem.ErrRange)

		s, err := vmem.NewSlice[uint64](d, 10)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		want("Resize(-1)", s.Resize(-1), vmem.ErrRange)
		want("CopyFrom past the end", s.CopyFrom(make([]uint64, 5), 8), vmem.ErrRange)
		want("CopyTo past the end", s.CopyTo(make([]uint64, 5), 8), vmem.ErrRange)
		want("GetBatch out of range", s.GetBatch([]int{3, 10}, make([]uint64, 2)), vmem.ErrRange)
		want("GetBatch short dst", s.GetBatch([]int{3, 1}, make([]uint64, 1)), vmem.ErrRange)
		want("SetBatch out of range", s.SetBatch([]int{3, 10}, make([]uint64, 2)), vmem.ErrRange)
		want("SetBatch short src", s.SetBatch([]int{3, 1}, make([]uint64, 1)), vmem.ErrRange)
		if s.SetBatch([]int{3, 10}, []uint64{7, 7}); s.Get(3) != 0 {
			t.Errorf("a refused SetBatch stored element 3: %d", s.Get(3))
		}
		for name, f := range map[string]func(){
			"Get(10)": func() { s.Get(10) },
			"Set(-1)": func() { s.Set(-1, 0) },
		} {
			if msg, ok := vmemtest.Panics(f); !ok || !strings.Contains(msg, "out of range") {
				t.Errorf("%s: panic %q (%v), want an index out of range panic", name, msg, ok)
			}
		}
		if s.Len() != 10 {
			t.Errorf("bad input changed the Slice: Len %d", s.Len())
		}

		m, err := NewMap[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		want("PutMany with fewer values", m.putMany([]uint64{1, 2}, []uint64{1}), vmem.ErrRange)
		if m.Len() != 0 {
			t.Errorf("a refused PutMany stored %d entries", m.Len())
		}
		if _, err := NewMap[uint64, uint64](d, WithHasher(func(string) uint64 { return 0 })); err == nil {
			t.Error("NewMap accepted a hasher for another key type")
		}

		tr, err := NewBTreeOrdered[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		want("BulkLoad unsorted", tr.BulkLoad([]uint64{1, 3, 2}, []uint64{1, 2, 3}), ErrUnsorted)
		if err := tr.BulkLoad([]uint64{1, 2}, []uint64{1}); err == nil {
			t.Error("BulkLoad with fewer values than keys succeeded")
		}
		if tr.Len() != 0 {
			t.Errorf("a refused BulkLoad stored %d entries", tr.Len())
		}
		if _, err := NewBTreeOrdered[uint64, uint64](d, btWithLeafEntries(2)); err == nil {
			t.Error("NewBTree accepted 2 entries per leaf")
		}
		if _, err := NewBTreeOrdered[uint64, uint64](d, WithBTreeTier(vmem.Host)); err == nil {
			t.Error("NewBTree accepted the host tier")
		}

		r, err := NewRing[uint64](d, 3)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for i := range uint64(3) {
			r.Push(i)
		}
		want("Push into a full ring", r.Push(9), ErrFull)
		if n, err := r.PushBatch([]uint64{7, 8}); n != 0 || !errors.Is(err, ErrFull) {
			t.Errorf("PushBatch into a full ring: %d, %v", n, err)
		}
		if v, _ := r.Pop(); v != 0 || r.Len() != 2 {
			t.Errorf("a refused push changed the ring: Pop %d, Len %d", v, r.Len())
		}
	})
}
