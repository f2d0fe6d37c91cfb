package collections

// Faults, device loss and lifecycle, for every container (vmem.Slice
// included, since it shares the harness), on every backend. See
// docs/reliability.md for the contract these tests hold the containers to.
//
// A subject is a container with a Go model and a fixed script of mutating
// steps. The sweeps run the script once for every allocation (FailAlloc =
// 1..N) and every submission (FailSubmit = 1..N) it makes, N counted by a
// fault-free run, and check:
//   - out of memory: the step returns ErrOutOfMemory, the container still
//     equals the model as it was before the step, and with the fault
//     disarmed the same step and the rest of the script succeed;
//   - device lost: the step returns ErrDeviceLost, every later step with an
//     error result returns ErrDeviceLost, reads return the loss or panic
//     with it (lost.go), and Close frees everything.
// Construction is part of the sweep: a constructor that fails leaves no
// block behind.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// relStep is one mutating operation of a script.
type relStep struct {
	name string
	// do runs the operation on the container. Steps of methods without an
	// error result return the container's Err instead.
	do func() error
	// model applies the operation to the model; called once do succeeded.
	model func()
	// noErr: the method has no error result, so after device loss it is
	// not required to report the loss.
	noErr bool
	// partial, when set, accepts a documented partial effect of an out of
	// memory failure (PutMany): it checks the container against the model
	// and brings the model up to date, or returns why the state is wrong.
	partial func() error
}

// relSubject is a container under test with its model and script.
type relSubject struct {
	steps []relStep
	check func() error // the container equals the model
	close func() error
}

// relKind names a container variant and builds it.
type relKind struct {
	name  string
	build func(d *vmem.Device) (*relSubject, error)
	// vulkanOnly: the variant only differs from another on a GPU.
	vulkanOnly bool
}

func relKinds() []relKind {
	return []relKind{
		{name: "Slice", build: relSlice(false)},
		{name: "Slice/private", build: relSlice(true)},
		{name: "Map", build: relMapU64},
		{name: "Map/string", build: relMapStr},
		{name: "BTree", build: relBTree(vmem.Mapped)},
		{name: "BTree/private", build: relBTree(vmem.Private)},
		{name: "BTree/string", build: relBTreeStr},
		{name: "Ring", build: relRing(8)},
		{name: "Ring/large", build: relRing(100)},
	}
}

// relOpts are device options for the sweeps: small chunks, so that growth
// goes back to the driver often.
var relOpts = vmem.Options{ChunkSize: 1 << 20}

// relCount runs the script without faults and returns how many allocations
// and submissions it made (construction included).
func relCount(t *testing.T, d *vmem.Device, k relKind) (allocs, submits int64) {
	t.Helper()
	const big = 1 << 60
	d.InjectFaults(vmem.Faults{FailAlloc: big, FailSubmit: big})
	s, err := k.build(d)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	for i, st := range s.steps {
		if err := st.do(); err != nil {
			t.Fatalf("step %d (%s) without faults: %v", i, st.name, err)
		}
		st.model()
	}
	p := d.PendingFaults() // the checks below read, and count too
	d.InjectFaults(vmem.Faults{})
	if err := s.check(); err != nil {
		t.Fatalf("after the script without faults: %v", err)
	}
	if err := s.close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	vmemtest.CheckNoLeaks(t, d)
	return big - p.FailAlloc, big - p.FailSubmit
}

// relInjected reports whether err is the fault the sweep armed.
func relInjected(err error, target error) bool {
	return errors.Is(err, target) && strings.Contains(err.Error(), "injected")
}

// TestFaultsOutOfMemory sweeps FailAlloc over every allocation of every
// script.
func TestFaultsOutOfMemory(t *testing.T) {
	for _, k := range relKinds() {
		t.Run(k.name, func(t *testing.T) {
			vmemtest.Each(t, relOpts, func(t *testing.T, d *vmem.Device) {
				if k.vulkanOnly && d.Backend() != vmem.BackendVulkan {
					t.Skip("same as another variant on this backend")
				}
				allocs, _ := relCount(t, d, k)
				if allocs == 0 {
					t.Fatal("the script allocates nothing")
				}
				for _, n := range relPoints(allocs, relMaxRuns(d.Backend())) {
					relOOMRun(t, d, k, n)
					if t.Failed() {
						return
					}
				}
			})
		})
	}
}

