package collections

// Use after Close, double Close, Device.Close with containers still open,
// and leaks (see docs/reliability.md, "Lifecycle").

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// lcCall is one method called on a closed container: wantErr for methods
// with an error result (it must match vmem.ErrClosed), else a panic naming the
// container, or neither for the methods documented to answer after Close
// (Len, Cap, Err, Stats and their kind).
type lcCall struct {
	method string
	call   func() error
	mode   lcMode
}

type lcMode int

const (
	lcErr   lcMode = iota // returns an error matching vmem.ErrClosed
	lcPanic               // panics, naming the container
	lcQuiet               // answers (Len 0, ...) without touching memory
)

// lcCheck calls every method of a closed container and checks that the list
// covers every exported method of typ.
func lcCheck(t *testing.T, name string, typ reflect.Type, calls []lcCall) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range calls {
		seen[c.method] = true
		var err error
		msg, panicked := vmemtest.Panics(func() { err = c.call() })
		switch c.mode {
		case lcErr:
			if panicked {
				t.Errorf("%s.%s after Close panicked (%s), want vmem.ErrClosed", name, c.method, msg)
			} else if !errors.Is(err, vmem.ErrClosed) {
				t.Errorf("%s.%s after Close: %v, want vmem.ErrClosed", name, c.method, err)
			}
		case lcPanic:
			if !panicked {
				t.Errorf("%s.%s after Close did not panic (err %v)", name, c.method, err)
			} else if !strings.Contains(msg, name) || !strings.Contains(msg, "Close") {
				t.Errorf("%s.%s after Close panicked with %q, which does not say %s was closed", name, c.method, msg, name)
			}
		case lcQuiet:
			if panicked {
				t.Errorf("%s.%s after Close panicked: %s", name, c.method, msg)
			}
		}
	}
	for i := range typ.NumMethod() {
		if m := typ.Method(i).Name; !seen[m] {
			t.Errorf("%s.%s has no use-after-Close case: add one to this test and to docs/reliability.md", name, m)
		}
	}
}

// lcFns are the ways a container gets closed: its own Close (then a second
// Close), or the device's Close with the container still open.
var lcWays = []string{"Close", "Device.Close"}

