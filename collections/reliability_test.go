package collections

// Faults, device loss and lifecycle, for every container (vmem.Slice
// included, since it shares the harness), on every backend. See
// docs/reliability.md for the contract these tests hold the containers to.
//
// A subject is a container with a Go model and a fixed script of mutating
// steps. The sweeps run the script once for every allocation (FailAlloc =
// 1..N) and every submission (FailSubmit = 1..N) it makes, N counted by a
// fault-free run, and check:
//   - out of memory: the step returns vmem.ErrOutOfMemory, the container still
//     equals the model as it was before the step, and with the fault
//     disarmed the same step and the rest of the script succeed;
//   - device lost: the step returns vmem.ErrDeviceLost, every later step with an
//     error result returns vmem.ErrDeviceLost, reads return the loss or panic
//     with it (lost.go), and Close frees everything.
// Construction is part of the sweep: a constructor that fails leaves no
// block behind.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/kern"
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
	kdev(d).InjectFaults(kern.Faults{FailAlloc: big, FailSubmit: big})
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
	p := kdev(d).PendingFaults() // the checks below read, and count too
	kdev(d).InjectFaults(kern.Faults{})
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
				if k.vulkanOnly && d.Info().Backend != vmem.BackendVulkan {
					t.Skip("same as another variant on this backend")
				}
				allocs, _ := relCount(t, d, k)
				if allocs == 0 {
					t.Fatal("the script allocates nothing")
				}
				for _, n := range relPoints(allocs, relMaxRuns(d.Info().Backend)) {
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
	kdev(d).InjectFaults(kern.Faults{FailAlloc: n})
	defer kdev(d).InjectFaults(kern.Faults{})
	s, err := k.build(d)
	if err != nil {
		if !relInjected(err, vmem.ErrOutOfMemory) {
			t.Fatalf("FailAlloc %d: constructor: %v, want the injected vmem.ErrOutOfMemory", n, err)
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
			t.Fatalf("FailAlloc %d: step %d (%s): %v, want the injected vmem.ErrOutOfMemory", n, i, st.name, err)
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
		kdev(d).InjectFaults(kern.Faults{})
		if err := st.do(); err != nil {
			t.Fatalf("FailAlloc %d: step %d (%s) again without the fault: %v", n, i, st.name, err)
		}
		st.model()
	}
	// Reads may allocate too (a Map iteration's snapshot buffer): disarm a
	// fault that no step reached.
	kdev(d).InjectFaults(kern.Faults{})
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
				t.Run(string(b), func(t *testing.T) {
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
						relLostRun(t, relOpen(t, b), k, kern.Faults{FailSubmit: n}, -1)
					}
					for _, at := range relPoints(int64(steps), runs/2) {
						if t.Failed() {
							return
						}
						relLostRun(t, relOpen(t, b), k, kern.Faults{LoseDevice: true}, int(at-1))
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
	o.Backend = b
	d, err := vmem.Open(o)
	if err != nil {
		if b == vmem.BackendVulkan && !vmemtest.RequireVulkan() {
			t.Skipf("no Vulkan device: %v", err)
		}
		t.Fatal(err)
	}
	kdev(d).TraceBlocks()
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
func relLostRun(t *testing.T, d *vmem.Device, k relKind, f kern.Faults, loseAt int) {
	t.Helper()
	defer d.Close()
	what := fmt.Sprintf("%+v before step %d", f, loseAt)
	if loseAt < 0 {
		kdev(d).InjectFaults(f)
	}
	s, err := k.build(d)
	if err != nil {
		if !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("%s: constructor: %v, want vmem.ErrDeviceLost", what, err)
		}
		if err := vmemtest.Leaks(d); err != nil {
			t.Fatalf("%s: the failed constructor left blocks behind: %v", what, err)
		}
		return
	}
	lost := false
	for i, st := range s.steps {
		if i == loseAt {
			kdev(d).InjectFaults(f)
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
				t.Fatalf("%s: step %d (%s) after the loss: %v, want vmem.ErrDeviceLost", what, i, st.name, err)
			}
		case err == nil:
			st.model()
		case errors.Is(err, vmem.ErrDeviceLost):
			lost = true
		default:
			t.Fatalf("%s: step %d (%s): %v, want nil or vmem.ErrDeviceLost", what, i, st.name, err)
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
		if kdev(d).PendingFaults().FailSubmit != 0 {
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
// raises it (an error matching vmem.ErrDeviceLost), which it returns.
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