func relOOMRun(t *testing.T, d *vmem.Device, k relKind, n int64) {
	t.Helper()
	d.InjectFaults(vmem.Faults{FailAlloc: n})
	defer d.InjectFaults(vmem.Faults{})
	s, err := k.build(d)
	if err != nil {
		if !relInjected(err, vmem.ErrOutOfMemory) {
			t.Fatalf("FailAlloc %d: constructor: %v, want the injected ErrOutOfMemory", n, err)
		}
		if err := vmemtest.Leaks(d); err != nil {
			t.Fatalf("FailAlloc %d: the failed constructor left blocks behind: %v", n, err)
		}
		return
	}
	fired := false
	for i, st := range s.steps {
		err := st.do()
		if err == nil {
			st.model()
			continue
		}
		if fired || !relInjected(err, vmem.ErrOutOfMemory) {
			t.Fatalf("FailAlloc %d: step %d (%s): %v, want the injected ErrOutOfMemory", n, i, st.name, err)
		}
		fired = true
		if st.partial != nil {
			if perr := st.partial(); perr != nil {
				t.Fatalf("FailAlloc %d: step %d (%s) failed with %v and left: %v", n, i, st.name, err, perr)
			}
		} else if cerr := s.check(); cerr != nil {
			t.Fatalf("FailAlloc %d: step %d (%s) failed with %v but changed the container: %v", n, i, st.name, err, cerr)
		}
		// Disarmed, the same step works.
		d.InjectFaults(vmem.Faults{})
		if err := st.do(); err != nil {
			t.Fatalf("FailAlloc %d: step %d (%s) again without the fault: %v", n, i, st.name, err)
		}
		st.model()
	}
	// Reads may allocate too (a Map iteration's snapshot buffer): disarm a
	// fault that no step reached.
	d.InjectFaults(vmem.Faults{})
	if err := s.check(); err != nil {
		t.Fatalf("FailAlloc %d: at the end: %v", n, err)
	}
	if err := s.close(); err != nil {
		t.Fatalf("FailAlloc %d: Close: %v", n, err)
	}
	if err := vmemtest.Leaks(d); err != nil {
		t.Fatalf("FailAlloc %d: %v", n, err)
	}
}

// TestFaultsDeviceLost sweeps FailSubmit over every submission of every
// script, then loses the device between steps with Faults.LoseDevice.
// Device loss is sticky, so every run gets a fresh device.
func TestFaultsDeviceLost(t *testing.T) {
	if buildconst.Invariants {
		// The invariants build's checks read the containers back by DMA:
		// those reads are submissions too, so the Nth one would land in a
		// check instead of in the operation under test.
		t.Skip("not with -tags invariants")
	}
	for _, k := range relKinds() {
		t.Run(k.name, func(t *testing.T) {
			for _, b := range vmemtest.Backends() {
				t.Run(b.String(), func(t *testing.T) {
					if k.vulkanOnly && b != vmem.BackendVulkan {
						t.Skip("same as another variant on this backend")
					}
					d := relOpen(t, b)
					_, submits := relCount(t, d, k)
					steps := len(relBuild(t, d, k).steps)
					d.Close()
					// Every run needs a fresh device (loss is sticky), which
					// costs tens of milliseconds on lavapipe: sample.
					runs := relMaxRuns(b)
					if b == vmem.BackendVulkan {
						runs /= 2
					}
					for _, n := range relPoints(submits, runs) {
						if t.Failed() {
							return
						}
						relLostRun(t, relOpen(t, b), k, vmem.Faults{FailSubmit: n}, -1)
					}
					for _, at := range relPoints(int64(steps), runs/2) {
						if t.Failed() {
							return
						}
						relLostRun(t, relOpen(t, b), k, vmem.Faults{LoseDevice: true}, int(at-1))
					}
				})
			}
		})
	}
}

