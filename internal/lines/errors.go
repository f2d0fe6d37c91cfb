package lines

import (
	"errors"

	"github.com/govram/govram/internal/recs"
)

// Errors returned by this package. Match them with errors.Is; the errors
// returned carry details (the offset) around them.
var (
	// ErrRange: an access reaches outside the batcher's region.
	ErrRange = errors.New("access outside the region")

	// ErrAlign: a region does not start on a 64-byte line.
	ErrAlign = errors.New("region not 64-byte aligned")
)

// LineSize is the unit of every VRAM access: one 64-byte line.
const LineSize = recs.LineSize
