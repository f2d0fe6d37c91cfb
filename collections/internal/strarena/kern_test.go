package strarena

import (
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/vmem"
)

// kdev returns d's plumbing (internal/kern), for fault injection.
func kdev(d *vmem.Device) kern.Device { return kern.Of(d) }
