package vmem_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

var tiers = []vmem.Tier{vmem.Mapped, vmem.Private, vmem.Host}

func TestOpenInfo(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		in := d.Info()
		t.Logf("\n%s", in)
		if in.Backend != d.Info().Backend || in.Name == "" {
			t.Fatalf("info %+v", in)
		}
		for _, tier := range tiers {
			ti := in.Tiers[tier]
			if !ti.Available || ti.Capacity == 0 || ti.MaxBlock == 0 {
				t.Errorf("%s tier: %+v", tier, ti)
			}
		}
	})
}

func TestOpenErrors(t *testing.T) {
	t.Setenv("VMEM_BACKEND", "floppy")
	if _, err := vmem.Open(vmem.Options{}); err == nil {
		t.Fatal("bad VMEM_BACKEND accepted")
	}
	t.Setenv("VMEM_BACKEND", "host")
	d, err := vmem.Open(vmem.Options{Backend: vmem.BackendVulkan})
	if err != nil || d.Info().Backend != vmem.BackendHost {
		t.Fatalf("VMEM_BACKEND=host did not override: %v", err)
	}
	d.Close()
	t.Setenv("VMEM_BACKEND", "")
	if _, err := vmem.Open(vmem.Options{Backend: vmem.BackendVulkan, Device: "no such device"}); !errors.Is(err, vmem.ErrNoDevice) {
		t.Fatalf("want ErrNoDevice for a missing device, got %v", err)
	}
}

