package layout

import (
	"errors"

	"github.com/govram/govram/internal/recs"
)

// ErrPointerType: the type holds pointers (or slices, maps, interfaces,
// channels, funcs, strings), which the garbage collector cannot see once
// the value lives in device memory. Match it with errors.Is; the errors
// returned name the type and the field around it. vmem.ErrPointerType is
// the same error.
var ErrPointerType = errors.New("type holds pointers")

// The type checks live in internal/recs, which govram's packages share;
// their errors wrap this package's sentinel, so that it is declared here,
// where users read it.
func init() { recs.ErrPointerType = ErrPointerType }
