package vmem

import (
	"fmt"
	"sync/atomic"
)

// Faults makes a device fail on purpose, so tests can show that containers
// survive out-of-memory and device loss. It is a testing hook: production
// code never arms it. Counts are 1-based and start when InjectFaults is
// called: FailAlloc 3 fails the third Alloc from then. Zero disables a fault.
//
// What counts as a submission: every GPU submission (a copy, a fill, a
// kernel batch — three where KernelBatch.UseCopyQueues splits it — a
// staged transfer) and, so that the host backend can be
// tested the same way, every Read, Write, Copy and Fill of the host backend
// and every CPU-side Read or Write of mapped memory. Plain loads and stores
// through Block.Ptr are not submissions and never fail.
type Faults struct {
	// FailAlloc: the Nth Alloc returns ErrOutOfMemory and allocates nothing.
	FailAlloc int64
	// FailSubmit: the Nth submission returns ErrDeviceLost and loses the
	// device, as a real device loss does: every later operation but Free
	// and Close returns ErrDeviceLost.
	FailSubmit int64
	// LoseDevice loses the device at once, as if the GPU had stopped
	// answering between two calls.
	LoseDevice bool
}

type faultState struct {
	allocLeft  atomic.Int64
	submitLeft atomic.Int64
}

// InjectFaults arms f on the device, replacing what was armed before. It is
// a testing hook (see Faults). A lost device stays lost.
func (d *Device) InjectFaults(f Faults) {
	d.faults.allocLeft.Store(f.FailAlloc)
	d.faults.submitLeft.Store(f.FailSubmit)
	if f.LoseDevice {
		d.lost.Store(true)
	}
}

// PendingFaults returns the faults still armed: the counts left before each
// fires (0 once it fired, or if it was never armed). Tests use it to learn
// whether an operation reached the Nth allocation or submission.
func (d *Device) PendingFaults() Faults {
	return Faults{FailAlloc: d.faults.allocLeft.Load(), FailSubmit: d.faults.submitLeft.Load()}
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