// relMaxRuns bounds the fault positions one sweep tries: on the host
// backend every one, on lavapipe (slower, and a fresh device per device-lost
// run) a sample; fewer with -short and under the race detector, which CI
// runs on two cores.
func relMaxRuns(b vmem.Backend) int {
	host := b == vmem.BackendHost
	switch {
	case buildconst.Race && host:
		return 12
	case buildconst.Race:
		return 4
	case testing.Short() && host:
		return 40
	case testing.Short():
		return 8
	case host:
		return 1 << 30
	}
	return 24
}

// relPoints returns the fault positions to try out of 1..n: all of them if
// there are at most max, else the first few, the last, and evenly spread
// ones between.
func relPoints(n int64, max int) []int64 {
	if n <= int64(max) {
		pts := make([]int64, n)
		for i := range pts {
			pts[i] = int64(i) + 1
		}
		return pts
	}
	var pts []int64
	head := int64(max / 4)
	for i := int64(1); i <= head; i++ {
		pts = append(pts, i)
	}
	rest := int64(max) - head
	for i := int64(1); i <= rest; i++ {
		pts = append(pts, head+(n-head)*i/rest)
	}
	return slices.Compact(pts)
}

// relOpen opens a device that the caller closes (vmemtest's would stay
// open until the test ends, and sweeps open many).
func relOpen(t *testing.T, b vmem.Backend) *vmem.Device {
	t.Helper()
	o := relOpts
	o.Backend, o.TraceBlocks = b, true
	d, err := vmem.Open(o)
	if err != nil {
		if b == vmem.BackendVulkan && !vmemtest.RequireVulkan() {
			t.Skipf("no Vulkan device: %v", err)
		}
		t.Fatal(err)
	}
	return d
}

// relBuild builds a subject and closes it at cleanup (to count steps).
func relBuild(t *testing.T, d *vmem.Device, k relKind) *relSubject {
	s, err := k.build(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	return s
}

// relLostRun runs the script with f armed; with loseAt >= 0, f is armed
// before step loseAt instead of at the start. It closes d.
func relLostRun(t *testing.T, d *vmem.Device, k relKind, f vmem.Faults, loseAt int) {
	t.Helper()
	defer d.Close()
	what := fmt.Sprintf("%+v before step %d", f, loseAt)
	if loseAt < 0 {
		d.InjectFaults(f)
	}
	s, err := k.build(d)
	if err != nil {
		if !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("%s: constructor: %v, want ErrDeviceLost", what, err)
		}
		if err := vmemtest.Leaks(d); err != nil {
			t.Fatalf("%s: the failed constructor left blocks behind: %v", what, err)
		}
		return
	}
	lost := false
	for i, st := range s.steps {
		if i == loseAt {
			d.InjectFaults(f)
			lost = true
		}
		var err error
		if st.noErr {
			// A read within may meet the loss: it panics (lost.go).
			err = relLostPanic(t, what, st.name, st.do)
		} else {
			err = st.do()
		}
		switch {
		case lost && st.noErr:
			// No error result: nothing to check but that it did not crash.
		case lost:
			if !errors.Is(err, vmem.ErrDeviceLost) {
				t.Fatalf("%s: step %d (%s) after the loss: %v, want ErrDeviceLost", what, i, st.name, err)
			}
		case err == nil:
			st.model()
		case errors.Is(err, vmem.ErrDeviceLost):
			lost = true
		default:
			t.Fatalf("%s: step %d (%s): %v, want nil or ErrDeviceLost", what, i, st.name, err)
		}
		if !lost && errors.Is(d.Err(), vmem.ErrDeviceLost) {
			// A method without an error result met the loss.
			if !st.noErr {
				t.Fatalf("%s: step %d (%s) lost the device but returned %v", what, i, st.name, err)
			}
			lost = true
		}
	}
	if lost {
		// The contents are undefined now: a read returns the loss or
		// panics with it, and nothing else.
		relLostPanic(t, what, "check", s.check)
	} else if loseAt < 0 {
		if d.PendingFaults().FailSubmit != 0 {
			// Fewer submissions than in the counting run: where a Map's
			// keys land depends on its random seed.
			t.Logf("%s: not reached", what)
		} else {
			t.Fatalf("%s: the fault fired but no step reported it", what)
		}
	}
	if err := s.close(); err != nil {
		t.Fatalf("%s: Close after device loss: %v", what, err)
	}
	if err := vmemtest.Leaks(d); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("%s: Device.Close: %v", what, err)
	}
}

