package vmem_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// keepNew makes a Slice of n elements i*3 in tier, in segments of a
// quarter of it, so that bulk calls cross segments.
func keepNew(t *testing.T, d *vmem.Device, tier vmem.Tier, n int) *vmem.Slice[uint64] {
	t.Helper()
	s, err := vmem.NewSlice[uint64](d, n, vmem.InTier(tier), vmemtest.WithSegmentBytes(uint64(n)*8/4))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CopyFrom(keepValues(n), 0); err != nil {
		t.Fatal(err)
	}
	return s
}

// keepValues returns the elements the KeptAlive tests store: i*3.
func keepValues(n int) []uint64 {
	src := make([]uint64, n)
	for i := range src {
		src[i] = uint64(i) * 3
	}
	return src
}

// TestSliceKeptAlive checks that every bulk call of a Slice keeps the
// Slice reachable while it waits for the GPU or its workers: otherwise a
// Slice the caller no longer references is freed by its garbage-collection
// backstop while the call still reads or writes its memory.
func TestSliceKeptAlive(t *testing.T) {
	// Large enough for the host backend's copies to run on its workers.
	const n = 2 << 20
	idx := make([]int, n)
	for i := range idx {
		idx[i] = (i * 7919) % n
	}
	ops := keepSliceOps(n, idx)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		tiers := []vmem.Tier{vmem.Mapped}
		if d.Info().Backend == vmem.BackendVulkan {
			tiers = append(tiers, vmem.Private)
		}
		total := 0
		for _, tier := range tiers {
			for _, op := range ops {
				t.Run(fmt.Sprintf("%v/%s", tier, op.name), func(t *testing.T) {
					w := vmemtest.KeptAlive(t, keepNew(t, d, tier, n), func(s *vmem.Slice[uint64]) { op.run(t, s) })
					if tier == vmem.Private && w > 64 {
						// One round trip per element was GetMany's way on
						// private VRAM before it gathered by kernel.
						t.Errorf("%d waits for one call of %d elements", w, n)
					}
					total += w
				})
			}
		}
		// On the host backend a Slice's calls copy and sort on the
		// calling goroutine, with no wait to check.
		if total == 0 && d.Info().Backend == vmem.BackendVulkan {
			t.Errorf("no call waited: the test checks nothing")
		}
	})
}

// keepSliceOp is one bulk call of TestSliceKeptAlive, with its checks.
type keepSliceOp struct {
	name string
	run  func(t *testing.T, s *vmem.Slice[uint64])
}

