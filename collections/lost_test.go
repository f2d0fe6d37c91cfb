package collections

import (
	"errors"
	"testing"

	"github.com/govram/govram/vmem"
)

// mustPanicLost runs f and fails t unless f panics with an error matching
// ErrDeviceLost (the design of reads on a lost device: see lost.go).
func mustPanicLost(t *testing.T, what string, f func()) {
	t.Helper()
	if err := panicLost(f); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// panicLost runs f and returns why it did not panic as a read on a lost
// device must, or nil.
func panicLost(f func()) (bad error) {
	defer func() {
		r := recover()
		err, ok := r.(error)
		switch {
		case r == nil:
			bad = errors.New("no panic, want one matching ErrDeviceLost")
		case !ok || !errors.Is(err, vmem.ErrDeviceLost):
			bad = errors.New("panic " + errString(r) + ", want one matching ErrDeviceLost")
		}
	}()
	f()
	return nil
}

func errString(r any) string {
	if err, ok := r.(error); ok {
		return err.Error()
	}
	if s, ok := r.(string); ok {
		return s
	}
	return "(not an error)"
}