// relLostPanic runs f, accepting a panic only as a read on a lost device
// raises it (an error matching ErrDeviceLost), which it returns.
func relLostPanic(t *testing.T, what, name string, f func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok || !errors.Is(e, vmem.ErrDeviceLost) {
				t.Fatalf("%s: %s panicked: %v", what, name, r)
			}
			err = e
		}
	}()
	return f()
}

// ---- subjects ----

// relSlice: a Slice of 24-byte records (three to a line on a GPU, so
// ragged groups are covered) grown from empty by Append, Grow and Resize,
// written through CopyFrom, a Writer, Set and Fill, and sorted.
func relSlice(private bool) func(d *vmem.Device) (*relSubject, error) {
	type rec struct{ A, B, C uint64 }
	return func(d *vmem.Device) (*relSubject, error) {
		opts := []vmem.SliceOption{vmem.WithSegmentBytes(4096)}
		if private {
			opts = append(opts, vmem.InTier(vmem.Private))
		}
		s, err := vmem.NewSlice[rec](d, 3, opts...)
		if err != nil {
			return nil, err
		}
		keys, err := vmem.NewSlice[uint32](d, 0, opts...)
		if err != nil {
			s.Close()
			return nil, err
		}
		model := make([]rec, 3)
		var kmodel []uint32
		r := func(i int) rec { return rec{uint64(i), uint64(i) * 3, ^uint64(i)} }
		var steps []relStep
		add := func(name string, do func() error, model func()) {
			steps = append(steps, relStep{name: name, do: do, model: model})
		}
		for i := range 12 {
			add(fmt.Sprintf("Append(%d)", i), func() error { return s.Append(r(i)) }, func() { model = append(model, r(i)) })
		}
		batch := make([]rec, 300)
		for i := range batch {
			batch[i] = r(1000 + i)
		}
		add("Append(300)", func() error { return s.Append(batch...) }, func() { model = append(model, batch...) })
		add("Grow(500)", func() error { return s.Grow(500) }, func() {})
		add("Resize(900)", func() error { return s.Resize(900) }, func() { model = append(model, make([]rec, 900-len(model))...) })
		add("CopyFrom", func() error { return s.CopyFrom(batch[:250], 401) }, func() { copy(model[401:], batch[:250]) })
		add("Writer", func() error {
			w := s.Writer(4)
			for i := 0; i < min(900, s.Len()); i += 7 {
				w.Set(i, r(-i))
			}
			return w.Flush()
		}, func() {
			for i := 0; i < 900; i += 7 {
				model[i] = r(-i)
			}
		})
		add("Resize(100)", func() error { return s.Resize(100) }, func() { model = model[:100] })
		add("Resize(700)", func() error { return s.Resize(700) }, func() { model = append(model, make([]rec, 600)...) })
		steps = append(steps, relStep{name: "Set", noErr: true, do: func() error {
			if s.Len() > 5 {
				s.Set(5, r(55))
			}
			return s.Err()
		}, model: func() { model[5] = r(55) }})
		add("Fill", func() error { return s.Fill(r(7)) }, func() {
			for i := range model {
				model[i] = r(7)
			}
		})
		kb := make([]uint32, 2000)
		for i := range kb {
			kb[i] = uint32(i*7919) % 1009
		}
		add("keys.Append", func() error { return keys.Append(kb...) }, func() { kmodel = append(kmodel, kb...) })
		add("Sort", func() error { return vmem.Sort(keys) }, func() { slices.Sort(kmodel) })
		add("SortBy", func() error {
			return vmem.SortBy(s, func(v *rec) *uint64 { return &v.B })
		}, func() {})
		return &relSubject{
			steps: steps,
			check: func() error {
				if err := relSliceEq(s, model); err != nil {
					return err
				}
				return relSliceEq(keys, kmodel)
			},
			close: func() error { return errors.Join(s.Close(), keys.Close()) },
		}, nil
	}
}

