package vmem_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/govram/govram/internal/hostmem"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestKernelBatchStart: Start submits without waiting and the Flight's
// Wait ends the run; a flight left unwaited is waited for by the next
// Start, Run or Close, so no command outlives the memory it uses.
func TestKernelBatchStart(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		kb, err := kdev(d).NewBatch()
		if errors.Is(err, kern.ErrNoKernels) {
			t.Skip("no kernels on this device")
		}
		if err != nil {
			t.Fatal(err)
		}
		// Large enough that on a GPU a copy back outlasts a Start that skipped
		// the wait (lavapipe runs a submit before it returns).
		const n = 8 << 20
		st, err := kb.Staging(2 * n)
		if err != nil {
			t.Fatal(err)
		}
		dv, err := kb.Scratch(n)
		if err != nil {
			t.Fatal(err)
		}
		buf := hostmem.Bytes(st.Ptr, st.Size)
		in, out := buf[:n], buf[n:]
		// round trips in through the device into out, with pattern p.
		round := func(p byte) {
			for i := range in {
				in[i] = byte(i*7) ^ p
			}
			kb.Upload(dv, st, 0, n)
			kb.Barrier()
			kb.CopyTo(st, n, dv, n)
		}
		check := func(p byte) {
			t.Helper()
			want := make([]byte, n)
			for i := range want {
				want[i] = byte(i*7) ^ p
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("pattern %#x: the copy back differs", p)
			}
		}
		round(1)
		f, err := kb.Start()
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Wait(); err != nil {
			t.Fatal(err)
		}
		if err := f.Wait(); err != nil { // a second Wait returns the same
			t.Fatal(err)
		}
		check(1)
		// An unwaited flight is waited for by the next Start.
		round(2)
		f2, err := kb.Start()
		if err != nil {
			t.Fatal(err)
		}
		f3, err := kb.Start() // nothing recorded: done at once
		if err != nil {
			t.Fatal(err)
		}
		if err := f3.Wait(); err != nil {
			t.Fatal(err)
		}
		check(2)
		if err := f2.Wait(); err != nil {
			t.Fatal(err)
		}
		// ... and by Run.
		round(3)
		if _, err := kb.Start(); err != nil {
			t.Fatal(err)
		}
		if err := kb.Run(); err != nil {
			t.Fatal(err)
		}
		check(3)
		// ... and by Close, before the memory goes back.
		round(4)
		f4, err := kb.Start()
		if err != nil {
			t.Fatal(err)
		}
		kb.Close()
		if err := f4.Wait(); err != nil {
			t.Fatal(err)
		}
		if _, err := kb.Start(); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("Start after Close: %v, want ErrClosed", err)
		}
	})
}

// batchFillPush is the fill kernel's push block: dst, then n and period in
// 16-byte units.
type batchFillPush struct {
	dst       uint64
	n, period uint32
}

var batchFill = kern.NewKernel("fill", nil, batchFillPush{}) // internal/shaders' fill

// TestKernelBatchCopyQueues: with UseCopyQueues, rounds of upload, kernel
// and download started back to back (on a GPU with copy engines: three
// queues ordered by semaphores) give what one queue gives, whether each
// round is waited for or several are in flight on separate buffers. With
// VMEM_COPY_QUEUES=1 a device without copy engines (lavapipe) submits
// the three parts too, on its one queue.
func TestKernelBatchCopyQueues(t *testing.T) {
	for _, env := range []string{"default", "1"} {
		t.Run("env="+env, func(t *testing.T) {
			if env != "default" {
				t.Setenv("VMEM_COPY_QUEUES", env)
			}
			testKernelBatchCopyQueues(t)
		})
	}
}

