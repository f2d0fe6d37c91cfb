package layout

import "time"

// Costs are the measured prices that govram's access planner derives its
// thresholds from: when a read of mapped VRAM goes by streaming loads, by
// DMA or by a GPU gather. The defaults are the H200's (H200Costs); a
// machine whose link or GPU differs passes its own through
// vmem.Options.Costs.
type Costs struct {
	StreamLine      time.Duration // one line by streaming load, a few in flight
	DMARoundTrip    time.Duration // submit one copy and see it complete
	DMABytesPerSec  float64       // copy bandwidth once started
	GatherRoundTrip time.Duration // dispatch a gather kernel, then copy its output back
}

// H200Costs are the costs measured in docs/physics.md, rounded for the
// planner: StreamLine from the range of streaming line loads, a few in
// flight and alone from Go; DMARoundTrip and DMABytesPerSec a copy waited
// on by polling; GatherRoundTrip a compute round trip plus the copy back.
var H200Costs = Costs{
	StreamLine:      150 * time.Nanosecond,
	DMARoundTrip:    22 * time.Microsecond,
	DMABytesPerSec:  50e9,
	GatherRoundTrip: 56 * time.Microsecond,
}
