package collections

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/govram/govram/internal/access"
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
	for _, c := range []struct {
		env         string
		procs, want int
	}{
		{"", 2, 1}, {"", 7, 1}, {"", 8, btSplitAuto}, {"", 64, btSplitAuto},
		{"x", 2, 1}, {"x", 16, btSplitAuto}, {"0", 16, btSplitAuto}, {"-3", 16, btSplitAuto},
		{"1", 16, 1}, {"2", 2, 2}, {"4", 16, 4}, {"16", 2, 16}, {"64", 2, 16},
	} {
		if got := scanPartsFrom(c.env, c.procs); got != c.want {
			t.Errorf("VMEM_SCAN_PARTS=%q, GOMAXPROCS %d: %d parts, want %d", c.env, c.procs, got, c.want)
		}
	}
}

// TestBTreeSplitReaders checks that a window is cut only while few of
// the tree's windows are being read: a lone scan's is, one among as many
// as the cores is not.
func TestBTreeSplitReaders(t *testing.T) {
	e := &btExtent{}
	e.Kind = access.WC
	old, oldProcs := btScanParts, btProcs
	t.Cleanup(func() { btScanParts, btProcs = old, oldProcs })
	btScanParts, btProcs = 4, 16
	if !splitWorth(e, 4, 32, 1) || !splitWorth(e, 4, 32, 2) {
		t.Error("a window read by one of two readers on 16 cores is not cut")
	}
	if splitWorth(e, 4, 32, 3) || splitWorth(e, 4, 32, 16) {
		t.Error("a window read by one of three or more readers on 16 cores is cut")
	}
	if splitWorth(e, 4, btSplitMinLines-1, 1) || splitWorth(e, 1, 32, 1) {
		t.Error("a window of too few lines or of one leaf is cut")
	}
	btProcs = 2
	if !splitWorth(e, 4, 32, 1) || splitWorth(e, 4, 32, 2) {
		t.Error("on 2 cores, a lone reader's window is not cut, or a second reader's is")
	}
	btScanParts = 1
	if splitWorth(e, 4, 32, 1) {
		t.Error("a window is cut with VMEM_SCAN_PARTS=1")
	}
	e.Kind = access.Direct
	btScanParts = 4
	if splitWorth(e, 4, 32, 1) {
		t.Error("a window of ordinary memory is cut")
	}
}
