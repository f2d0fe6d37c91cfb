package vmem_test

import (
	"errors"
	"fmt"
	"github.com/govram/govram/internal/human"
	"testing"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/vmem"
)

// kdev returns d's plumbing (internal/kern), which tests use to run
// kernel batches and inject faults.
func kdev(d *vmem.Device) kern.Device { return kern.Of(d) }

// TestBlockPrivateRoundTrip: a private block is reached by Write and Read
// (DMA on a GPU), counted in whole lines, range-checked, and refused once
// freed.
func TestBlockPrivateRoundTrip(t *testing.T) {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	kd := kdev(dev)
	blk, err := kd.Alloc(block.Private, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := kd.Write(blk, 10, []byte("hello, VRAM")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 11)
	if err := kd.Read(buf, blk, 10); err != nil {
		t.Fatal(err)
	}
	st := dev.Info().Tiers[vmem.Private]
	if got := fmt.Sprintf("%s; %d block, %s in use", buf, st.Blocks, human.Bytes(st.InUse)); got != "hello, VRAM; 1 block, 1.0 KiB in use" {
		t.Errorf("got %q", got)
	}
	if err := kd.Read(buf, blk, 995); !errors.Is(err, vmem.ErrRange) { // past the end
		t.Errorf("read past the end: %v, want ErrRange", err)
	}
	if err := kd.Free(blk); err != nil {
		t.Fatal(err)
	}
	if err := kd.Free(blk); !errors.Is(err, block.ErrInvalid) { // freed twice
		t.Errorf("second Free: %v, want block.ErrInvalid", err)
	}
}
