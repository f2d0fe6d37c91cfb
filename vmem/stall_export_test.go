package vmem

// SetGPUFloorRate sets the rate that scales GPU wait bounds (stall.go) and
// returns a function restoring the old one: a huge rate leaves only
// Options.Timeout, so a test can make a wait time out.
func SetGPUFloorRate(r uint64) (restore func()) {
	old := gpuFloorRate.Swap(r)
	return func() { gpuFloorRate.Store(old) }
}
