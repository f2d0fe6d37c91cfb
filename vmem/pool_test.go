package vmem_test

// Tests of Pool and PoolSlice.
//
// This machine (and CI) has no second GPU, so the pools here simulate
// several devices: three host devices, or lavapipe's one CPU Vulkan device
// opened twice as two logical devices. Each simulated device has its own
// allocator, limits, faults and (on Vulkan) queues, so routing, spilling,
// fan-out and error paths run exactly as on several GPUs; but the devices
// share one memory and one processor, so nothing here measures the speed
// of several GPUs (TestPoolCapacity and the benchmarks do, on real GPUs).

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// poolKind is one simulated pool.
type poolKind struct {
	name    string
	backend vmem.Backend
	n       int
}

func poolKinds() []poolKind {
	ks := []poolKind{{"host3", vmem.BackendHost, 3}}
	if slices.Contains(vmemtest.Backends(), vmem.BackendVulkan) {
		ks = append(ks, poolKind{"lavapipe2", vmem.BackendVulkan, 2})
	}
	return ks
}

// openPool opens k's devices (options per device: opts[i], or the last of
// opts) and makes a pool of them. vmemtest checks each for leaks and closes
// it at cleanup; a missing Vulkan device skips (or fails with
// VMEM_REQUIRE_VULKAN=1).
func openPool(t testing.TB, k poolKind, opts ...vmem.Options) *vmem.Pool {
	t.Helper()
	devs := make([]*vmem.Device, k.n)
	for i := range devs {
		var o vmem.Options
		if len(opts) > 0 {
			o = opts[min(i, len(opts)-1)]
		}
		if k.backend == vmem.BackendVulkan && o.ChunkSize == 0 {
			o.ChunkSize = 4 << 20 // lavapipe fills memory at CPU speed
		}
		devs[i] = vmemtest.Open(t, k.backend, o)
	}
	p, err := vmemtest.NewPool(devs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// eachPool runs f on every simulated pool with both placements.
func eachPool(t *testing.T, f func(t *testing.T, p *vmem.Pool)) {
	for _, k := range poolKinds() {
		for _, pl := range []vmem.Placement{vmem.Stripe, vmem.FillFirst} {
			t.Run(k.name+"/"+string(pl), func(t *testing.T) {
				p := openPool(t, k)
				vmem.SetPlacement(p, pl)
				f(t, p)
			})
		}
	}
}

func TestPoolNew(t *testing.T) {
	if _, err := vmemtest.NewPool(); !errors.Is(err, vmem.ErrNoDevice) {
		t.Errorf("NewPool(): %v, want ErrNoDevice", err)
	}
	d := vmemtest.Open(t, vmem.BackendHost, vmem.Options{})
	if _, err := vmemtest.NewPool(d, nil); !errors.Is(err, vmem.ErrNoDevice) {
		t.Errorf("NewPool(d, nil): %v, want ErrNoDevice", err)
	}
	if _, err := vmemtest.NewPool(d, d); err == nil {
		t.Error("NewPool(d, d) accepted a device twice")
	}
	d2, _ := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	d2.Close()
	if _, err := vmemtest.NewPool(d, d2); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("NewPool with a closed device: %v, want ErrClosed", err)
	}
	p, err := vmemtest.NewPool(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Devices()) != 1 || p.Devices()[0] != d {
		t.Errorf("pool: len %d, device 0 %p, want %p", len(p.Devices()), p.Devices()[0], d)
	}
	p.Close()
	p.Close()
	if d.Err() != nil {
		t.Errorf("closing a NewPool pool closed its device: %v", d.Err())
	}
	if _, err := vmem.NewSlice[int](p, 1); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("NewSlice on a closed pool: %v", err)
	}
}

func TestPoolOpenAll(t *testing.T) {
	p, err := vmem.OpenAll(vmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Devices()) < 1 {
		t.Fatalf("%d devices", len(p.Devices()))
	}
	in := []vmem.Info{p.Devices()[0].Info()}
	if in[0].Backend == vmem.BackendHost && in[0].Fallback == "" && os.Getenv("VMEM_BACKEND") != "host" {
		t.Errorf("host fallback without a reason: %+v", in[0])
	}
	for i, d := range p.Devices() {
		t.Logf("device %d: %s", i, d.Info())
	}
	if err := p.Close(); err != nil {
		t.Error(err)
	}
	if err := p.Devices()[0].Err(); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("OpenAll pool's Close left device 0 open: %v", err)
	}

	if !slices.Contains(vmemtest.Backends(), vmem.BackendVulkan) {
		return
	}
	p, err = vmem.OpenAll(vmem.Options{Backend: vmem.BackendVulkan, ChunkSize: 4 << 20})
	if err != nil {
		if vmemtest.RequireVulkan() {
			t.Fatal(err)
		}
		t.Skipf("no Vulkan device: %v", err)
	}
	defer p.Close()
	for i := range len(p.Devices()) {
		if in := p.Devices()[i].Info(); in.Backend != vmem.BackendVulkan {
			t.Errorf("device %d: backend %v", i, in.Backend)
		}
	}
	if _, err := vmem.OpenAll(vmem.Options{Backend: vmem.BackendVulkan, Device: "no such device"}); !errors.Is(err, vmem.ErrNoDevice) {
		t.Errorf("OpenAll of a missing device: %v, want ErrNoDevice", err)
	}
}

