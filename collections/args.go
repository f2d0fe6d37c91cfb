package collections

import (
	"fmt"
	"io"
	"reflect"

	"github.com/govram/govram/vmem"
)

// loadArgs checks what a loader is given before it reads anything: a nil
// device or reader is the caller's mistake, reported as such rather than
// as a nil dereference, and a closed or lost device fails at once.
func loadArgs(call string, dev *vmem.Device, r io.Reader) error {
	if dev == nil {
		return fmt.Errorf("collections: %s: nil device: %w", call, vmem.ErrNoDevice)
	}
	if err := dev.Err(); err != nil {
		return fmt.Errorf("collections: %s: %w", call, err)
	}
	if r == nil {
		return fmt.Errorf("collections: %s: nil io.Reader: %w", call, vmem.ErrRange)
	}
	return nil
}

// distinctBound is how many distinct values a fixed-size type without
// padding can take, when that is fewer than 2^62 (ok false otherwise, and
// for strings): a snapshot that claims more distinct keys than that is
// forged, whatever its count would cost to disprove by reading.
func distinctBound[K any]() (n uint64, ok bool) {
	t := reflect.TypeFor[K]()
	if isStringType(t) || t.Size() >= 8 {
		return 0, false
	}
	return 1 << (8 * t.Size()), true
}

// isStringType reports whether t is a string type, whose bytes the
// containers store in device memory themselves (layout.Check refuses
// it).
func isStringType(t reflect.Type) bool { return t != nil && t.Kind() == reflect.String }
