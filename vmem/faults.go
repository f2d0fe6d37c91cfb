package vmem

import (
	"fmt"
	"sync/atomic"
)

// Faults makes a device fail on purpose, so tests can show that containers
// survive out-of-memory and device loss. Counts are 1-based: FailAlloc 3
// fails the third Alloc from now. Zero disables a fault.
type Faults struct {
	FailAlloc  int64 // the Nth Alloc returns ErrOutOfMemory
	FailSubmit int64 // the Nth GPU submission (or host transfer) returns ErrDeviceLost and loses the device
}

type faultState struct {
	allocLeft  atomic.Int64
	submitLeft atomic.Int64
}

// InjectFaults arms f on the device, replacing what was armed before.
func (d *Device) InjectFaults(f Faults) {
	d.faults.allocLeft.Store(f.FailAlloc)
	d.faults.submitLeft.Store(f.FailSubmit)
}

func fire(c *atomic.Int64) bool {
	for {
		n := c.Load()
		if n <= 0 {
			return false
		}
		if c.CompareAndSwap(n, n-1) {
			return n == 1
		}
	}
}

func (f *faultState) alloc() error {
	if fire(&f.allocLeft) {
		return fmt.Errorf("%w: injected fault", ErrOutOfMemory)
	}
	return nil
}

func (f *faultState) submit() error {
	if fire(&f.submitLeft) {
		return fmt.Errorf("%w: injected fault", ErrDeviceLost)
	}
	return nil
}
