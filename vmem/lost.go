package vmem

import "errors"

// Reads on a lost device.
//
// A read without an error result (Get, All, Chunks) cannot say
// that it failed, and answering a zero value would pass for data. Once the
// device is lost it panics instead, as Go does for a nil map write or an
// index out of range, with an error for which errors.Is(v, ErrDeviceLost)
// holds; the error is also kept for Err. CopyTo and GetBatch are the forms
// that return the loss instead. Only loss panics: other failures keep
// their documented behaviour.

// lostRead is the panic value of a read that met a lost device.
type lostRead struct {
	op  string // "Slice.Get"
	err error  // matches ErrDeviceLost
}

func (e *lostRead) Error() string { return "vmem: " + e.op + ": " + e.err.Error() }
func (e *lostRead) Unwrap() error { return e.err }

// readFault panics with err, a device loss met by the read op.
func readFault(op string, err error) {
	panic(&lostRead{op: op, err: err})
}

// isLost reports whether the device was lost: one plain load, so that every
// read can afford it.
func (d *Device) isLost() bool { return d.lost.Load() }

// readLost ends read op of s on its lost device: Err keeps the loss, and
// the read panics (readFault). After Close it panics as Get does then.
//
//go:noinline
func (s *Slice[T]) readLost(op string) {
	if s.closed {
		panic("vmem: Slice used after Close")
	}
	s.err.set(ErrDeviceLost)
	readFault("Slice."+op, ErrDeviceLost)
}

// readCheck is the entry check of s's reads without an error result.
func (s *Slice[T]) readCheck(op string) {
	if s.dev.isLost() {
		s.readLost(op)
	}
}

// readLost is Slice.readLost for a pool Slice: any part's device.
//
//go:noinline
func (s *poolSlice[T]) readLost(op string) {
	if s.closed {
		panic("vmem: Slice used after Close")
	}
	s.err.set(ErrDeviceLost)
	readFault("Slice."+op, ErrDeviceLost)
}

// readCheck is the entry check of s's reads without an error result: it
// panics if any part's device is lost.
func (s *poolSlice[T]) readCheck(op string) {
	for _, p := range s.parts {
		if p.dev.isLost() {
			s.readLost(op)
		}
	}
}

// iterFail is where an iteration's read error goes: kept for Err, and a
// lost device ends the iteration by a panic (readLost).
func (s *poolSlice[T]) iterFail(op string) func(error) {
	return func(err error) {
		s.err.set(err)
		if errors.Is(err, ErrDeviceLost) {
			s.readLost(op)
		}
	}
}
