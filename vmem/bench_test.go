package vmem_test

import (
	"errors"
	"fmt"
	"github.com/govram/govram/internal/human"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// benchDevices opens each backend once per benchmark.
func benchEach(b *testing.B, f func(b *testing.B, d *vmem.Device)) {
	for _, be := range vmemtest.Backends() {
		b.Run(string(be), func(b *testing.B) {
			f(b, vmemtest.Open(b, be, vmem.Options{}))
		})
	}
}

func BenchmarkAllocFree(b *testing.B) {
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		for _, tier := range tiers {
			b.Run(tier.String(), func(b *testing.B) {
				// A working set of live blocks so the allocator is not trivially empty.
				rng := rand.New(rand.NewPCG(1, 1))
				live := make([]block.Block, 1024)
				for i := range live {
					blk, err := kdev(d).Alloc(block.Tier(tier), uint64(64+rng.IntN(16<<10)), 0)
					if err != nil {
						b.Fatal(err)
					}
					live[i] = blk
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					j := i & 1023
					kdev(d).Free(live[j])
					blk, err := kdev(d).Alloc(block.Tier(tier), uint64(64+rng.IntN(16<<10)), 0)
					if err != nil {
						b.Fatal(err)
					}
					live[j] = blk
				}
				b.StopTimer()
				for _, blk := range live {
					kdev(d).Free(blk)
				}
			})
		}
	})
}

var benchSizes = []uint64{64, 4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30}

func sizeName(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// BenchmarkTransfer measures Write and Read by tier and size, with the Go
// heap as the other side ("heap") and with pinned host-tier memory as the
// other side ("pinned", the direct DMA path).
func BenchmarkTransfer(b *testing.B) {
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		for _, tier := range []vmem.Tier{vmem.Mapped, vmem.Private} {
			for _, n := range benchSizes {
				if n > 256<<20 && d.Info().Tiers[tier].Capacity < 8<<30 {
					continue
				}
				blk, err := kdev(d).Alloc(block.Tier(tier), n, 0)
				if err != nil {
					b.Logf("skip %s %s: %v", tier, sizeName(n), err)
					continue
				}
				heap := make([]byte, n)
				for i := range heap {
					heap[i] = byte(i)
				}
				pin, err := kdev(d).Alloc(block.Host, n, 0)
				if err != nil {
					b.Fatal(err)
				}
				for _, side := range []string{"heap", "pinned"} {
					buf := heap
					if side == "pinned" {
						buf = pin.Bytes()
					}
					b.Run(fmt.Sprintf("Write/%s/%s/%s", tier, side, sizeName(n)), func(b *testing.B) {
						b.SetBytes(int64(n))
						for i := 0; i < b.N; i++ {
							if err := kdev(d).Write(blk, 0, buf); err != nil {
								b.Fatal(err)
							}
						}
					})
					b.Run(fmt.Sprintf("Read/%s/%s/%s", tier, side, sizeName(n)), func(b *testing.B) {
						b.SetBytes(int64(n))
						for i := 0; i < b.N; i++ {
							if err := kdev(d).Read(buf, blk, 0); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
				kdev(d).Free(pin)
				kdev(d).Free(blk)
			}
		}
	})
}

// BenchmarkCopyDevice measures Copy between two private blocks (VRAM to VRAM on the GPU).
func BenchmarkCopyDevice(b *testing.B) {
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		const n = 256 << 20
		x, err := kdev(d).Alloc(block.Private, n, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer kdev(d).Free(x)
		y, err := kdev(d).Alloc(block.Private, n, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer kdev(d).Free(y)
		b.SetBytes(n)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := kdev(d).Copy(y, 0, x, 0, n); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestCapacity allocates until each device tier is full and reports the
// total. It runs only with VMEM_CAPACITY=1 (it takes all of VRAM).
// VMEM_CAPACITY_MIN (GiB) sets the total the test must reach.
func TestCapacity(t *testing.T) {
	if os.Getenv("VMEM_CAPACITY") != "1" {
		t.Skip("set VMEM_CAPACITY=1 to fill the device")
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		if d.Info().Backend == vmem.BackendHost {
			t.Skip("the host backend's capacity is the machine's RAM")
		}
		var total uint64
		var held []block.Block
		const piece = 1 << 30
		for _, tier := range []vmem.Tier{vmem.Mapped, vmem.Private} {
			var got uint64
			for size := uint64(piece); size >= 64<<20; {
				blk, err := kdev(d).Alloc(block.Tier(tier), size, 0)
				if errors.Is(err, vmem.ErrOutOfMemory) {
					size /= 2
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, blk)
				got += size
			}
			t.Logf("%s tier: %s allocated", tier, human.Bytes(got))
			total += got
		}
		t.Logf("total allocated: %s\n%s", human.Bytes(total), d.Info())
		if s := os.Getenv("VMEM_CAPACITY_MIN"); s != "" {
			var gib uint64
			fmt.Sscan(s, &gib)
			if total < gib<<30 {
				t.Errorf("allocated %s, want at least %d GiB", human.Bytes(total), gib)
			}
		}
		// The memory is really there: write and read a byte at the end of the last block.
		last := held[len(held)-1]
		if err := kdev(d).Write(last, last.Size()-4, []byte{1, 2, 3, 4}); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 4)
		if err := kdev(d).Read(got, last, last.Size()-4); err != nil || got[3] != 4 {
			t.Fatalf("read back %v %v", got, err)
		}
		for _, blk := range held {
			kdev(d).Free(blk)
		}
	})
}