// lcClose closes c one way and checks the second Close is harmless.
func lcClose(t *testing.T, d *vmem.Device, way string, closeFn func() error) {
	t.Helper()
	switch way {
	case "Close":
		if err := closeFn(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	case "Device.Close":
		err := d.Close()
		if !errors.Is(err, vmem.ErrOpenBlocks) {
			t.Fatalf("Device.Close with a container open: %v, want ErrOpenBlocks", err)
		}
		if !strings.Contains(err.Error(), "still allocated") {
			t.Errorf("Device.Close: %q does not say what was still allocated", err)
		}
		for tier := vmem.Tier(0); tier <= vmem.Host; tier++ {
			if st := d.Info().Tiers[tier]; st.Blocks != 0 || st.InUse != 0 || st.Reserved != 0 {
				t.Errorf("after Device.Close, %s tier: %+v", tier, st)
			}
		}
	}
	if err := closeFn(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// lcDevice opens a device for one way of closing: Device.Close runs inside
// the test, so that device is not vmemtest's (whose cleanup would call it
// a leak).
func lcDevice(t *testing.T, b vmem.Backend, way string) *vmem.Device {
	if way == "Close" {
		return vmemtest.Open(t, b, vmem.Options{})
	}
	d, err := vmem.Open(vmem.Options{Backend: b})
	if err != nil {
		if b == vmem.BackendVulkan && !vmemtest.RequireVulkan() {
			t.Skipf("no Vulkan device: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func lcEach(t *testing.T, f func(t *testing.T, d *vmem.Device, way string)) {
	for _, b := range vmemtest.Backends() {
		for _, way := range lcWays {
			t.Run(string(b)+"/"+way, func(t *testing.T) { f(t, lcDevice(t, b, way), way) })
		}
	}
}

func TestLifecycleSlice(t *testing.T) {
	lcEach(t, func(t *testing.T, d *vmem.Device, way string) {
		s, err := vmem.NewSlice[uint32](d, 1000)
		if err != nil {
			t.Fatal(err)
		}
		lcClose(t, d, way, s.Close)
		buf := make([]uint32, 10)
		lcCheck(t, "Slice", reflect.TypeFor[*vmem.Slice[uint32]](), []lcCall{
			{"Len", func() error { return lcWant(s.Len() == 0, "Len") }, lcQuiet},
			{"Cap", func() error { return lcWant(s.Cap() == 0, "Cap") }, lcQuiet},
			{"Stats", func() error { st := s.Stats(); return lcWant(st.Len == 0 && st.Cap == 0 && st.Segments == 0, "Stats") }, lcQuiet},
			{"Err", func() error { return s.Err() }, lcQuiet},
			{"Get", func() error { s.Get(1); return nil }, lcPanic},
			{"Set", func() error { s.Set(1, 1); return nil }, lcPanic},
			{"Append", func() error { return s.Append(1) }, lcErr},
			{"Resize", func() error { return s.Resize(10) }, lcErr},
			{"CopyFrom", func() error { return s.CopyFrom(buf[:0], 0) }, lcErr},
			{"CopyTo", func() error { return s.CopyTo(buf[:0], 0) }, lcErr},
			{"Fill", func() error { return s.Fill(1) }, lcErr},
			{"GetBatch", func() error { return s.GetBatch([]int{1}, buf[:1]) }, lcErr},
			{"Save", func() error { return s.Save(io.Discard) }, lcErr},
			{"Chunks", func() error { return lcEmpty(s.Chunks()) }, lcQuiet},
			{"All", func() error { return lcEmpty(s.All()) }, lcQuiet},
			{"SetBatch", func() error { return s.SetBatch([]int{1}, buf[:1]) }, lcErr},
			{"Close", s.Close, lcQuiet},
		})
		if err := vmem.Sort(s); !errors.Is(err, vmem.ErrClosed) {
			t.Errorf("Sort after Close: %v", err)
		}
		if _, err := vmem.Sum(s); !errors.Is(err, vmem.ErrClosed) {
			t.Errorf("Sum after Close: %v", err)
		}
	})
}

func TestLifecycleMap(t *testing.T) {
	lcEach(t, func(t *testing.T, d *vmem.Device, way string) {
		m, err := NewMap[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		for i := range uint64(100) {
			if err := m.Put(i, i); err != nil {
				t.Fatal(err)
			}
		}
		lcClose(t, d, way, m.Close)
		ks, vs, found := []uint64{1, 2}, make([]uint64, 2), make([]bool, 2)
		lcCheck(t, "Map", reflect.TypeFor[*Map[uint64, uint64]](), []lcCall{
			{"Len", func() error { return lcWant(m.Len() == 0, "Len") }, lcQuiet},
			{"Stats", func() error { st := m.Stats(); return lcWant(st.Len == 0 && st.Cache.Bytes == 0, "Stats") }, lcQuiet},
			{"Err", func() error { return m.Err() }, lcQuiet},
			{"Get", func() error { m.Get(1); return nil }, lcPanic},
			{"Has", func() error { m.Has(1); return nil }, lcPanic},
			{"GetMany", func() error { m.getMany(ks, vs, found); return nil }, lcPanic},
			{"GetBatch", func() error { return m.GetBatch(ks, vs, found) }, lcErr},
			{"Put", func() error { return m.Put(1, 1) }, lcErr},
			{"PutMany", func() error { return m.putMany(ks, vs) }, lcErr},
			{"PutBatch", func() error { return m.PutBatch(ks, vs) }, lcErr},
			{"Delete", func() error { _, _, err := m.Delete(1); return err }, lcErr},
			{"Clear", m.Clear, lcErr},
			{"All", func() error { return lcEmpty(m.All()) }, lcPanic},
			{"Save", func() error { return m.Save(io.Discard) }, lcErr},
			{"Close", m.Close, lcQuiet},
		})
	})
}

func TestLifecycleBTree(t *testing.T) {
	lcEach(t, func(t *testing.T, d *vmem.Device, way string) {
		tr, err := NewBTreeOrdered[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		for i := range uint64(100) {
			if _, _, err := tr.ReplaceOrInsert(i, i); err != nil {
				t.Fatal(err)
			}
		}
		lcClose(t, d, way, tr.Close)
		ks, vs, found := []uint64{1, 2}, make([]uint64, 2), make([]bool, 2)
		lcCheck(t, "BTree", reflect.TypeFor[*BTree[uint64, uint64]](), []lcCall{
			{"Len", func() error { return lcWant(tr.Len() == 0, "Len") }, lcQuiet},
			{"Err", func() error { return tr.Err() }, lcQuiet},
			{"Stats", func() error { tr.Stats(); return nil }, lcQuiet},
			{"Get", func() error { tr.Get(1); return nil }, lcPanic},
			{"Has", func() error { tr.Has(1); return nil }, lcPanic},
			{"GetBatch", func() error { return tr.GetBatch(ks, vs, found) }, lcErr},
			{"Min", func() error { tr.Min(); return nil }, lcPanic},
			{"Max", func() error { tr.Max(); return nil }, lcPanic},
			{"ReplaceOrInsert", func() error { _, _, err := tr.ReplaceOrInsert(1, 1); return err }, lcErr},
			{"Put", func() error { return tr.Put(1, 1) }, lcErr},
			{"Delete", func() error { _, _, err := tr.Delete(1); return err }, lcErr},
			{"DeleteMin", func() error { _, _, _, err := tr.DeleteMin(); return err }, lcErr},
			{"DeleteMax", func() error { _, _, _, err := tr.DeleteMax(); return err }, lcErr},
			{"BulkLoad", func() error { return tr.BulkLoad(ks, vs) }, lcErr},
			{"Clear", tr.Clear, lcErr},
			{"Save", func() error { return tr.Save(io.Discard) }, lcErr},
			{"All", func() error { return lcEmpty(tr.All()) }, lcPanic},
			{"Backward", func() error { return lcEmpty(tr.Backward()) }, lcPanic},
			{"Range", func() error { return lcEmpty(tr.Range(0, 9)) }, lcPanic},
			{"Ascend", func() error { return lcEmpty(tr.Ascend(0)) }, lcPanic},
			{"Descend", func() error { return lcEmpty(tr.Descend(9)) }, lcPanic},
			{"Close", tr.Close, lcQuiet},
		})
	})
}

func TestLifecycleRing(t *testing.T) {
	lcEach(t, func(t *testing.T, d *vmem.Device, way string) {
		r, err := NewRing[uint64](d, 100)
		if err != nil {
			t.Fatal(err)
		}
		for i := range uint64(50) {
			if err := r.Push(i); err != nil {
				t.Fatal(err)
			}
		}
		lcClose(t, d, way, r.Close)
		buf := make([]uint64, 10)
		lcCheck(t, "Ring", reflect.TypeFor[*Ring[uint64]](), []lcCall{
			{"Len", func() error { return lcWant(r.Len() == 0, "Len") }, lcQuiet},
			{"Stats", func() error { return lcWant(r.Stats() == RingStats{}, "Stats") }, lcQuiet},
			{"Err", func() error { return nil }, lcQuiet},
			{"Push", func() error { return r.Push(1) }, lcErr},
			{"PushBatch", func() error { _, err := r.PushBatch(buf); return err }, lcErr},
			{"Flush", r.Flush, lcErr},
			{"PopBatch", func() error { _, err := r.PopBatch(buf); return err }, lcErr},
			{"Pop", func() error { r.Pop(); return nil }, lcPanic},
			{"Peek", func() error { r.Peek(); return nil }, lcPanic},
			{"Clear", r.Clear, lcErr},
			{"All", func() error {
				if err := lcEmpty(r.All()); err != nil {
					return err
				}
				if !errors.Is(r.Err(), vmem.ErrClosed) {
					return errors.New("All after Close did not set Err to vmem.ErrClosed")
				}
				return nil
			}, lcQuiet},
			{"Save", func() error { return r.Save(io.Discard) }, lcErr},
			{"Close", r.Close, lcQuiet},
		})
	})
}

func lcWant(ok bool, what string) error {
	if !ok {
		return errors.New(what + " after Close is not zero")
	}
	return nil
}

// lcEmpty ranges over seq and fails if it yields anything.
func lcEmpty[A, B any](seq func(func(A, B) bool)) error {
	for range seq {
		return errors.New("iteration after Close yielded an element")
	}
	return nil
}

func lcEmpty1[A any](seq func(func(A) bool)) error {
	for range seq {
		return errors.New("iteration after Close yielded an element")
	}
	return nil
}

// TestDeviceCloseWithOpenContainers: Device.Close closes every container
// still open, frees all memory, says how much, and is idempotent; the
// containers then report vmem.ErrClosed.
func TestDeviceCloseWithOpenContainers(t *testing.T) {
	for _, b := range vmemtest.Backends() {
		t.Run(string(b), func(t *testing.T) {
			d := lcDevice(t, b, "Device.Close")
			s, err := vmem.NewSlice[uint64](d, 1<<16)
			if err != nil {
				t.Fatal(err)
			}
			m, err := NewMap[string, string](d)
			if err != nil {
				t.Fatal(err)
			}
			m.Put(strings.Repeat("k", 100), strings.Repeat("v", 1000))
			tr, err := NewBTreeOrdered[uint64, string](d)
			if err != nil {
				t.Fatal(err)
			}
			tr.ReplaceOrInsert(1, strings.Repeat("v", 1000))
			r, err := NewRing[uint64](d, 1000)
			if err != nil {
				t.Fatal(err)
			}
			closedRing, err := NewRing[uint64](d, 10)
			if err != nil {
				t.Fatal(err)
			}
			closedRing.Close()
			err = d.Close()
			if !errors.Is(err, vmem.ErrOpenBlocks) || !strings.Contains(err.Error(), "4 open containers") {
				t.Fatalf("Device.Close: %v, want ErrOpenBlocks naming 4 open containers", err)
			}
			t.Log(err)
			if err := d.Close(); err != nil {
				t.Errorf("second Device.Close: %v", err)
			}
			if err := s.Append(1); !errors.Is(err, vmem.ErrClosed) {
				t.Errorf("Slice.Append: %v", err)
			}
			if err := m.Put("a", "b"); !errors.Is(err, vmem.ErrClosed) {
				t.Errorf("Map.Put: %v", err)
			}
			if _, _, err := tr.ReplaceOrInsert(2, "x"); !errors.Is(err, vmem.ErrClosed) {
				t.Errorf("BTree.ReplaceOrInsert: %v", err)
			}
			if err := r.Push(1); !errors.Is(err, vmem.ErrClosed) {
				t.Errorf("Ring.Push: %v", err)
			}
			for _, c := range []io.Closer{s, m, tr, r, closedRing} {
				if err := c.Close(); err != nil {
					t.Errorf("%T.Close after Device.Close: %v", c, err)
				}
			}
		})
	}
}

// TestDeviceCloseClean: no error when every container was closed first,
// and the Stats show nothing in use before the device closes.
func TestDeviceCloseClean(t *testing.T) {
	for _, b := range vmemtest.Backends() {
		t.Run(string(b), func(t *testing.T) {
			d := lcDevice(t, b, "Device.Close")
			s, _ := vmem.NewSlice[uint64](d, 100)
			m, _ := NewMap[string, uint64](d)
			m.Put("x", 1)
			tr, _ := NewBTreeOrdered[uint64, uint64](d)
			tr.ReplaceOrInsert(1, 1)
			r, _ := NewRing[uint64](d, 10)
			for _, c := range []io.Closer{s, m, tr, r} {
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
			}
			for tier := vmem.Tier(0); tier <= vmem.Host; tier++ {
				if st := d.Info().Tiers[tier]; st.Blocks != 0 || st.InUse != 0 {
					t.Errorf("%s tier after closing every container: %+v", tier, st)
				}
			}
			if err := d.Close(); err != nil {
				t.Fatalf("Device.Close: %v", err)
			}
		})
	}
}

// TestLeakReportNamesAllocation: the leak report of vmemtest names the
// function that allocated the leaked block.
func TestLeakReportNamesAllocation(t *testing.T) {
	for _, b := range vmemtest.Backends() {
		t.Run(string(b), func(t *testing.T) {
			d := vmemtest.Open(t, b, vmem.Options{})
			r, err := lcLeakyHelper(d)
			if err != nil {
				t.Fatal(err)
			}
			err = vmemtest.Leaks(d)
			if err == nil || !strings.Contains(err.Error(), "lcLeakyHelper") || !strings.Contains(err.Error(), "NewRing") {
				t.Errorf("leak report does not name the allocation: %v", err)
			}
			r.Close()
			if err := vmemtest.Leaks(d); err != nil {
				t.Errorf("after Close: %v", err)
			}
		})
	}
}

func lcLeakyHelper(d *vmem.Device) (*Ring[uint64], error) { return NewRing[uint64](d, 10) }