func TestPoolStats(t *testing.T) {
	p := openPool(t, poolKind{"host3", vmem.BackendHost, 3})
	var blks []block.Block
	for i := range len(p.Devices()) {
		for range i + 1 {
			b, err := kdev(p.Devices()[i]).Alloc(block.Mapped, 4096, 0)
			if err != nil {
				t.Fatal(err)
			}
			blks = append(blks, b)
		}
	}
	for i := range len(p.Devices()) {
		if s := p.Devices()[i].Info().Tiers[vmem.Mapped]; s.Blocks != i+1 || s.InUse != uint64(4096*(i+1)) {
			t.Errorf("device %d: %+v", i, s)
		}
	}
	if tot := vmem.PoolStats(p, vmem.Mapped); tot.Blocks != 6 || tot.InUse != 6*4096 {
		t.Errorf("total %+v", tot)
	}
	for i := range len(p.Devices()) {
		if in := p.Devices()[i].Info(); in.Tiers[vmem.Mapped].Blocks != i+1 {
			t.Errorf("Info of device %d: %+v", i, in.Tiers[vmem.Mapped])
		}
	}
	k := 0
	for i := range len(p.Devices()) {
		for range i + 1 {
			kdev(p.Devices()[i]).Free(blks[k])
			k++
		}
	}
}

func TestParsePlacement(t *testing.T) {
	for s, want := range map[string]vmem.Placement{"stripe": vmem.Stripe, "fill-first": vmem.FillFirst, "FillFirst": vmem.FillFirst} {
		if got, err := vmem.ParsePlacement(s); err != nil || got != want {
			t.Errorf("ParsePlacement(%q) = %v, %v", s, got, err)
		}
		if got, _ := vmem.ParsePlacement(string(want)); got != want {
			t.Errorf("%v does not round-trip", want)
		}
	}
	if _, err := vmem.ParsePlacement("round-robin"); err == nil {
		t.Error("ParsePlacement accepted round-robin")
	}
}

// prec is an element that is not a whole number of words, so that records
// are re-spaced on Vulkan (layout.Record) and bulk copies take the packed
// paths.
type prec struct {
	A, B uint64
	C    uint32
}

func precOf(x uint64) prec { return prec{A: x, B: x * 7, C: uint32(x)} }

func poolSteps(b vmem.Backend) int {
	n := 400
	if testing.Short() {
		n = 150
	}
	if b == vmem.BackendVulkan {
		n /= 2
	}
	if buildconst.Race {
		n /= 3
	}
	return n
}

func TestPoolSliceModel(t *testing.T) {
	eachPool(t, func(t *testing.T, p *vmem.Pool) {
		b := p.Devices()[0].Info().Backend
		t.Run("uint32/stripe8", func(t *testing.T) {
			poolSliceDiff(t, p, func(x uint64) uint32 { return uint32(x) }, poolSteps(b), vmem.WithStripe(8), vmemtest.WithSegmentBytes(1024))
		})
		t.Run("prec/stripe5", func(t *testing.T) {
			// 5 rounds up to 8; segments of a few records cover their
			// boundaries.
			poolSliceDiff(t, p, precOf, poolSteps(b), vmem.WithStripe(5), vmemtest.WithSegmentBytes(512))
		})
		t.Run("uint64/default", func(t *testing.T) {
			poolSliceDiff(t, p, func(x uint64) uint64 { return x * 0x9e3779b97f4a7c15 }, poolSteps(b)/2)
		})
	})
}

