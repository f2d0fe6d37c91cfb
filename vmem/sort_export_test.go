package vmem

// Test hooks for the radix sort (slice_gpu.go).

// Sort kernel variants that tests select with SetSortVariant.
const (
	SortTile       = 0                      // sort_tile, subgroup scans
	SortSharedScan = kernSortFlagSharedScan // sort_tile, scans in shared memory only
	SortOld        = kernSortFlagOld        // sort_scatter
)

// SetSortVariant makes the GPU sort use variant v; it returns a restore
// function.
func SetSortVariant(v uint32) (restore func()) {
	old := kernSortFlags.Swap(v)
	return func() { kernSortFlags.Store(old) }
}
