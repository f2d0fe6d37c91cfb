package vmem_test

// Requests no device can satisfy, stale block handles, waits that time out
// and bad arguments (docs/reliability.md, "Impossible requests"): each is
// refused at once with an error, nothing is held, and the device and its
// containers keep working.

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// heldBlocks is every tier's live block count.
func heldBlocks(d *vmem.Device) int {
	n := 0
	for t := range vmem.Tier(3) {
		n += d.Info().Tiers[t].Blocks
	}
	return n
}

func TestImpossibleSliceSizes(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		check := func(name string, err error, want ...error) {
			t.Helper()
			ok := false
			for _, w := range want {
				ok = ok || errors.Is(err, w)
			}
			if !ok {
				t.Errorf("%s: %v, want one of %v", name, err, want)
			}
			if n := heldBlocks(d); n != 0 {
				t.Errorf("%s: %d blocks held after the refusal", name, n)
			}
		}
		_, err := vmem.NewSlice[uint64](d, math.MaxInt)
		check("NewSlice[uint64](MaxInt)", err, vmem.ErrOutOfMemory)
		_, err = vmem.NewSlice[struct{}](d, 1<<62)
		check("NewSlice[struct{}](1<<62)", err, vmem.ErrOutOfMemory)
		_, err = vmem.NewSlice[uint64](d, 1<<40) // 8 TiB
		check("NewSlice[uint64](1<<40)", err, vmem.ErrOutOfMemory)
		_, err = vmem.NewSlice[uint64](d, 0, vmem.WithCapacity(1<<40))
		check("WithCapacity(1<<40)", err, vmem.ErrOutOfMemory)

		s, err := vmem.NewSlice[uint64](d, 10)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.Set(3, 33)
		c := s.Cap()
		for _, g := range []int{math.MaxInt, math.MaxInt - 5, math.MaxInt - 9, 1 << 40} {
			if err := s.Grow(g); !errors.Is(err, vmem.ErrTooLarge) && !errors.Is(err, vmem.ErrOutOfMemory) {
				t.Errorf("Grow(%d): %v, want ErrTooLarge or ErrOutOfMemory", g, err)
			}
			if s.Cap() != c || s.Len() != 10 || s.Get(3) != 33 {
				t.Errorf("Grow(%d) failed but changed the Slice: Cap %d (was %d), Len %d", g, s.Cap(), c, s.Len())
			}
		}
		if err := s.Resize(1 << 40); !errors.Is(err, vmem.ErrOutOfMemory) {
			t.Errorf("Resize(1<<40): %v", err)
		}
		if err := s.Append(1, 2, 3); err != nil || s.Len() != 13 || s.Get(12) != 3 {
			t.Errorf("Append after the refusals: %v, Len %d", err, s.Len())
		}
	})
}

// TestAllocWithinHeap: a block the heap (or the machine) cannot back is
// refused, though the driver or mmap would hand it out, and the refusal
// takes nothing.
func TestAllocWithinHeap(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		ti := d.Info().Tiers[vmem.Mapped]
		if ti.Capacity == 0 {
			t.Fatal("no capacity for the mapped tier")
		}
		small, err := kdev(d).Alloc(block.Mapped, 4096, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer kdev(d).Free(small)
		held := d.Info().Tiers[vmem.Mapped]
		// Just more than the heap has left beside the chunk already held.
		over := ti.Capacity - held.Reserved + 64<<10
		if over > ti.MaxBlock {
			// A GPU whose blocks are smaller than its heap: the Slice,
			// which spans blocks, is refused at once instead.
			_, err := vmem.NewSlice[byte](d, int(min(2*ti.Capacity, math.MaxInt/2)))
			if !errors.Is(err, vmem.ErrOutOfMemory) {
				t.Fatalf("NewSlice of twice the heap: %v", err)
			}
			return
		}
		b, err := kdev(d).Alloc(block.Mapped, over, 0)
		if !errors.Is(err, vmem.ErrOutOfMemory) {
			if err == nil {
				kdev(d).Free(b)
			}
			t.Fatalf("Alloc of %d bytes with %d of a %d-byte heap taken: %v, want ErrOutOfMemory",
				over, held.Reserved, ti.Capacity, err)
		}
		if st := d.Info().Tiers[vmem.Mapped]; st.Blocks != held.Blocks || st.Reserved != held.Reserved {
			t.Errorf("the refused Alloc changed the tier: %+v, was %+v", st, held)
		}
	})
}

