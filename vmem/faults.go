package vmem

import (
	"fmt"
	"sync/atomic"

	"github.com/govram/govram/internal/kern"
)

// Fault injection (kern.Faults): tests arm it through kern.Of(dev) to show
// that containers survive out-of-memory and device loss.

type faultState struct {
	allocLeft  atomic.Int64
	submitLeft atomic.Int64
}

// injectFaults arms f on the device, replacing what was armed before. A
// lost device stays lost.
func (d *Device) injectFaults(f kern.Faults) {
	d.faults.allocLeft.Store(f.FailAlloc)
	d.faults.submitLeft.Store(f.FailSubmit)
	if f.LoseDevice {
		d.lost.Store(true)
	}
}

// pendingFaults returns the faults still armed: the counts left before each
// fires (0 once it fired, or if it was never armed).
func (d *Device) pendingFaults() kern.Faults {
	return kern.Faults{FailAlloc: d.faults.allocLeft.Load(), FailSubmit: d.faults.submitLeft.Load()}
}

// Err reports whether the device can still be used: ErrClosed after Close,
// ErrDeviceLost after the device was lost (for real, by a timeout, or by an
// injected fault), nil otherwise. It costs two plain loads, so containers
// check it at the start of every operation that returns an error, which
// makes device loss sticky for them too.
func (d *Device) Err() error {
	if d.closed.Load() {
		return ErrClosed
	}
	if d.lost.Load() {
		return ErrDeviceLost
	}
	return nil
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
