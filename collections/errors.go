package collections

import (
	"errors"
)

// ErrFull: a Ring without WithOverwrite(true) has no room. The other
// errors the containers return are vmem's sentinels (vmem.ErrClosed,
// vmem.ErrRange, vmem.ErrTooLarge, vmem.ErrDeviceLost, ...), matched with
// errors.Is: one value for each failure, whichever package returned it.
var ErrFull = errors.New("collections: ring is full")
