package vmem_test

// The device's testing hooks (Faults), its lifecycle (Close with blocks and
// containers open, AtClose), leak tracing, and zeroed reuse of memory.
// Container behaviour under these faults is tested in package collections
// (reliability_test.go), vmem.Slice included.

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

func TestFaultFailAlloc(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		kdev(d).InjectFaults(kern.Faults{FailAlloc: 3})
		var blks []block.Block
		for i := 1; i <= 4; i++ {
			b, err := kdev(d).Alloc(block.Mapped, 100, 0)
			if i == 3 {
				if !errors.Is(err, vmem.ErrOutOfMemory) || !b.IsZero() {
					t.Fatalf("third Alloc: %v, %v; want ErrOutOfMemory", b, err)
				}
				if st := d.Info().Tiers[vmem.Mapped]; st.Blocks != 2 {
					t.Fatalf("the failed Alloc changed the blocks: %+v", st)
				}
				continue
			}
			if err != nil {
				t.Fatalf("Alloc %d: %v", i, err)
			}
			blks = append(blks, b)
		}
		if p := kdev(d).PendingFaults(); p != (kern.Faults{}) {
			t.Errorf("PendingFaults after the fault fired: %+v", p)
		}
		if err := d.Err(); err != nil {
			t.Errorf("out of memory is not sticky, but Err = %v", err)
		}
		for _, b := range blks {
			kdev(d).Free(b)
		}
	})
}

func TestFaultFailSubmitIsSticky(t *testing.T) {
	for _, b := range vmemtest.Backends() {
		t.Run(string(b), func(t *testing.T) {
			d := vmemtest.Open(t, b, vmem.Options{})
			blk, err := kdev(d).Alloc(block.Private, 4096, 0)
			if err != nil {
				t.Fatal(err)
			}
			host, err := kdev(d).Alloc(block.Host, 4096, 0)
			if err != nil {
				t.Fatal(err)
			}
			kdev(d).InjectFaults(kern.Faults{FailSubmit: 2})
			if p := kdev(d).PendingFaults(); p.FailSubmit != 2 {
				t.Fatalf("PendingFaults: %+v", p)
			}
			buf := make([]byte, 256)
			if err := kdev(d).Write(blk, 0, buf); err != nil {
				t.Fatalf("first transfer: %v", err)
			}
			if err := kdev(d).Read(buf, blk, 0); !errors.Is(err, vmem.ErrDeviceLost) {
				t.Fatalf("second transfer: %v, want ErrDeviceLost", err)
			}
			// Sticky: everything but Free and Close fails from now on.
			checks := map[string]error{
				"Err":   d.Err(),
				"Write": kdev(d).Write(blk, 0, buf),
				"Read":  kdev(d).Read(buf, host, 0),
				"Copy":  kdev(d).Copy(host, 0, blk, 0, 64),
				"Fill":  kdev(d).Fill(host, 0, 64, 1),
			}
			_, checks["Alloc"] = kdev(d).Alloc(block.Mapped, 64, 0)
			for name, err := range checks {
				if !errors.Is(err, vmem.ErrDeviceLost) {
					t.Errorf("%s after device loss: %v, want ErrDeviceLost", name, err)
				}
			}
			if err := kdev(d).Free(blk); err != nil {
				t.Errorf("Free after device loss: %v", err)
			}
			if err := kdev(d).Free(host); err != nil {
				t.Errorf("Free after device loss: %v", err)
			}
		})
	}
}

func TestFaultLoseDevice(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		s, err := vmem.NewSlice[uint64](d, 100)
		if err != nil {
			t.Fatal(err)
		}
		// A Slice with room for more: an Append of one element that needs
		// no growth must see the loss too.
		room, err := vmem.NewSlice[uint64](d, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := room.Append(1); err != nil || room.Cap() < 2 {
			t.Fatalf("Append to an empty Slice: %v, capacity %d", err, room.Cap())
		}
		if err := d.Err(); err != nil {
			t.Fatal(err)
		}
		kdev(d).InjectFaults(kern.Faults{LoseDevice: true})
		if err := d.Err(); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("Err after LoseDevice: %v", err)
		}
		kdev(d).InjectFaults(kern.Faults{}) // disarming does not bring the device back
		if err := d.Err(); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("Err after disarming: %v", err)
		}
		if err := s.Append(1); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Errorf("Slice.Append on a lost device: %v", err)
		}
		if err := room.Append(2); !errors.Is(err, vmem.ErrDeviceLost) || room.Len() != 1 {
			t.Errorf("Slice.Append with room on a lost device: %v, Len %d", err, room.Len())
		}
		if err := s.CopyFrom(make([]uint64, 10), 0); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Errorf("Slice.CopyFrom on a lost device: %v", err)
		}
		if err := room.Close(); err != nil {
			t.Errorf("Slice.Close on a lost device: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Slice.Close on a lost device: %v", err)
		}
	})
}

