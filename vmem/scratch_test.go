package vmem_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestScratchKept: kernels keep the largest of their small scratch buffers
// (at most four a kind) and one large device-local buffer, reuse them, and
// give everything back at Trim.
func TestScratchKept(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		if !vmem.KernelsAvailable(d) {
			t.Skip("no kernels on this device")
		}
		const mib = 1 << 20
		if err := vmem.ScratchCycle(d, false, 1*mib, 2*mib, 4*mib, 8*mib, 16*mib); err != nil {
			t.Fatal(err)
		}
		host, _, _ := vmem.ScratchKept(d)
		slices.Sort(host)
		if want := []uint64{2 * mib, 4 * mib, 8 * mib, 16 * mib}; !slices.Equal(host, want) {
			t.Errorf("kept host scratch %v, want the four largest %v", host, want)
		}
		// A buffer larger than the small ones' bound is kept alone, and
		// replaced by the next.
		if err := vmem.ScratchCycle(d, true, 65*mib); err != nil {
			t.Fatal(err)
		}
		if err := vmem.ScratchCycle(d, true, 66*mib); err != nil {
			t.Fatal(err)
		}
		if _, _, big := vmem.ScratchKept(d); big < 66*mib {
			t.Errorf("kept large scratch of %d bytes, want the last one (66 MiB)", big)
		}
		// A sort runs on kept scratch and is still right.
		rng := rand.New(rand.NewPCG(5, 6))
		vals := randNumbers[uint64](rng, 5000, 0)
		s := newFilled(t, d, vals)
		for range 2 {
			if err := vmem.Sort(s); err != nil {
				t.Fatal(err)
			}
		}
		want := slices.Clone(vals)
		slices.Sort(want)
		if got := readAll(t, s); !slices.Equal(got, want) {
			t.Fatal("sort on kept scratch is wrong")
		}
		kdev(d).Trim()
		host, dev, big := vmem.ScratchKept(d)
		if len(host)+len(dev) != 0 || big != 0 {
			t.Errorf("after Trim: host %v, device %v, large %d kept", host, dev, big)
		}
	})
}