// TestPoolSliceAll ranges over PoolSlices whose stripes and parts end
// inside and at the edges of All's runs, in full and with early breaks.
func TestPoolSliceAll(t *testing.T) {
	eachPool(t, func(t *testing.T, p *vmem.Pool) {
		for _, n := range []int{1, 15, 16, 17, 1000, 300_001} {
			s, err := vmem.NewSlice[uint64](p, n, vmem.WithStripe(16), vmemtest.WithSegmentBytes(4096))
			if err != nil {
				t.Fatal(err)
			}
			model := make([]uint64, n)
			for i := range model {
				model[i] = uint64(i)*3 + 1
			}
			if err := s.CopyFrom(model, 0); err != nil {
				t.Fatal(err)
			}
			poolCheckAll(t, s, model)
			s.Close()
		}
	})
}

// poolCheckAll checks s.All against model: every element with its index,
// and breaks at the first element, inside and at the end.
func poolCheckAll(t *testing.T, s *vmem.Slice[uint64], model []uint64) {
	t.Helper()
	n := 0
	for i, v := range s.All() {
		if i != n || v != model[i] {
			t.Fatalf("All: element %d = (%d, %d), want (%d, %d)", n, i, v, n, model[n])
		}
		n++
	}
	if err := s.Err(); err != nil || n != len(model) {
		t.Fatalf("All gave %d elements of %d (%v)", n, len(model), err)
	}
	for _, stop := range []int{0, len(model) / 2, len(model) - 1} {
		n = 0
		for i := range s.All() {
			if i != n {
				t.Fatalf("All: index %d at %d", i, n)
			}
			if n == stop {
				break
			}
			n++
		}
		if n != stop {
			t.Fatalf("All stopped at %d, want %d", n, stop)
		}
	}
}

// TestPoolSliceSpread checks where elements go: stripes in turn, or the
// first device first.
func TestPoolSliceSpread(t *testing.T) {
	p := openPool(t, poolKind{"host3", vmem.BackendHost, 3})
	s, err := vmem.NewSlice[uint32](p, 100, vmem.WithStripe(16))
	if err != nil {
		t.Fatal(err)
	}
	// 100 = 6 stripes of 16 (two per device) + 4: device 0 gets them.
	if got := vmem.DeviceLens(s); !slices.Equal(got, []int{36, 32, 32}) {
		t.Errorf("Stripe DeviceLens %v, want [36 32 32]", got)
	}
	s.Close()
	f, err := vmem.NewSlice[uint32](p, 100, vmem.WithPlacement(vmem.FillFirst))
	if err != nil {
		t.Fatal(err)
	}
	if got := vmem.DeviceLens(f); !slices.Equal(got, []int{100, 0, 0}) || vmem.PlacementOf(f) != vmem.FillFirst {
		t.Errorf("FillFirst DeviceLens %v, want [100 0 0]", got)
	}
	f.Close()
}

// TestPoolSliceSpill fills a FillFirst PoolSlice whose first devices have
// small limits: the elements must spill to the next device, in order, and
// an allocation that fits nowhere fails and changes nothing.
func TestPoolSliceSpill(t *testing.T) {
	for _, k := range poolKinds() {
		t.Run(k.name, func(t *testing.T) {
			small := vmem.Options{ChunkSize: 64 << 10}
			small.Limits[vmem.Mapped] = 256 << 10
			small.Limits[vmem.Private] = 256 << 10
			last := vmem.Options{ChunkSize: 64 << 10}
			last.Limits[vmem.Mapped] = 4 << 20
			last.Limits[vmem.Private] = 4 << 20
			opts := []vmem.Options{small, last}
			if k.n == 3 {
				opts = []vmem.Options{small, small, last}
			}
			p := openPool(t, k, opts...)
			s, err := vmem.NewSlice[uint64](p, 0, vmem.WithPlacement(vmem.FillFirst), vmemtest.WithSegmentBytes(32<<10))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var model []uint64
			for len(model) < 200_000 {
				vs := make([]uint64, 10_000)
				for i := range vs {
					vs[i] = uint64(len(model)+i) * 3
				}
				if err := s.Append(vs...); err != nil {
					t.Fatal(err)
				}
				model = append(model, vs...)
			}
			ls := vmem.DeviceLens(s)
			t.Logf("DeviceLens %v", ls)
			for d := range ls {
				if ls[d] == 0 {
					t.Errorf("device %d holds nothing: %v", d, ls)
				}
			}
			if ls[0]*8 > 2*(256<<10) {
				t.Errorf("device 0 holds %d elements, over its limits", ls[0])
			}
			poolCheckAll(t, s, model)
			got := make([]uint64, len(model))
			if err := s.CopyTo(got, 0); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, model) {
				t.Fatal("contents differ after spilling")
			}
			// Now more than the last device has room for.
			before := slices.Clone(vmem.DeviceLens(s))
			if err := s.Append(make([]uint64, 1<<20)...); !errors.Is(err, vmem.ErrOutOfMemory) {
				t.Fatalf("Append past the pool's room: %v, want ErrOutOfMemory", err)
			}
			if !slices.Equal(vmem.DeviceLens(s), before) || s.Len() != len(model) {
				t.Fatalf("failed Append changed the lengths: %v, was %v", vmem.DeviceLens(s), before)
			}
			for i := 0; i < len(model); i += 997 {
				if got := s.Get(i); got != model[i] {
					t.Fatalf("Get(%d) = %d after the failed Append, want %d", i, got, model[i])
				}
			}
			if err := s.Append(1, 2, 3); err != nil {
				t.Fatalf("Append after the failure: %v", err)
			}
		})
	}
}