func relSliceEq[T comparable](s *vmem.Slice[T], model []T) error {
	if s.Len() != len(model) {
		return fmt.Errorf("Len %d, model %d", s.Len(), len(model))
	}
	got := make([]T, len(model))
	if err := s.CopyTo(got, 0); err != nil {
		return fmt.Errorf("CopyTo: %w", err)
	}
	for i := range got {
		if got[i] != model[i] {
			return fmt.Errorf("element %d is %v, model %v", i, got[i], model[i])
		}
	}
	return nil
}

// relMapScript is the Map script: Puts that grow the table several times,
// overwrites, a PutMany that grows it again, Deletes, Clear and refill.
func relMapScript[K comparable, V comparable](m *Map[K, V], key func(int) K, val func(int) V) *relSubject {
	model := map[K]V{}
	var steps []relStep
	put := func(i, v int) {
		steps = append(steps, relStep{name: fmt.Sprintf("Put(%d)", i),
			do:    func() error { return m.Put(key(i), val(v)) },
			model: func() { model[key(i)] = val(v) }})
	}
	for i := range 40 {
		put(i, i)
	}
	for i := 0; i < 40; i += 5 {
		put(i, i+100)
	}
	ks := make([]K, 120)
	vs := make([]V, 120)
	for i := range ks {
		ks[i], vs[i] = key(20+i), val(1000+i)
	}
	steps = append(steps, relStep{name: "PutMany(120)",
		do: func() error { return m.PutMany(ks, vs) },
		model: func() {
			for i := range ks {
				model[key(20+i)] = vs[i]
			}
		},
		// PutMany's documented effect on ErrOutOfMemory: the keys before
		// the one that failed are stored, the rest are unchanged.
		partial: func() error {
			for j := 0; j <= len(ks); j++ {
				try := maps.Clone(model)
				for i := range j {
					try[ks[i]] = vs[i]
				}
				if relMapEq(m, try) == nil {
					model = try
					return nil
				}
			}
			return fmt.Errorf("not a prefix of the batch applied: %w", relMapEq(m, model))
		}})
	for i := 0; i < 140; i += 3 {
		steps = append(steps, relStep{name: fmt.Sprintf("Delete(%d)", i), noErr: true,
			do: func() error {
				m.Delete(key(i))
				return m.Err()
			},
			model: func() { delete(model, key(i)) }})
	}
	steps = append(steps, relStep{name: "Clear", noErr: true,
		do:    func() error { m.Clear(); return m.Err() },
		model: func() { clear(model) }})
	for i := range 20 {
		put(500+i, i)
	}
	return &relSubject{
		steps: steps,
		check: func() error { return relMapEq(m, model) },
		close: m.Close,
	}
}

func relMapEq[K comparable, V comparable](m *Map[K, V], model map[K]V) error {
	if m.Len() != len(model) {
		return fmt.Errorf("Len %d, model %d", m.Len(), len(model))
	}
	for k, v := range model {
		if got, ok := m.Get(k); !ok || got != v {
			return fmt.Errorf("Get(%v) = %v, %v; model %v", k, got, ok, v)
		}
	}
	n := 0
	for k, v := range m.All() {
		if mv, ok := model[k]; !ok || mv != v {
			return fmt.Errorf("All yields %v: %v, model %v, %v", k, v, mv, ok)
		}
		n++
	}
	if n != len(model) {
		return fmt.Errorf("All yields %d entries, model %d (Err %v)", n, len(model), m.Err())
	}
	return nil
}

func relMapU64(d *vmem.Device) (*relSubject, error) {
	m, err := NewMap[uint64, [3]uint64](d, mapWithSegmentBuckets(16))
	if err != nil {
		return nil, err
	}
	return relMapScript(m, func(i int) uint64 { return uint64(i) * 0x9e3779b9 },
		func(i int) [3]uint64 { return [3]uint64{uint64(i), 1, 2} }), nil
}

