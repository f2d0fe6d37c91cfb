package vmem_test

import (
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/vmem"
)

// kdev returns d's plumbing (internal/kern), which tests use to run
// kernel batches and inject faults.
func kdev(d *vmem.Device) kern.Device[vmem.Block] { return kern.Of[vmem.Block](d) }
