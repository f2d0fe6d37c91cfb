package vmem_test

import (
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// sliceStatsCheck asserts what Stats must say of a live Slice of n
// float64s: the length, a capacity and segments that hold it, and memory
// at least the elements' bytes.
func sliceStatsCheck(t *testing.T, st vmem.SliceStats, n int) {
	t.Helper()
	var bytes uint64
	for _, b := range st.TierBytes {
		bytes += b
	}
	if st.Len != n || st.Cap < n || (n > 0 && st.Segments < 1) || bytes < uint64(n)*8 {
		t.Fatalf("Stats of a Slice of %d float64s: %+v", n, st)
	}
}

func TestSliceStats(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		s, err := vmem.NewSlice[float64](d, 1000)
		if err != nil {
			t.Fatal(err)
		}
		sliceStatsCheck(t, s.Stats(), 1000)
		if st := s.Stats(); st.Cap != s.Cap() || st.Shards != nil {
			t.Fatalf("Stats %+v, Cap %d", st, s.Cap())
		}
		if err := s.Append(make([]float64, 5000)...); err != nil {
			t.Fatal(err)
		}
		sliceStatsCheck(t, s.Stats(), 6000)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Len != 0 || st.Cap != 0 || st.Segments != 0 || st.TierBytes != [3]uint64{} {
			t.Fatalf("Stats after Close: %+v", st)
		}

		// In the private tier (where the device has one), the bytes are
		// counted there.
		p, err := vmem.NewSlice[float64](d, 100, vmem.InTier(vmem.Private))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		sliceStatsCheck(t, p.Stats(), 100)
		if st := p.Stats(); st.TierBytes[vmem.Private] < 800 {
			t.Fatalf("a private Slice's Stats: %+v", st)
		}
	})
}

func TestSliceStatsPool(t *testing.T) {
	eachPool(t, func(t *testing.T, p *vmem.Pool) {
		s, err := vmem.NewSlice[float64](p, 100000)
		if err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		sliceStatsCheck(t, st, 100000)
		if len(st.Shards) != len(p.Devices()) {
			t.Fatalf("%d shards in the Stats of a Slice on a pool of %d", len(st.Shards), len(p.Devices()))
		}
		sum := 0
		for _, sh := range st.Shards {
			sum += sh.Len
		}
		if sum != 100000 || st.Cap != s.Cap() {
			t.Fatalf("shards hold %d elements, Cap %d; Stats %+v", sum, s.Cap(), st)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Len != 0 || st.Shards != nil {
			t.Fatalf("Stats after Close: %+v", st)
		}
	})
}