func relMapStr(d *vmem.Device) (*relSubject, error) {
	m, err := NewMap[string, string](d)
	if err != nil {
		return nil, err
	}
	return relMapScript(m, func(i int) string { return fmt.Sprintf("key-%d-%s", i, strings.Repeat("k", i%50)) },
		func(i int) string { return strings.Repeat(fmt.Sprint(i), i%40) }), nil
}

// relBTreeScript: inserts in an order that splits leaves and extents,
// replaces, a BulkLoad at the right edge, deletes that merge leaves,
// DeleteMin/Max, Clear and refill.
func relBTreeScript[V comparable](t *BTree[uint64, V], val func(int) V) *relSubject {
	model := map[uint64]V{}
	var steps []relStep
	ins := func(k uint64, v int) {
		steps = append(steps, relStep{name: fmt.Sprintf("ReplaceOrInsert(%d)", k),
			do: func() error {
				_, _, err := t.ReplaceOrInsert(k, val(v))
				return err
			},
			model: func() { model[k] = val(v) }})
	}
	for i := range 150 {
		ins(uint64(i*37%151), i)
	}
	for i := 0; i < 150; i += 10 {
		ins(uint64(i), i+1000)
	}
	bk := make([]uint64, 200)
	bv := make([]V, 200)
	for i := range bk {
		bk[i], bv[i] = uint64(1000+i), val(i)
	}
	steps = append(steps, relStep{name: "BulkLoad(200)",
		do: func() error { return t.BulkLoad(bk, bv) },
		model: func() {
			for i := range bk {
				model[bk[i]] = bv[i]
			}
		}})
	for i := 0; i < 150; i += 2 {
		steps = append(steps, relStep{name: fmt.Sprintf("Delete(%d)", i),
			do: func() error {
				_, _, err := t.Delete(uint64(i))
				return err
			},
			model: func() { delete(model, uint64(i)) }})
	}
	for _, right := range []bool{false, true, false} {
		steps = append(steps, relStep{name: fmt.Sprintf("DeleteEdge(%v)", right),
			do: func() error {
				var err error
				if right {
					_, _, _, err = t.DeleteMax()
				} else {
					_, _, _, err = t.DeleteMin()
				}
				return err
			},
			model: func() {
				ks := slices.Sorted(maps.Keys(model))
				if right {
					delete(model, ks[len(ks)-1])
				} else {
					delete(model, ks[0])
				}
			}})
	}
	steps = append(steps, relStep{name: "Clear", do: t.Clear, model: func() { clear(model) }})
	for i := range 40 {
		ins(uint64(5000-i), i)
	}
	return &relSubject{
		steps: steps,
		check: func() error { return relBTreeEq(t, model) },
		close: t.Close,
	}
}

func relBTreeEq[V comparable](t *BTree[uint64, V], model map[uint64]V) error {
	if t.Len() != len(model) {
		return fmt.Errorf("Len %d, model %d", t.Len(), len(model))
	}
	want := slices.Sorted(maps.Keys(model))
	i := 0
	var bad error
	t.Ascend(func(k uint64, v V) bool {
		if i >= len(want) || k != want[i] || v != model[k] {
			bad = fmt.Errorf("Ascend entry %d is %d: %v, model %v", i, k, v, model[k])
			return false
		}
		i++
		return true
	})
	if bad != nil {
		return bad
	}
	if i != len(want) {
		return fmt.Errorf("Ascend yields %d entries, model %d (Err %v)", i, len(want), t.Err())
	}
	for _, k := range want[:min(len(want), 20)] {
		if v, ok := t.Get(k); !ok || v != model[k] {
			return fmt.Errorf("Get(%d) = %v, %v; model %v", k, v, ok, model[k])
		}
	}
	return nil
}

func relBTree(tier vmem.Tier) func(d *vmem.Device) (*relSubject, error) {
	return func(d *vmem.Device) (*relSubject, error) {
		t, err := NewBTreeOrdered[uint64, uint64](d, WithBTreeLeafEntries(4), WithBTreeExtentLeaves(2), WithBTreeTier(tier))
		if err != nil {
			return nil, err
		}
		return relBTreeScript(t, func(i int) uint64 { return uint64(i) * 11 }), nil
	}
}