// TestDeviceCloseReportsOpenBlocks: Close frees blocks left allocated, says
// how many and how much, and makes the device unusable.
func TestDeviceCloseReportsOpenBlocks(t *testing.T) {
	for _, b := range vmemtest.Backends() {
		t.Run(string(b), func(t *testing.T) {
			d, err := vmem.Open(vmem.Options{Backend: b})
			if err != nil {
				if b == vmem.BackendVulkan && !vmemtest.RequireVulkan() {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			for range 3 {
				if _, err := kdev(d).Alloc(block.Mapped, 1<<20, 0); err != nil {
					t.Fatal(err)
				}
			}
			ran := 0
			kdev(d).AtClose(func() { ran++ })
			cancel := kdev(d).AtClose(func() { t.Error("a cancelled AtClose ran") })
			cancel()
			err = d.Close()
			if !errors.Is(err, vmem.ErrOpenBlocks) || !strings.Contains(err.Error(), "3 blocks (3.0 MiB)") {
				t.Fatalf("Close: %v, want ErrOpenBlocks with 3 blocks (3.0 MiB)", err)
			}
			if ran != 1 {
				t.Errorf("AtClose function ran %d times", ran)
			}
			if err := d.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if err := d.Err(); !errors.Is(err, vmem.ErrClosed) {
				t.Errorf("Err after Close: %v", err)
			}
			if _, err := kdev(d).Alloc(block.Mapped, 64, 0); !errors.Is(err, vmem.ErrClosed) {
				t.Errorf("Alloc after Close: %v", err)
			}
			for tier := vmem.Tier(0); tier <= vmem.Host; tier++ {
				if st := d.Info().Tiers[tier]; st.Reserved != 0 || st.InUse != 0 || st.Blocks != 0 || st.Chunks != 0 {
					t.Errorf("%s after Close: %+v", tier, st)
				}
			}
		})
	}
}

// TestLiveBlocksTrace: with TraceBlocks, LiveBlocks names where each block
// still allocated came from.
func TestLiveBlocksTrace(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		b, err := traceHelperAlloc(d)
		if err != nil {
			t.Fatal(err)
		}
		live := kdev(d).LiveBlocks()
		if len(live) != 1 || live[0].Size != 200 || live[0].Tier != block.Host ||
			!strings.Contains(live[0].Stack, "traceHelperAlloc") {
			t.Fatalf("LiveBlocks: %v", live)
		}
		err = vmemtest.Leaks(d)
		if err == nil || !strings.Contains(err.Error(), "traceHelperAlloc") || !strings.Contains(err.Error(), "reliability_test.go") {
			t.Fatalf("leak report: %v", err)
		}
		kdev(d).Free(b)
		if live := kdev(d).LiveBlocks(); len(live) != 0 {
			t.Fatalf("LiveBlocks after Free: %v", live)
		}
	})
}

func traceHelperAlloc(d *vmem.Device) (block.Block, error) { return kdev(d).Alloc(block.Host, 200, 0) }

// TestReusedBlocksAreZero: a block carved from memory another block used
// reads as zeros, in every tier, on every backend.
func TestReusedBlocksAreZero(t *testing.T) {
	vmemtest.Each(t, vmem.Options{ChunkSize: 1 << 20}, func(t *testing.T, d *vmem.Device) {
		pat := bytes.Repeat([]byte{0xA5}, 300<<10)
		for tier := vmem.Tier(0); tier <= vmem.Host; tier++ {
			for round := range 3 {
				a, err := kdev(d).Alloc(block.Tier(tier), uint64(len(pat)), 0)
				if err != nil {
					t.Fatal(err)
				}
				if err := kdev(d).Write(a, 0, pat); err != nil {
					t.Fatal(err)
				}
				kdev(d).Free(a)
				// Sizes that overlap the old block differently each round.
				b, err := kdev(d).Alloc(block.Tier(tier), uint64(len(pat))+uint64(round)*4096, 0)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]byte, b.Size())
				if err := kdev(d).Read(got, b, 0); err != nil {
					t.Fatal(err)
				}
				if i := bytes.IndexByte(got, 0xA5); i >= 0 {
					t.Fatalf("%s round %d: reused block shows the freed block's byte at %d", tier, round, i)
				}
				kdev(d).Free(b)
			}
		}
	})
}

// TestSliceGrowthIsZero: segments a Slice grows into, and elements past a
// shrink, read as zeros even where freed data was.
func TestSliceGrowthIsZero(t *testing.T) {
	vmemtest.Each(t, vmem.Options{ChunkSize: 1 << 20}, func(t *testing.T, d *vmem.Device) {
		old, err := vmem.NewSlice[uint64](d, 50000)
		if err != nil {
			t.Fatal(err)
		}
		old.Fill(0xA5A5A5A5A5A5A5A5)
		old.Close()
		s, err := vmem.NewSlice[uint64](d, 0, vmemtest.WithSegmentBytes(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		pat := uint64(0xA5A5A5A5A5A5A5A5)
		for _, n := range []int{1000, 30000, 10, 50000} {
			prev := s.Len()
			if err := s.Resize(n); err != nil {
				t.Fatal(err)
			}
			for i, v := range s.All() {
				if i >= prev && v != 0 {
					t.Fatalf("Resize(%d) from %d: element %d = %#x, want 0", n, prev, i, v)
				}
			}
			// Dirty everything, so the next growth (or the growth after a
			// shrink) must not bring it back.
			if err := s.Fill(pat); err != nil {
				t.Fatal(err)
			}
		}
	})
}