func testKernelBatchCopyQueues(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		const n, period, sets = 4 << 20, 3, 3
		type set struct {
			kb kern.Batch
			st kern.Staging
			dv uint64
			f  kern.Flight
			p  byte
		}
		var ss [sets]set
		for i := range ss {
			kb, st, dv := copyQueueBatch(t, d, n)
			ss[i] = set{kb: kb, st: st, dv: dv}
		}
		start := func(s *set, p byte) {
			t.Helper()
			in := hostmem.Bytes(s.st.Ptr, s.st.Size)[:n]
			for i := range in {
				in[i] = byte(i*7) ^ p
			}
			s.p = p
			s.kb.Upload(s.dv, s.st, 0, n)
			s.kb.Barrier()
			s.kb.Dispatch(batchFill, n/16, &batchFillPush{dst: s.dv, n: n / 16, period: period})
			s.kb.Barrier()
			s.kb.CopyTo(s.st, n, s.dv, n)
			f, err := s.kb.Start()
			if err != nil {
				t.Fatal(err)
			}
			s.f = f
		}
		finish := func(s *set) {
			t.Helper()
			if err := s.f.Wait(); err != nil {
				t.Fatal(err)
			}
			out := hostmem.Bytes(s.st.Ptr, s.st.Size)[n:]
			for i := range out {
				if want := byte((i%(16*period))*7) ^ s.p; out[i] != want {
					t.Fatalf("pattern %#x: byte %d is %#x, want %#x", s.p, i, out[i], want)
				}
			}
		}
		// One at a time, then three in flight at once, round after round.
		for r := range 4 {
			start(&ss[0], byte(r))
			finish(&ss[0])
		}
		for r := range 12 {
			s := &ss[r%sets]
			if r >= sets {
				finish(s)
			}
			start(s, byte(0x40+r))
		}
		for r := 12 - sets; r < 12; r++ {
			finish(&ss[r%sets])
		}
	})
}

// TestKernelBatchCopyQueuesFault: a batch split over queues is three
// submissions; a device lost at any of them fails Start with
// ErrDeviceLost, after the parts already submitted have finished, and the
// batch still closes.
func TestKernelBatchCopyQueuesFault(t *testing.T) {
	t.Setenv("VMEM_COPY_QUEUES", "1")
	for n := int64(1); n <= 3; n++ {
		t.Run(fmt.Sprintf("fail-submit-%d", n), func(t *testing.T) {
			vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
				const size = 1 << 20
				kb, st, dv := copyQueueBatch(t, d, size)
				kb.Upload(dv, st, 0, size)
				kb.Barrier()
				kb.Dispatch(batchFill, size/16, &batchFillPush{dst: dv, n: size / 16, period: 1})
				kb.Barrier()
				kb.CopyTo(st, size, dv, size)
				kdev(d).InjectFaults(kern.Faults{FailSubmit: n})
				if _, err := kb.Start(); !errors.Is(err, vmem.ErrDeviceLost) {
					t.Fatalf("Start with submission %d failing: %v, want ErrDeviceLost", n, err)
				}
				if left := kdev(d).PendingFaults().FailSubmit; left != 0 {
					t.Fatalf("%d submissions left before the fault: the batch was not split in three", left)
				}
				// The device stays lost for the batch's later rounds.
				kb.Upload(dv, st, 0, size)
				if err := kb.Run(); !errors.Is(err, vmem.ErrDeviceLost) {
					t.Fatalf("Run after the loss: %v", err)
				}
			})
		})
	}
}

// copyQueueBatch opens a batch that uses the copy queues, closed with the
// test, with 2n bytes of staging (in, then out) and n of scratch; it skips
// the test where kernels cannot run.
func copyQueueBatch(t *testing.T, d *vmem.Device, n uint64) (kern.Batch, kern.Staging, uint64) {
	t.Helper()
	kb, err := kdev(d).NewBatch()
	if errors.Is(err, kern.ErrNoKernels) {
		t.Skip("no kernels on this device")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kb.Close)
	kb.UseCopyQueues()
	st, err := kb.Staging(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	dv, err := kb.Scratch(n)
	if err != nil {
		t.Fatal(err)
	}
	return kb, st, dv
}
