// Package vmemtest runs tests on every backend present and fails tests that
// leak blocks.
//
// Devices opened here record where every block is allocated
// (kern.Device.TraceBlocks), so a leak report names the call that made the
// leaked block, as cilium/ebpf's fd tracer does for file descriptors.
//
// The host backend always runs. The Vulkan backend runs when a Vulkan
// device is present (lavapipe counts); otherwise its subtests skip, unless
// VMEM_REQUIRE_VULKAN=1, which turns the skip into a failure so CI cannot
// pass silently without the GPU path. VMEM_BACKEND=host limits the run to
// the host backend.
package vmemtest

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/vmem"
)

// RequireVulkan reports whether VMEM_REQUIRE_VULKAN=1.
func RequireVulkan() bool { return os.Getenv("VMEM_REQUIRE_VULKAN") == "1" }

// Backends lists the backends a test should run on.
func Backends() []vmem.Backend {
	// VMEM_BACKEND=host (or cpu) confines Open to the host backend.
	if b := strings.ToLower(strings.TrimSpace(os.Getenv("VMEM_BACKEND"))); b == string(vmem.BackendHost) || b == "cpu" {
		return []vmem.Backend{vmem.BackendHost}
	}
	return []vmem.Backend{vmem.BackendHost, vmem.BackendVulkan}
}

// Open opens a device of backend b for t, skipping (or failing, see the
// package comment) when b is Vulkan and no device is present. At cleanup it
// fails the test if any block is still allocated, then closes the device.
func Open(t testing.TB, b vmem.Backend, o vmem.Options) *vmem.Device {
	t.Helper()
	o.Backend = b
	d, err := vmem.Open(o)
	if err != nil {
		if b == vmem.BackendVulkan && !RequireVulkan() {
			t.Skipf("no Vulkan device: %v", err)
		}
		t.Fatalf("open %s: %v", b, err)
	}
	kern.Of(d).TraceBlocks()
	t.Cleanup(func() {
		CheckNoLeaks(t, d)
		d.Close()
	})
	return d
}

// CheckNoLeaks fails t if d has blocks in use, naming where each leaked
// block was allocated when the device traces blocks (devices from Open do).
func CheckNoLeaks(t testing.TB, d *vmem.Device) {
	t.Helper()
	if err := Leaks(d); err != nil {
		t.Error(err)
	}
}

// maxReported bounds the leaked blocks a report details.
const maxReported = 5

// Leaks returns an error describing the blocks still allocated on d (nil if
// none): the counts per tier, then the first few blocks with their
// allocation stacks.
func Leaks(d *vmem.Device) error {
	var b strings.Builder
	for tier := vmem.Tier(0); tier <= vmem.Host; tier++ {
		if st := d.Info().Tiers[tier]; st.Blocks != 0 || st.InUse != 0 {
			fmt.Fprintf(&b, "%s tier: %d blocks (%d bytes) still allocated\n", tier, st.Blocks, st.InUse)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	live := kern.Of(d).LiveBlocks()
	for i, lb := range live {
		if i == maxReported {
			fmt.Fprintf(&b, "... and %d more\n", len(live)-i)
			break
		}
		fmt.Fprintf(&b, "leaked %s\n", lb)
	}
	return errors.New(strings.TrimSuffix(b.String(), "\n"))
}

// Each runs f as a subtest on every backend, on a fresh device.
func Each(t *testing.T, o vmem.Options, f func(t *testing.T, d *vmem.Device)) {
	t.Helper()
	for _, b := range Backends() {
		t.Run(string(b), func(t *testing.T) {
			f(t, Open(t, b, o))
		})
	}
}

// Panics runs f and returns the message of the panic it raised, and whether
// it panicked: for tests of methods that must panic clearly (use after
// Close of a method with no error result).
func Panics(f func()) (msg string, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			msg, panicked = fmt.Sprint(r), true
		}
	}()
	f()
	return "", false
}

// NewPool makes a pool of devices the caller opened (and keeps closing),
// as OpenAll makes one of every GPU: tests simulate several GPUs with
// several host devices, or one Vulkan device opened twice.
func NewPool(devs ...*vmem.Device) (*vmem.Pool, error) {
	ds := make([]any, len(devs))
	for i, d := range devs {
		ds[i] = d
	}
	p, err := kern.NewPool(ds)
	pool, _ := p.(*vmem.Pool)
	return pool, err
}

// WithSegmentBytes caps a Slice's segments at n bytes (the default is 1
// GiB on a GPU), so that a test covers segment boundaries with little data.
func WithSegmentBytes(n uint64) vmem.SliceOption {
	return kern.SegmentBytes(n).(vmem.SliceOption)
}