// TestPoolSliceFaults arms faults on one device: out of memory there
// fails the operation and leaves the PoolSlice as it was; device loss
// surfaces, and the other devices' elements stay readable.
func TestPoolSliceFaults(t *testing.T) {
	for _, k := range poolKinds() {
		t.Run(k.name, func(t *testing.T) {
			// On Vulkan a Slice whose mapped allocation fails retries in
			// the private tier; a tiny private limit makes the injected
			// failure final.
			var o vmem.Options
			o.Limits[vmem.Private] = 64
			p := openPool(t, k, o)
			s, err := vmem.NewSlice[uint64](p, 0, vmem.WithStripe(64), vmemtest.WithSegmentBytes(4096))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			model := make([]uint64, 5000)
			for i := range model {
				model[i] = uint64(i)*11 + 1
			}
			if err := s.Append(model...); err != nil {
				t.Fatal(err)
			}
			last := p.Devices()[len(p.Devices())-1]
			kdev(last).InjectFaults(kern.Faults{FailAlloc: 1})
			before := vmem.DeviceLens(s)
			if err := s.Append(make([]uint64, 20000)...); !errors.Is(err, vmem.ErrOutOfMemory) {
				t.Fatalf("Append with a failing allocation: %v, want ErrOutOfMemory", err)
			}
			if s.Len() != len(model) || !slices.Equal(vmem.DeviceLens(s), before) {
				t.Fatalf("failed Append changed the lengths: %d %v", s.Len(), vmem.DeviceLens(s))
			}
			got := make([]uint64, len(model))
			if err := s.CopyTo(got, 0); err != nil || !slices.Equal(got, model) {
				t.Fatalf("contents after the failed Append: %v", err)
			}
			if err := s.Append(7); err != nil {
				t.Fatalf("Append after the fault: %v", err)
			}
			model = append(model, 7)

			// Lose device 1 during a bulk write.
			kdev(p.Devices()[1]).InjectFaults(kern.Faults{FailSubmit: 1})
			src := make([]uint64, len(model))
			err = s.CopyFrom(src, 0)
			if !errors.Is(err, vmem.ErrDeviceLost) {
				t.Fatalf("CopyFrom on a lost device: %v, want ErrDeviceLost", err)
			}
			if err := s.Append(1); !errors.Is(err, vmem.ErrDeviceLost) {
				t.Fatalf("Append after device loss: %v, want ErrDeviceLost", err)
			}
		})
	}
}

func TestPoolSliceClose(t *testing.T) {
	p := openPool(t, poolKind{"host3", vmem.BackendHost, 3})
	s, err := vmem.NewSlice[uint64](p, 10, vmem.WithStripe(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, panicked := vmemtest.Panics(func() { s.Get(0) }); !panicked {
		t.Error("Get after Close did not panic")
	}
	if err := s.Append(1); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if err := s.CopyTo(nil, 0); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("CopyTo after Close: %v", err)
	}
	if _, err := vmem.NewSlice[*int](p, 1); !errors.Is(err, vmem.ErrPointerType) {
		t.Errorf("NewSlice[*int] on a pool: %v", err)
	}
	if _, err := vmem.NewSlice[int](p, -1); !errors.Is(err, vmem.ErrRange) {
		t.Errorf("NewSlice(-1) on a pool: %v", err)
	}
	// Closing one device closes its part: the Slice then reports it.
	devs := []*vmem.Device{vmemtest.Open(t, vmem.BackendHost, vmem.Options{})}
	d1, _ := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	devs = append(devs, d1)
	q, _ := vmemtest.NewPool(devs...)
	s2, err := vmem.NewSlice[uint64](q, 100, vmem.WithStripe(4))
	if err != nil {
		t.Fatal(err)
	}
	d1.Close()
	if err := s2.Fill(1); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("Fill with a closed device: %v, want ErrClosed", err)
	}
	s2.Close()
}