func TestCloseAndUseAfterClose(t *testing.T) {
	for _, b := range vmemtest.Backends() {
		t.Run(string(b), func(t *testing.T) {
			d, err := vmem.Open(vmem.Options{Backend: b})
			if err != nil {
				if !vmemtest.RequireVulkan() {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			blk, err := kdev(d).Alloc(block.Mapped, 1000, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); !errors.Is(err, vmem.ErrOpenBlocks) {
				t.Fatalf("Close with a live block: %v", err)
			}
			if err := d.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if _, err := kdev(d).Alloc(block.Mapped, 64, 0); !errors.Is(err, vmem.ErrClosed) {
				t.Fatalf("Alloc after Close: %v", err)
			}
			if err := kdev(d).Write(blk, 0, []byte{1}); !errors.Is(err, vmem.ErrClosed) {
				t.Fatalf("Write after Close: %v", err)
			}
			if err := kdev(d).Read(make([]byte, 1), blk, 0); !errors.Is(err, vmem.ErrClosed) {
				t.Fatalf("Read after Close: %v", err)
			}
			if err := kdev(d).Free(blk); !errors.Is(err, vmem.ErrClosed) {
				t.Fatalf("Free after Close: %v", err)
			}
		})
	}
}

func TestAllocValidation(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		if _, err := kdev(d).Alloc(block.Mapped, 0, 0); !errors.Is(err, vmem.ErrRange) {
			t.Errorf("size 0: %v", err)
		}
		if _, err := kdev(d).Alloc(block.Mapped, 64, 96); err == nil {
			t.Error("alignment 96 accepted")
		}
		if _, err := kdev(d).Alloc(block.Mapped, 1<<62, 0); !errors.Is(err, vmem.ErrTooLarge) {
			t.Errorf("huge block: %v", err)
		}
		b, err := kdev(d).Alloc(block.Host, 100, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if uintptr(b.Ptr())%4096 != 0 || kdev(d).BlockOffset(b)%4096 != 0 {
			t.Errorf("alignment 4096 not honoured: %p offset %d", b.Ptr(), kdev(d).BlockOffset(b))
		}
		if err := kdev(d).Free(b); err != nil {
			t.Fatal(err)
		}
		if err := kdev(d).Free(b); !errors.Is(err, block.ErrInvalid) {
			t.Errorf("double free: %v", err)
		}
		if err := kdev(d).Free(block.Block{}); !errors.Is(err, block.ErrInvalid) {
			t.Errorf("zero block: %v", err)
		}
		p, err := kdev(d).Alloc(block.Private, 64, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p.Ptr() != nil || p.Bytes() != nil {
			t.Error("private block exposes a CPU pointer")
		}
		if err := kdev(d).Write(p, 1, make([]byte, 64)); !errors.Is(err, vmem.ErrRange) {
			t.Errorf("write past the end: %v", err)
		}
		kdev(d).Free(p)
	})
}

// TestAllocPatterns allocates and frees random sizes in random order,
// writing each block's identity into it and checking that no block ever
// sees another's bytes, that new memory reads as zero, and that everything
// is returned at the end.
func TestAllocPatterns(t *testing.T) {
	vmemtest.Each(t, vmem.Options{ChunkSize: 4 << 20}, func(t *testing.T, d *vmem.Device) {
		rng := rand.New(rand.NewPCG(1, 2))
		type live struct {
			b   block.Block
			tag byte
		}
		var blocks []live
		check := func(l live) {
			got := make([]byte, l.b.Size())
			if err := kdev(d).Read(got, l.b, 0); err != nil {
				t.Fatal(err)
			}
			if i := indexNot(got, l.tag); i >= 0 {
				t.Fatalf("block %v: byte %d is %d, want %d", l.b.Tier(), i, got[i], l.tag)
			}
		}
		ops := 600
		if testing.Short() {
			ops = 150
		}
		for i := 0; i < ops; i++ {
			if len(blocks) > 0 && rng.IntN(3) == 0 {
				j := rng.IntN(len(blocks))
				check(blocks[j])
				if err := kdev(d).Free(blocks[j].b); err != nil {
					t.Fatal(err)
				}
				blocks[j] = blocks[len(blocks)-1]
				blocks = blocks[:len(blocks)-1]
				continue
			}
			tier := tiers[rng.IntN(len(tiers))]
			size := uint64(1 + rng.IntN(1<<uint(rng.IntN(22))))
			b, err := kdev(d).Alloc(block.Tier(tier), size, 0)
			if err != nil {
				t.Fatal(err)
			}
			if b.Size() != size || vmem.Tier(b.Tier()) != tier || kdev(d).BlockOffset(b)%64 != 0 {
				t.Fatalf("block %+v for %d bytes in %s", b, size, tier)
			}
			l := live{b, 0}
			check(l) // fresh memory reads as zero
			l.tag = byte(1 + rng.IntN(255))
			if err := kdev(d).Fill(b, 0, size, l.tag); err != nil {
				t.Fatal(err)
			}
			blocks = append(blocks, l)
		}
		for _, l := range blocks {
			check(l)
			if err := kdev(d).Free(l.b); err != nil {
				t.Fatal(err)
			}
		}
		kdev(d).Trim()
		for _, tier := range tiers {
			if st := d.Info().Tiers[tier]; st.Chunks != 0 || st.Reserved != 0 {
				t.Errorf("%s: chunks not returned: %+v", tier, st)
			}
		}
	})
}

func TestExhaustion(t *testing.T) {
	const limit = 32 << 20
	o := vmem.Options{ChunkSize: 8 << 20, Limits: [3]uint64{limit, limit, limit}}
	vmemtest.Each(t, o, func(t *testing.T, d *vmem.Device) {
		for _, tier := range tiers {
			var bs []block.Block
			for {
				b, err := kdev(d).Alloc(block.Tier(tier), 1<<20, 0)
				if errors.Is(err, vmem.ErrOutOfMemory) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				bs = append(bs, b)
				if len(bs) > 64 {
					t.Fatalf("%s: limit not enforced", tier)
				}
			}
			if len(bs) != limit>>20 {
				t.Errorf("%s: %d blocks of 1 MiB under a %d MiB limit", tier, len(bs), limit>>20)
			}
			st := d.Info().Tiers[tier]
			if st.Reserved > limit || st.Blocks != len(bs) {
				t.Errorf("%s after OOM: %+v", tier, st)
			}
			// The device still works after running out.
			if err := kdev(d).Free(bs[0]); err != nil {
				t.Fatal(err)
			}
			b, err := kdev(d).Alloc(block.Tier(tier), 1<<20, 0)
			if err != nil {
				t.Fatalf("%s: alloc after free: %v", tier, err)
			}
			bs[0] = b
			for _, b := range bs {
				if err := kdev(d).Free(b); err != nil {
					t.Fatal(err)
				}
			}
			kdev(d).Trim()
			if st := d.Info().Tiers[tier]; st.Reserved != 0 || st.InUse != 0 {
				t.Errorf("%s: leaked %+v", tier, st)
			}
		}
	})
}

func TestReadWriteCopy(t *testing.T) {
	sizes := []int{1, 3, 63, 64, 65, 4095, 4097, 65536, 65537, 1<<20 + 5, 17<<20 + 3, 40 << 20}
	if !testing.Short() {
		sizes = append(sizes, 256<<20)
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, n := range sizes {
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			for _, ta := range tiers {
				for _, tb := range tiers {
					if n >= 40<<20 && ta != tb && !(ta == vmem.Private || tb == vmem.Private) {
						continue // keep large cases to the DMA-heavy pairs
					}
					offA, offB := uint64(rng.IntN(200)), uint64(rng.IntN(200))
					a, err := kdev(d).Alloc(block.Tier(ta), uint64(n)+offA, 0)
					if err != nil {
						t.Fatal(err)
					}
					b, err := kdev(d).Alloc(block.Tier(tb), uint64(n)+offB, 0)
					if err != nil {
						t.Fatal(err)
					}
					if err := kdev(d).Write(a, offA, src); err != nil {
						t.Fatalf("write %d to %s: %v", n, ta, err)
					}
					if err := kdev(d).Copy(b, offB, a, offA, uint64(n)); err != nil {
						t.Fatalf("copy %d %s->%s: %v", n, ta, tb, err)
					}
					got := make([]byte, n)
					if err := kdev(d).Read(got, b, offB); err != nil {
						t.Fatalf("read %d from %s: %v", n, tb, err)
					}
					if !bytes.Equal(got, src) {
						t.Fatalf("%d bytes %s@%d -> %s@%d: mismatch at %d", n, ta, offA, tb, offB, firstDiff(got, src))
					}
					// Bytes around the written range stay zero.
					edge := make([]byte, offB)
					if err := kdev(d).Read(edge, b, 0); err != nil {
						t.Fatal(err)
					}
					if indexNot(edge, 0) >= 0 {
						t.Fatalf("%s: bytes before offset %d changed", tb, offB)
					}
					kdev(d).Free(a)
					kdev(d).Free(b)
				}
			}
		}
	})
}

// TestPinnedPaths moves data between a private block and host-tier memory
// held by the caller, the direct DMA path without staging.
func TestPinnedPaths(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		const n = 20<<20 + 12
		h, err := kdev(d).Alloc(block.Host, n, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer kdev(d).Free(h)
		p, err := kdev(d).Alloc(block.Private, n, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer kdev(d).Free(p)
		hb := h.Bytes()
		for i := range hb {
			hb[i] = byte(i * 31)
		}
		if err := kdev(d).Write(p, 0, hb[4:]); err != nil {
			t.Fatal(err)
		}
		back := make([]byte, n-4)
		if err := kdev(d).Read(back, p, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, hb[4:]) {
			t.Fatal("private round trip through host-tier source differs")
		}
		clear(hb)
		if err := kdev(d).Read(hb[8:], p, 4); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(hb[8:], back[4:]) {
			t.Fatal("read into host-tier memory differs")
		}
	})
}

func TestConcurrent(t *testing.T) {
	vmemtest.Each(t, vmem.Options{ChunkSize: 2 << 20}, func(t *testing.T, d *vmem.Device) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 9))
				for i := 0; i < 60; i++ {
					tier := tiers[rng.IntN(3)]
					n := 1 + rng.IntN(100000)
					b, err := kdev(d).Alloc(block.Tier(tier), uint64(n), 0)
					if err != nil {
						errs <- err
						return
					}
					buf := make([]byte, n)
					for j := range buf {
						buf[j] = byte(g + j)
					}
					if err := kdev(d).Write(b, 0, buf); err != nil {
						errs <- err
						return
					}
					got := make([]byte, n)
					if err := kdev(d).Read(got, b, 0); err != nil {
						errs <- err
						return
					}
					if !bytes.Equal(got, buf) {
						errs <- errors.New("concurrent round trip differs")
						return
					}
					if err := kdev(d).Free(b); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
}

func TestInjectedFaults(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		kdev(d).InjectFaults(kern.Faults{FailAlloc: 2})
		a, err := kdev(d).Alloc(block.Mapped, 64, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kdev(d).Alloc(block.Mapped, 64, 0); !errors.Is(err, vmem.ErrOutOfMemory) {
			t.Fatalf("injected OOM: %v", err)
		}
		if st := d.Info().Tiers[vmem.Mapped]; st.Blocks != 1 {
			t.Fatalf("failed Alloc changed the tier: %+v", st)
		}
		b, err := kdev(d).Alloc(block.Mapped, 64, 0)
		if err != nil {
			t.Fatalf("alloc after injected OOM: %v", err)
		}
		kdev(d).InjectFaults(kern.Faults{FailSubmit: 1})
		if err := kdev(d).Write(b, 0, []byte{1, 2, 3, 4}); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("injected loss: %v", err)
		}
		if _, err := kdev(d).Alloc(block.Host, 64, 0); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("device loss is not sticky: %v", err)
		}
		// Blocks can still be freed after loss.
		if err := kdev(d).Free(a); err != nil {
			t.Fatal(err)
		}
		if err := kdev(d).Free(b); err != nil {
			t.Fatal(err)
		}
	})
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func indexNot(b []byte, v byte) int {
	for i, x := range b {
		if x != v {
			return i
		}
	}
	return -1
}
