package collections

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestBTreeScanSplit runs the BTree differential tests (without a tier,
// with tiny tiers, and with concurrent readers), the test that scans
// allocate nothing and the one of a device lost under a tier, with every
// window of enough lines read in parts on par's workers
// (VMEM_SCAN_PARTS=4): the answers stay google/btree's and the Go map's,
// and on Vulkan, where leaves lie in mapped memory, windows were read in
// parts.
func TestBTreeScanSplit(t *testing.T) {
	old := btScanParts
	var splits atomic.Int64
	btScanParts, btSplitHook = 4, func() { splits.Add(1) }
	t.Cleanup(func() { btScanParts, btSplitHook = old, nil })
	t.Run("differential", TestBTreeDifferential)
	t.Run("tier", TestBTreeTierDifferential)
	t.Run("concurrent", TestBTreeTierConcurrent)
	t.Run("noallocs", TestBTreeScanNoAllocs)
	t.Run("lost", TestBTreeTierDeviceLost)
	if t.Failed() || runtime.GOMAXPROCS(0) < 2 || !slices.Contains(vmemtest.Backends(), vmem.BackendVulkan) {
		return // no kept workers, or no mapped device memory to read in parts
	}
	if d, err := vmem.Open(vmem.Options{Backend: vmem.BackendVulkan}); err == nil {
		d.Close()
		if splits.Load() == 0 {
			t.Fatal("no window was read in parts")
		}
		t.Logf("%d windows read in parts", splits.Load())
	}
}

func TestScanPartsFrom(t *testing.T) {
	for env, want := range map[string]int{"": 1, "0": 1, "1": 1, "2": 2, "4": 4, "16": 16, "64": 16, "-3": 1, "x": 1} {
		if got := scanPartsFrom(env); got != want {
			t.Errorf("VMEM_SCAN_PARTS=%q: %d parts, want %d", env, got, want)
		}
	}
}