// keepSliceOps lists the calls TestSliceKeptAlive checks, on Slices of n
// elements i*3; idx are the indices Gather and GetMany read.
func keepSliceOps(n int, idx []int) []keepSliceOp {
	want := func(t *testing.T, got []uint64, at func(i int) int) {
		t.Helper()
		for i, v := range got {
			if v != uint64(at(i))*3 {
				t.Fatalf("element %d = %d, want %d", i, v, at(i)*3)
			}
		}
	}
	id := func(i int) int { return i }
	return []keepSliceOp{
		{"CopyTo", func(t *testing.T, s *vmem.Slice[uint64]) {
			out := make([]uint64, n)
			if err := s.CopyTo(out, 0); err != nil {
				t.Fatal(err)
			}
			want(t, out, id)
		}},
		{"CopyFrom", func(t *testing.T, s *vmem.Slice[uint64]) {
			if err := s.CopyFrom(make([]uint64, n), 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"Fill", func(t *testing.T, s *vmem.Slice[uint64]) {
			if err := s.Fill(7); err != nil {
				t.Fatal(err)
			}
		}},
		{"GetBatch", func(t *testing.T, s *vmem.Slice[uint64]) {
			out := make([]uint64, n)
			if err := s.GetBatch(idx, out); err != nil {
				t.Fatal(err)
			}
			want(t, out, func(i int) int { return idx[i] })
		}},
		{"GetMany", func(t *testing.T, s *vmem.Slice[uint64]) {
			out := make([]uint64, n)
			s.GetManyCPU(idx, out)
			want(t, out, func(i int) int { return idx[i] })
		}},
		{"Sort", func(t *testing.T, s *vmem.Slice[uint64]) {
			if err := vmem.Sort(s); err != nil {
				t.Fatal(err)
			}
		}},
		{"SortBy", func(t *testing.T, s *vmem.Slice[uint64]) {
			if err := vmem.SortBy(s, func(v *uint64) *uint64 { return v }); err != nil {
				t.Fatal(err)
			}
		}},
		{"Sum", func(t *testing.T, s *vmem.Slice[uint64]) {
			sum, err := vmem.Sum(s)
			if err != nil {
				t.Fatal(err)
			}
			if w := uint64(3 * n * (n - 1) / 2); sum != w {
				t.Fatalf("Sum = %d, want %d", sum, w)
			}
		}},
		{"Save", func(t *testing.T, s *vmem.Slice[uint64]) {
			var b bytes.Buffer
			if err := s.Save(&b); err != nil {
				t.Fatal(err)
			}
		}},
		{"Chunks", func(t *testing.T, s *vmem.Slice[uint64]) {
			got := 0
			for at, c := range s.Chunks() {
				want(t, c, func(i int) int { return at + i })
				got += len(c)
			}
			if got != n {
				t.Fatalf("Chunks gave %d elements, want %d", got, n)
			}
		}},
		{"Grow", func(t *testing.T, s *vmem.Slice[uint64]) {
			if err := s.Grow(3 * n); err != nil {
				t.Fatal(err)
			}
		}},
		// One element: on private VRAM a DMA round trip each.
		{"Get", func(t *testing.T, s *vmem.Slice[uint64]) {
			if v := s.Get(n - 5); v != uint64(n-5)*3 {
				t.Fatalf("Get = %d, want %d", v, (n-5)*3)
			}
		}},
		{"Set", func(t *testing.T, s *vmem.Slice[uint64]) {
			s.Set(n-5, 1) // s unused after: its error is not checked here
		}},
		{"Resize", func(t *testing.T, s *vmem.Slice[uint64]) {
			if err := s.Resize(2 * n); err != nil {
				t.Fatal(err)
			}
		}},
	}
}

// TestPoolSliceKeptAlive is TestSliceKeptAlive for a PoolSlice, whose
// calls run a part on each device at once.
func TestPoolSliceKeptAlive(t *testing.T) {
	const n = 1 << 20
	idx := make([]int, n)
	for i := range idx {
		idx[i] = (i * 7919) % n
	}
	type PS = *vmem.Slice[uint64]
	check := func(t *testing.T, got []uint64, at func(i int) int) {
		t.Helper()
		for i, v := range got {
			if v != uint64(at(i))*3 {
				t.Fatalf("element %d = %d, want %d", i, v, at(i)*3)
			}
		}
	}
	ops := []struct {
		name string
		run  func(t *testing.T, s PS)
	}{
		{"CopyTo", func(t *testing.T, s PS) {
			out := make([]uint64, n)
			if err := s.CopyTo(out, 0); err != nil {
				t.Fatal(err)
			}
			check(t, out, func(i int) int { return i })
		}},
		{"CopyFrom", func(t *testing.T, s PS) {
			if err := s.CopyFrom(make([]uint64, n), 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"Fill", func(t *testing.T, s PS) {
			if err := s.Fill(5); err != nil {
				t.Fatal(err)
			}
		}},
		{"GetBatch", func(t *testing.T, s PS) {
			out := make([]uint64, n)
			if err := s.GetBatch(idx, out); err != nil {
				t.Fatal(err)
			}
			check(t, out, func(i int) int { return idx[i] })
		}},
		{"GetMany", func(t *testing.T, s PS) {
			out := make([]uint64, n)
			s.GetManyCPU(idx, out)
			check(t, out, func(i int) int { return idx[i] })
		}},
		{"Chunks", func(t *testing.T, s PS) {
			got := 0
			for at, c := range s.Chunks() {
				check(t, c, func(i int) int { return at + i })
				got += len(c)
			}
			if got != n {
				t.Fatalf("Chunks gave %d elements, want %d", got, n)
			}
		}},
	}
	for _, k := range poolKinds() {
		t.Run(k.name, func(t *testing.T) {
			p := openPool(t, k)
			newPS := func(t *testing.T) PS {
				s, err := vmem.NewSlice[uint64](p, n, vmem.WithStripe(n/8))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.CopyFrom(keepValues(n), 0); err != nil {
					t.Fatal(err)
				}
				return s
			}
			waits := 0
			for _, op := range ops {
				t.Run(op.name, func(t *testing.T) {
					waits += vmemtest.KeptAlive(t, newPS(t), func(s PS) { op.run(t, s) })
				})
			}
			if waits == 0 {
				t.Errorf("no call waited: the test checks nothing")
			}
		})
	}
}
