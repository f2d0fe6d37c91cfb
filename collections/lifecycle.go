package collections

import (
	"weak"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/held"
	"github.com/govram/govram/vmem"
)

// Lifecycle shared by the containers (see docs/reliability.md):
//
//   - Every method with an error result starts with a usable check: vmem.ErrClosed
//     after Close, vmem.ErrDeviceLost once the device was lost, so that loss is
//     sticky for the container too, even for calls that would only touch
//     memory the CPU maps (two plain loads, no locked instruction).
//   - Every container registers its Close with the device (kern.Device.AtClose):
//     closing the device closes the container first, so later calls see a
//     closed container instead of freed memory.

// owner is a container's memory: its device blocks and host mappings,
// freed at Close or by the garbage-collection backstop (internal/held).
type owner = held.Set[block.Block, block.Tier]

func newOwner(dev *vmem.Device) *owner { return held.New[block.Block, block.Tier](kdev(dev)) }

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
		return vmem.ErrClosed
	}
	if m.dev == nil {
		zeroUse("Map")
	}
	return m.dev.Err()
}

// btUsable is the entry check of the BTree's writing methods (all have an
// error result). It counts the write for the scans in progress.
func (t *BTree[K, V]) btUsable() error {
	if t.closed {
		return vmem.ErrClosed
	}
	if t.dev == nil {
		zeroUse("BTree")
	}
	t.writes++
	return t.dev.Err()
}

// ringUsable is the entry check of the Ring's methods with an error result.
func (r *Ring[T]) ringUsable() error {
	if r.closed {
		return vmem.ErrClosed
	}
	if r.dev == nil {
		zeroUse("Ring")
	}
	return r.dev.Err()
}

// zeroUse panics for a container used as its zero value (a var of the
// type, or new): like a nil Go map, it has no memory to work on.
func zeroUse(kind string) {
	panic("collections: " + kind + " used without New" + kind + " (its zero value is not usable)")
}
