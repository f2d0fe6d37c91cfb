package vmem_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestKernelBatchStart: Start submits without waiting and the Flight's
// Wait ends the run; a flight left unwaited is waited for by the next
// Start, Run or Close, so no command outlives the memory it uses.
func TestKernelBatchStart(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		kb, err := d.NewKernelBatch()
		if errors.Is(err, vmem.ErrNoKernels) {
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
		in, out := st.Bytes()[:n], st.Bytes()[n:]
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
