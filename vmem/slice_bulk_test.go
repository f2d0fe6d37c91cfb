package vmem_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestSliceBulkReads checks the paths that read many elements at once:
// GetMany with batches large enough to be spread over goroutines, and
// Chunks/All, whose next run is read while the caller works on this one
// (runs of 16 MiB: the Slice spans several), with an early stop.
func TestSliceBulkReads(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		n := 600_000 // 4.8 MB of e8: several DMA runs of e64 below
		if testing.Short() {
			n = 200_000
		}
		s, err := vmem.NewSlice[e8](d, n)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		src := make([]e8, n)
		for i := range src {
			src[i] = e8(uint64(i)*0x9e3779b97f4a7c15 + 1)
		}
		if err := s.CopyFrom(src, 0); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 3))
		idx := make([]int, 20_000)
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		got := make([]e8, len(idx))
		s.GetManyCPU(idx, got)
		for k, i := range idx {
			if got[k] != src[i] {
				t.Fatalf("GetMany[%d] (index %d) = %x, want %x", k, i, got[k], src[i])
			}
		}

		big, err := vmem.NewSlice[e64](d, 3*(16<<20)/64+777)
		if err != nil {
			t.Fatal(err)
		}
		defer big.Close()
		model := make([]e64, big.Len())
		for i := range model {
			model[i] = mk[e64](uint64(i))
		}
		if err := big.CopyFrom(model, 0); err != nil {
			t.Fatal(err)
		}
		next := 0
		for at, run := range big.Chunks() {
			if at != next {
				t.Fatalf("run at %d, want %d", at, next)
			}
			for k := range run {
				if run[k] != model[at+k] {
					t.Fatalf("Chunks: element %d differs", at+k)
				}
			}
			next = at + len(run)
		}
		if next != big.Len() || big.Err() != nil {
			t.Fatalf("Chunks covered %d of %d elements (err %v)", next, big.Len(), big.Err())
		}
		seen := 0
		for i, v := range big.All() {
			if v != model[i] {
				t.Fatalf("All: element %d differs", i)
			}
			if seen++; seen == 300_000 {
				break // an early stop must leave no read in flight
			}
		}
		if seen != 300_000 {
			t.Fatalf("All stopped after %d elements", seen)
		}
	})
}

// TestSliceGetManyPrivate checks GetMany on private VRAM, where batches
// from getManyKernelMin indices on are gathered by kernel: against the
// model for batch sizes around the threshold, with repeated indices,
// for elements that fill their lines and elements spaced in them, and
// an index out of range panics before anything is read.
func TestSliceGetManyPrivate(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		if d.Info().Backend != vmem.BackendVulkan {
			t.Skip("no private VRAM on the host backend")
		}
		getManyPrivate[e8](t, d)
		getManyPrivate[e24](t, d)
	})
}

func getManyPrivate[T comparable](t *testing.T, d *vmem.Device) {
	const n = 50_000
	s, err := vmem.NewSlice[T](d, n, vmem.InTier(vmem.Private))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	model := make([]T, n)
	for i := range model {
		model[i] = mk[T](uint64(i))
	}
	if err := s.CopyFrom(model, 0); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	before := kdev(d).KernelDispatches()
	for _, m := range []int{0, 1, 15, 16, 17, 5000} {
		idx := make([]int, m)
		for i := range idx {
			idx[i] = rng.IntN(n)
			if i%7 == 3 {
				idx[i] = idx[i-1] // a repeat
			}
		}
		got := make([]T, m+3) // dst may be longer than idx
		s.GetManyCPU(idx, got)
		for k, i := range idx {
			if got[k] != model[i] {
				t.Fatalf("%T, batch of %d: GetMany[%d] (index %d) = %v, want %v", got[k], m, k, i, got[k], model[i])
			}
		}
		for k := m; k < len(got); k++ {
			var zero T
			if got[k] != zero {
				t.Fatalf("%T, batch of %d: dst[%d] beyond the batch was written", got[k], m, k)
			}
		}
	}
	if kdev(d).KernelsAvailable() && kdev(d).KernelDispatches() == before {
		t.Errorf("%T: no kernel ran for batches of 16 and more", model[0])
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	got := make([]T, 100)
	idx := make([]int, 100)
	idx[50] = n
	if msg, ok := vmemtest.Panics(func() { s.GetManyCPU(idx, got) }); !ok {
		t.Errorf("GetMany with index %d of %d: no panic", n, n)
	} else {
		t.Logf("panic: %s", msg)
	}
}

// TestSliceErrConcurrentReaders has several goroutines read a private
// Slice while the device is lost under them: each Get that fails keeps
// its error for Err, at once with the others (run with -race), panics with
// the loss, and Err reports it.
func TestSliceErrConcurrentReaders(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		if d.Info().Backend != vmem.BackendVulkan {
			t.Skip("no private VRAM on the host backend")
		}
		s, err := vmem.NewSlice[uint64](d, 4096, vmem.InTier(vmem.Private))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		kdev(d).InjectFaults(kern.Faults{FailSubmit: 20})
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 50 {
					func() {
						defer func() {
							if r := recover(); r != nil {
								if err, ok := r.(error); !ok || !errors.Is(err, vmem.ErrDeviceLost) {
									t.Errorf("Get panicked with %v, want an error matching ErrDeviceLost", r)
								}
							}
						}()
						s.Get(g*50 + i)
					}()
				}
			})
		}
		wg.Wait()
		if err := s.Err(); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("Err() = %v, want ErrDeviceLost", err)
		}
	})
}

// TestSliceAllDeviceLost loses the device while All reads a Slice in
// several runs: the iteration ends early, every element it gave is right,
// and Err reports the loss. An early break leaves no read in flight.
func TestSliceAllDeviceLost(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		const n = 3 << 20 // 24 MiB: several of All's runs
		s, err := vmem.NewSlice[uint64](d, n)
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
		seen := 0
		for i, v := range s.All() {
			if i != seen || v != src[i] {
				t.Fatalf("element %d: index %d, value %#x", seen, i, v)
			}
			if seen++; seen == n/2 {
				break
			}
		}
		if s.Err() != nil {
			t.Fatal(s.Err())
		}
		if d.Info().Backend != vmem.BackendVulkan {
			return // host runs are read in place, with no transfer to fail
		}
		kdev(d).InjectFaults(kern.Faults{FailSubmit: 2})
		seen = 0
		var perr error
		func() {
			// The run that meets the loss ends the iteration by a panic.
			defer func() { perr, _ = recover().(error) }()
			for i, v := range s.All() {
				if i != seen || v != src[i] {
					t.Fatalf("after the loss: element %d: index %d, value %#x", seen, i, v)
				}
				seen++
			}
		}()
		if !errors.Is(perr, vmem.ErrDeviceLost) {
			t.Fatalf("All met the loss with panic %v, want ErrDeviceLost", perr)
		}
		if seen == n || !errors.Is(s.Err(), vmem.ErrDeviceLost) {
			t.Fatalf("All gave %d of %d elements with the device lost, Err %v", seen, n, s.Err())
		}
	})
}