func TestStaleBlockRejected(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, tier := range []vmem.Tier{vmem.Mapped, vmem.Private} {
			b, err := kdev(d).Alloc(block.Tier(tier), 4096, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := kdev(d).Free(b); err != nil {
				t.Fatal(err)
			}
			// The memory goes to a new owner.
			s, err := vmem.NewSlice[uint64](d, 512, vmem.InTier(tier))
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 4096)
			for i := range buf {
				buf[i] = 0xAB
			}
			if err := kdev(d).Write(b, 0, buf); !errors.Is(err, block.ErrInvalid) {
				t.Errorf("%s: Write through a freed block: %v", tier, err)
			}
			if err := kdev(d).Fill(b, 0, 4096, 0xCD); !errors.Is(err, block.ErrInvalid) {
				t.Errorf("%s: Fill through a freed block: %v", tier, err)
			}
			if err := kdev(d).Read(buf, b, 0); !errors.Is(err, block.ErrInvalid) {
				t.Errorf("%s: Read through a freed block: %v", tier, err)
			}
			tmp, err := kdev(d).Alloc(block.Tier(tier), 4096, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := kdev(d).Copy(b, 0, tmp, 0, 4096); !errors.Is(err, block.ErrInvalid) {
				t.Errorf("%s: Copy into a freed block: %v", tier, err)
			}
			if err := kdev(d).Copy(tmp, 0, b, 0, 4096); !errors.Is(err, block.ErrInvalid) {
				t.Errorf("%s: Copy from a freed block: %v", tier, err)
			}
			kdev(d).Free(tmp)
			got := make([]uint64, 512)
			if err := s.CopyTo(got, 0); err != nil {
				t.Fatal(err)
			}
			for i, v := range got {
				if v != 0 {
					t.Fatalf("%s: element %d of the new owner is %#x: written through the stale handle", tier, i, v)
				}
			}
			s.Close()
		}
	})
}

func TestBadArguments(t *testing.T) {
	if _, err := vmem.NewSlice[uint64](nil, 4); !errors.Is(err, vmem.ErrNoDevice) {
		t.Errorf("NewSlice(nil): %v", err)
	}
	if _, err := vmem.LoadSlice[uint64](nil, nil); !errors.Is(err, vmem.ErrNoDevice) {
		t.Errorf("LoadSlice(nil, nil): %v", err)
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, opt := range []struct {
			name string
			o    vmem.SliceOption
		}{
			{"InTier(9)", vmem.InTier(9)},
			{"InTier(-1)", vmem.InTier(-1)},
			{"WithCapacity(-5)", vmem.WithCapacity(-5)},
		} {
			if s, err := vmem.NewSlice[uint64](d, 4, opt.o); !errors.Is(err, vmem.ErrRange) {
				t.Errorf("NewSlice with %s: %v", opt.name, err)
				if s != nil {
					s.Close()
				}
			}
		}
		if _, err := vmem.LoadSlice[uint64](d, nil); err == nil {
			t.Error("LoadSlice with a nil reader: no error")
		}
		for _, align := range []uint64{3, 96, 1 << 40} {
			if b, err := kdev(d).Alloc(block.Mapped, 128, align); !errors.Is(err, vmem.ErrRange) {
				t.Errorf("Alloc with alignment %d: %v", align, err)
				if err == nil {
					kdev(d).Free(b)
				}
			}
		}
		for _, align := range []uint64{0, 1, 64, 4096} {
			b, err := kdev(d).Alloc(block.Mapped, 128, align)
			if err != nil {
				t.Errorf("Alloc with alignment %d: %v", align, err)
				continue
			}
			if align > 0 && kdev(d).BlockOffset(b)%align != 0 {
				t.Errorf("alignment %d: offset %d", align, kdev(d).BlockOffset(b))
			}
			kdev(d).Free(b)
		}
	})
}

// TestWaitTimeoutIsNotDeviceLoss: a sort whose wait runs out of time
// returns ErrTimeout, the device is not lost, and once the GPU is done the
// device works again (the same sort then succeeds).
func TestWaitTimeoutIsNotDeviceLoss(t *testing.T) {
	for _, be := range vmemtest.Backends() {
		t.Run(string(be), func(t *testing.T) {
			d := vmemtest.Open(t, be, vmem.Options{Timeout: time.Microsecond})
			n := 1 << 20
			// Making and filling the Slice wait for the GPU too, within the
			// bound's allowance for their size; only the Sort is given none.
			s, err := vmem.NewSlice[float32](d, n)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r := rand.New(rand.NewPCG(1, 2))
			want := make([]float32, n)
			for i := range want {
				want[i] = r.Float32()
			}
			if err := s.CopyFrom(want, 0); err != nil {
				t.Fatal(err)
			}
			restore := vmem.SetGPUFloorRate(math.MaxUint64)
			err = vmem.Sort(s)
			restore()
			if !vmem.KernelsAvailable(d) {
				// The host backend sorts on the CPU: no wait to time out.
				if err != nil {
					t.Fatalf("Sort on %s: %v", be, err)
				}
			} else {
				if !errors.Is(err, vmem.ErrTimeout) || errors.Is(err, vmem.ErrDeviceLost) {
					t.Fatalf("Sort with a 1 µs wait bound: %v, want ErrTimeout (not ErrDeviceLost)", err)
				}
				if e := d.Err(); e != nil {
					t.Fatalf("the device is marked %v after a timeout", e)
				}
				// Calls report ErrTimeout until the work ends, then work.
				for {
					b, err := kdev(d).Alloc(block.Host, 64, 0)
					if err == nil {
						kdev(d).Free(b)
						break
					}
					if !errors.Is(err, vmem.ErrTimeout) {
						t.Fatalf("Alloc after the timeout: %v", err)
					}
					time.Sleep(time.Millisecond)
				}
				// The wait bound still has its allowance for the work's size.
				if err := vmem.Sort(s); err != nil {
					t.Fatalf("Sort once the device is free again: %v", err)
				}
			}
			slices.Sort(want)
			got := make([]float32, n)
			if err := s.CopyTo(got, 0); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatal("the Slice is not sorted")
			}
		})
	}
}