// TestSliceMemory checks NewSlice's and LoadSlice's Memory: a nil one,
// typed or not, is an error rather than a panic, and WithPlacement on one
// device is ignored.
func TestSliceMemory(t *testing.T) {
	for name, mem := range map[string]vmem.Memory{"nil": nil, "nil Device": (*vmem.Device)(nil), "nil Pool": (*vmem.Pool)(nil)} {
		if _, err := vmem.NewSlice[int](mem, 1); !errors.Is(err, vmem.ErrNoDevice) {
			t.Errorf("NewSlice on a %s: %v, want ErrNoDevice", name, err)
		}
		if _, err := vmem.LoadSlice[int](mem, bytes.NewReader(nil)); !errors.Is(err, vmem.ErrNoDevice) {
			t.Errorf("LoadSlice on a %s: %v, want ErrNoDevice", name, err)
		}
	}
	d := vmemtest.Open(t, vmem.BackendHost, vmem.Options{})
	s, err := vmem.NewSlice[int](d, 3, vmem.WithPlacement(vmem.FillFirst), vmem.WithStripe(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Len() != 3 || vmem.DeviceLens(s) != nil {
		t.Errorf("Slice on a device with pool options: len %d, device lens %v", s.Len(), vmem.DeviceLens(s))
	}
}

// TestPoolSliceConcurrentReads runs readers side by side (for -race).
func TestPoolSliceConcurrentReads(t *testing.T) {
	for _, k := range poolKinds() {
		t.Run(k.name, func(t *testing.T) {
			p := openPool(t, k)
			const n = 20000
			s, err := vmem.NewSlice[uint64](p, n, vmem.WithStripe(128))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			src := make([]uint64, n)
			for i := range src {
				src[i] = uint64(i) ^ 0x5555
			}
			if err := s.CopyFrom(src, 0); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(g), 3))
					idx := make([]int, 2000)
					dst := make([]uint64, len(idx))
					for range 3 {
						for i := range idx {
							idx[i] = r.IntN(n)
						}
						if g%2 == 0 {
							s.GetManyCPU(idx, dst)
						} else if err := s.GetBatch(idx, dst); err != nil {
							errs <- err
							return
						}
						for k, i := range idx {
							if dst[k] != src[i] {
								errs <- fmt.Errorf("reader %d: element %d = %d, want %d", g, i, dst[k], src[i])
								return
							}
						}
						buf := make([]uint64, 3000)
						at := r.IntN(n - len(buf))
						if err := s.CopyTo(buf, at); err != nil {
							errs <- err
							return
						}
						if !slices.Equal(buf, src[at:at+len(buf)]) {
							errs <- fmt.Errorf("reader %d: CopyTo at %d differs", g, at)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestPoolSliceFillToCap asks for more than the pool holds: the Resize fails
// at once and changes nothing (no partial growth is kept), and a Resize to
// most of what the devices hold then succeeds.
func TestPoolSliceFillToCap(t *testing.T) {
	for _, pl := range []vmem.Placement{vmem.Stripe, vmem.FillFirst} {
		t.Run(string(pl), func(t *testing.T) {
			o := vmem.Options{ChunkSize: 64 << 10}
			o.Limits[vmem.Mapped] = 1 << 20
			p := openPool(t, poolKind{"host3", vmem.BackendHost, 3}, o)
			s, err := vmem.NewSlice[uint64](p, 10, vmem.WithPlacement(pl), vmem.WithStripe(256), vmemtest.WithSegmentBytes(64<<10))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Set(3, 42)
			if err := s.Resize(1 << 30); !errors.Is(err, vmem.ErrOutOfMemory) {
				t.Fatalf("Resize past the pool: %v, want ErrOutOfMemory", err)
			}
			if s.Len() != 10 || s.Get(3) != 42 {
				t.Fatalf("failed Resize changed the PoolSlice: len %d", s.Len())
			}
			if c := s.Cap(); c >= 1<<20/8 {
				t.Fatalf("Cap %d after the failed Resize: it grew", c)
			}
			c := (1 << 20) / 8 / 2
			if err := s.Resize(c); err != nil {
				t.Fatalf("Resize(%d): %v", c, err)
			}
			if s.Get(3) != 42 || s.Get(c-1) != 0 {
				t.Fatal("contents after Resize(Cap())")
			}
			t.Logf("Cap %d elements, DeviceLens %v", c, vmem.DeviceLens(s))
		})
	}
}