func relBTreeStr(d *vmem.Device) (*relSubject, error) {
	t, err := NewBTreeOrdered[uint64, string](d, WithBTreeLeafEntries(4), WithBTreeExtentLeaves(2))
	if err != nil {
		return nil, err
	}
	return relBTreeScript(t, func(i int) string { return strings.Repeat("v", i%70) }), nil
}

// relRing: pushes and pops around the ring several times, single and in
// batches, with a Reset in the middle; size is the element size in bytes.
func relRing(size int) func(d *vmem.Device) (*relSubject, error) {
	return func(d *vmem.Device) (*relSubject, error) {
		if size == 8 {
			r, err := NewRing[uint64](d, 50)
			if err != nil {
				return nil, err
			}
			return relRingScript(r, func(i int) uint64 { return uint64(i) }), nil
		}
		type big [25]uint32
		r, err := NewRing[big](d, 50)
		if err != nil {
			return nil, err
		}
		return relRingScript(r, func(i int) big { var b big; b[0], b[24] = uint32(i), ^uint32(i); return b }), nil
	}
}

func relRingScript[T comparable](r *Ring[T], val func(int) T) *relSubject {
	var model []T
	var steps []relStep
	next := 0
	push := func() {
		v := next
		next++
		steps = append(steps, relStep{name: fmt.Sprintf("Push(%d)", v),
			do: func() error { return r.Push(val(v)) }, model: func() { model = append(model, val(v)) }})
	}
	pushBatch := func(n int) {
		vs := make([]T, n)
		for i := range vs {
			vs[i] = val(next + i)
		}
		next += n
		steps = append(steps, relStep{name: fmt.Sprintf("PushBatch(%d)", n),
			do: func() error {
				k, err := r.PushBatch(vs)
				if err == nil && k != n {
					err = fmt.Errorf("PushBatch pushed %d of %d", k, n)
				}
				return err
			},
			model: func() { model = append(model, vs...) }})
	}
	pop := func() {
		var got T
		var ok bool
		steps = append(steps, relStep{name: "Pop", noErr: true,
			do: func() error {
				got, ok = r.Pop()
				if !ok {
					return errors.New("Pop found the ring empty")
				}
				return r.Err()
			},
			model: func() {
				if got != model[0] {
					panic(fmt.Sprintf("Pop = %v, model %v", got, model[0]))
				}
				model = model[1:]
			}})
	}
	popBatch := func(n int) {
		dst := make([]T, n)
		var k int
		steps = append(steps, relStep{name: fmt.Sprintf("PopBatch(%d)", n),
			do: func() error {
				var err error
				k, err = r.PopBatch(dst)
				return err
			},
			model: func() {
				if k != min(n, len(model)) || !slices.Equal(dst[:k], model[:k]) {
					panic(fmt.Sprintf("PopBatch got %d: %v, model %v", k, dst[:k], model[:min(n, len(model))]))
				}
				model = model[k:]
			}})
	}
	for range 3 {
		for range 10 {
			push()
		}
		pushBatch(30)
		pop()
		pop()
		popBatch(25)
		pushBatch(7)
		popBatch(40)
	}
	steps = append(steps, relStep{name: "Reset", noErr: true, do: func() error { r.Reset(); return nil }, model: func() { model = nil }})
	pushBatch(45)
	popBatch(20)
	return &relSubject{
		steps: steps,
		check: func() error {
			if r.Len() != len(model) {
				return fmt.Errorf("Len %d, model %d", r.Len(), len(model))
			}
			i := 0
			for _, v := range r.All() {
				if i >= len(model) || v != model[i] {
					return fmt.Errorf("All element %d differs", i)
				}
				i++
			}
			if i != len(model) {
				return fmt.Errorf("All yields %d, model %d (Err %v)", i, len(model), r.Err())
			}
			return nil
		},
		close: r.Close,
	}
}
