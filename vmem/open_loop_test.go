package vmem_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/govram/govram/vmem"
)

// TestOpenCloseLoop opens and closes a Vulkan device VMEM_OPEN_LOOP times
// (skipped without it), reporting the open file descriptors as it goes: a
// process that opens devices many times over (a long test run) must not
// run out of anything. Diagnoses VK_ERROR_INCOMPATIBLE_DRIVER late in long
// runs on the H200 machine.
func TestOpenCloseLoop(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("VMEM_OPEN_LOOP"))
	if n <= 0 {
		t.Skip("set VMEM_OPEN_LOOP=N to run")
	}
	fds := func() int {
		es, _ := os.ReadDir("/proc/self/fd")
		return len(es)
	}
	// Counted after the first open: the process keeps its Vulkan instance
	// (and the driver's descriptors) for good once it has one.
	start := -1
	for i := range n {
		d, err := vmem.Open(vmem.Options{Backend: vmem.BackendVulkan})
		if err != nil {
			t.Fatalf("open %d (%d fds, %d after the first open): %v", i, fds(), start, err)
		}
		if err := d.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
		if i == 0 {
			start = fds()
		}
		if i%50 == 0 {
			t.Logf("open %d: %d fds", i, fds())
		}
	}
	if end := fds(); end > start+8 {
		t.Errorf("%d fds after %d opens, %d after the first", end, n, start)
	}
}
