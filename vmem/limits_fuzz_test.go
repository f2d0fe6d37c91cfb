package vmem_test

import (
	"errors"
	"testing"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/vmem"
)

// FuzzSizes feeds constructors, Grow, Resize and Alloc arbitrary sizes,
// tiers, capacities and alignments on a host device whose tiers are capped
// (so no input can take more than the caps): every call returns a value or
// an error, never panics, holds no more than the caps, and leaves what it
// was called on as it was when it fails.
func FuzzSizes(f *testing.F) {
	f.Add(int64(10), int64(0), int8(0), int64(5), uint64(100), uint64(0))
	f.Add(int64(1)<<62, int64(-5), int8(9), int64(-1), uint64(1)<<63, uint64(3))
	f.Add(int64(-1), int64(1)<<40, int8(-1), int64(1)<<62, uint64(0), uint64(1)<<40)
	f.Add(int64(1000), int64(2000), int8(1), int64(9223372036854775807), uint64(64<<20), uint64(4096))
	const limit = 16 << 20
	f.Fuzz(func(t *testing.T, n, capacity int64, tier int8, grow int64, size, align uint64) {
		d, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost, Limits: [3]uint64{limit, limit, limit}})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		within := func(what string) {
			for tr := range vmem.Tier(3) {
				if st := d.Info().Tiers[tr]; st.Reserved > limit {
					t.Fatalf("%s: %s tier reserved %d bytes, over its limit %d", what, tr, st.Reserved, limit)
				}
			}
		}
		s, err := vmem.NewSlice[uint32](d, int(n), vmem.WithCapacity(int(capacity)), vmem.InTier(vmem.Tier(tier)))
		within("NewSlice")
		if err == nil {
			defer s.Close()
			if s.Len() != int(n) || s.Cap() < s.Len() {
				t.Fatalf("NewSlice(%d): Len %d, Cap %d", n, s.Len(), s.Cap())
			}
			l, c := s.Len(), s.Cap()
			if err := s.Grow(int(grow)); err != nil {
				if s.Len() != l {
					t.Fatalf("failed Grow(%d) changed Len %d -> %d", grow, l, s.Len())
				}
			} else if s.Cap()-s.Len() < int(grow) {
				t.Fatalf("Grow(%d) succeeded with Cap %d, Len %d", grow, s.Cap(), s.Len())
			}
			within("Grow")
			_ = c
			if err := s.Resize(int(grow)); err != nil && s.Len() != l {
				t.Fatalf("failed Resize(%d) changed Len %d -> %d", grow, l, s.Len())
			}
			within("Resize")
		} else if n >= 0 && capacity >= 0 && tier >= 0 && tier <= int8(vmem.Host) &&
			!errors.Is(err, vmem.ErrOutOfMemory) && !errors.Is(err, vmem.ErrTooLarge) {
			t.Fatalf("NewSlice(%d, cap %d, tier %d): %v", n, capacity, tier, err)
		}
		b, err := kdev(d).Alloc(block.Tier(vmem.Tier(tier)), size, align)
		within("Alloc")
		if err == nil {
			if b.Size() != size || (align > 0 && kdev(d).BlockOffset(b)%align != 0) {
				t.Fatalf("Alloc(%d, align %d): size %d offset %d", size, align, b.Size(), kdev(d).BlockOffset(b))
			}
			if err := kdev(d).Free(b); err != nil {
				t.Fatal(err)
			}
		}
		for tr := range vmem.Tier(3) {
			if st := d.Info().Tiers[tr]; st.Blocks > 0 && s == nil {
				t.Fatalf("%s tier: %d blocks held after the calls failed", tr, st.Blocks)
			}
		}
	})
}
