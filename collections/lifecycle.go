package collections

import (
	"weak"

	"github.com/govram/govram/vmem"
)

// Lifecycle shared by the containers (see docs/reliability.md):
//
//   - Every method with an error result starts with a usable check: ErrClosed
//     after Close, ErrDeviceLost once the device was lost, so that loss is
//     sticky for the container too, even for calls that would only touch
//     memory the CPU maps (two plain loads, no locked instruction).
//   - Every container registers its Close with the device (vmem.AtClose):
//     closing the device closes the container first, so later calls see a
//     closed container instead of freed memory.

// lcAtClose registers c's Close with dev. The registration holds c weakly,
// so that it does not keep a forgotten container from its garbage-collection
// backstop. The result removes the registration.
func lcAtClose[C any](dev *vmem.Device, c *C, closeFn func(*C) error) func() {
	w := weak.Make(c)
	return kdev(dev).AtClose(func() {
		if c := w.Value(); c != nil {
			closeFn(c)
		}
	})
}

// mapUsable is the entry check of the Map's methods with an error result.
func (m *Map[K, V]) mapUsable() error {
	if m.closed {
		return ErrClosed
	}
	return m.dev.Err()
}

// btUsable is the entry check of the BTree's methods with an error result.
func (t *BTree[K, V]) btUsable() error {
	if t.closed {
		return ErrClosed
	}
	return t.dev.Err()
}

// ringUsable is the entry check of the Ring's methods with an error result.
func (r *Ring[T]) ringUsable() error {
	if r.closed {
		return ErrClosed
	}
	return r.dev.Err()
}
