package vmem

// Test hooks for the kernels (kernel.go, slice_gpu.go).

// KernelDispatches returns how many kernel dispatches d has run.
func KernelDispatches(d *Device) int64 {
	if d.vk == nil {
		return 0
	}
	return d.vk.kern.dispatches.Load()
}

// KernelsAvailable reports whether d runs kernels.
func KernelsAvailable(d *Device) bool { return d.kern() != nil }

// SetKernelThresholds sets the sizes from which Fill and Gather use
// kernels and returns a function restoring the old ones.
func SetKernelThresholds(fillMin uint64, gatherMin int) (restore func()) {
	f, g := kernFillMin.Load(), kernGatherMin.Load()
	kernFillMin.Store(fillMin)
	kernGatherMin.Store(int64(gatherMin))
	return func() {
		kernFillMin.Store(f)
		kernGatherMin.Store(g)
	}
}

// SetGatherDirect makes the gather kernel write into host memory itself
// (on) or into VRAM followed by a copy (off); it returns a restore function.
func SetGatherDirect(on bool) (restore func()) {
	old := kernGatherDirect.Load()
	kernGatherDirect.Store(on)
	return func() { kernGatherDirect.Store(old) }
}

// SetGatherBatch sets the bytes one gather submission brings back; it
// returns a restore function.
func SetGatherBatch(n uint64) (restore func()) {
	old := kernGatherBatch.Load()
	kernGatherBatch.Store(n)
	return func() { kernGatherBatch.Store(old) }
}
