package tlsf

// Randomised tests of the allocator against the model in tlsf_test.go:
// differential runs, fragmentation, fuzzing and the alloc/free benchmark.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/govram/govram/internal/buildconst"
)

// randomSize draws from a mix of small, medium and large requests, with
// sizes off the granule so rounding is exercised.
func randomSize(r *rand.Rand, regionSize uint64) uint64 {
	switch p := r.IntN(100); {
	case p < 50:
		return 1 + r.Uint64N(4096)
	case p < 80:
		return 1 + r.Uint64N(256<<10)
	case p < 95:
		return 1 + r.Uint64N(4<<20)
	default:
		return 1 + r.Uint64N(regionSize)
	}
}

func randomAlign(r *rand.Rand) uint64 {
	switch p := r.IntN(100); {
	case p < 60:
		return 0
	case p < 65:
		return 1 + r.Uint64N(200) // non-powers of two, below and above 64
	default:
		return 1 << (6 + r.IntN(15))
	}
}

// TestDifferential runs long random sequences on the allocator and the
// model, adding and removing regions along the way.
func TestDifferential(t *testing.T) {
	ops := 20000
	if testing.Short() || buildconst.Invariants || buildconst.Race {
		ops = 4000
	}
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 99))
			h := newHarness(t)
			h.checkEv = 16
			regionSize := func() uint64 { return (1 + r.Uint64N(512)) << 16 }
			for range 1 + r.IntN(4) {
				h.addRegion(regionSize())
			}
			target := 50 + r.IntN(500)
			for range ops {
				switch p := r.IntN(1000); {
				case p < 3:
					h.addRegion(regionSize())
				case p < 6:
					ids := make([]uint32, 0, len(h.regions)+1)
					for id := range h.regions {
						ids = append(ids, id)
					}
					slices.Sort(ids)
					ids = append(ids, uint32(len(h.a.regions)))
					h.removeRegion(ids[r.IntN(len(ids))])
				case p < 20 && len(h.dead) > 0:
					h.badFree(h.dead[r.IntN(len(h.dead))])
				case p < 25:
					h.badFree(Handle(r.Uint64()))
				case len(h.handles) > 0 && (len(h.handles) > target || p < 450):
					if reg, empty := h.free(r.IntN(len(h.handles))); empty && r.IntN(4) == 0 && len(h.regions) > 1 {
						h.removeRegion(reg)
					}
				default:
					h.alloc(randomSize(r, 32<<20), randomAlign(r))
				}
			}
			t.Logf("%d ops, %d failed allocations, final %+v", ops, h.fails, h.a.Stats())
			for len(h.handles) > 0 {
				h.free(r.IntN(len(h.handles)))
			}
			if s := h.a.Stats(); s.FreeBlocks != s.Regions {
				t.Fatalf("after freeing all, %d free blocks in %d regions", s.FreeBlocks, s.Regions)
			}
		})
	}
}

// TestFragmentation churns random sizes for a long time, then frees all:
// accounting must hold at every step and each region must end as one block.
func TestFragmentation(t *testing.T) {
	ops := 400000
	if testing.Short() || buildconst.Invariants || buildconst.Race {
		ops = 20000
	}
	a := New()
	const regionSize = 64 << 20
	for range 4 {
		a.AddRegion(regionSize)
	}
	r := rand.New(rand.NewPCG(11, 12))
	var handles []Handle
	var live uint64
	fails, allocs := 0, 0
	var fragFails int // failures although Free >= the request
	for i := range ops {
		// Aim at 85% occupancy, where fragmentation shows.
		if len(handles) > 0 && (live > 85*4*regionSize/100 || r.IntN(2) == 0) {
			j := r.IntN(len(handles))
			size, _, _, ok := a.Free(handles[j])
			if !ok {
				t.Fatal("Free of a live handle failed")
			}
			live -= size
			handles[j] = handles[len(handles)-1]
			handles = handles[:len(handles)-1]
		} else {
			allocs++
			size := uint64(64) << r.IntN(15) // 64 B .. 1 MiB, log-uniform
			size += r.Uint64N(size)
			if h, _, _, ok := a.Alloc(size, randomAlign(r)); ok {
				handles = append(handles, h)
				s, _ := a.Size(h)
				live += s
			} else {
				fails++
				if a.Stats().Free >= size {
					fragFails++
				}
			}
		}
		s := a.Stats()
		if s.Used+s.Free != s.Capacity || s.Used != live {
			t.Fatalf("op %d: %+v, live %d", i, s, live)
		}
	}
	s := a.Stats()
	t.Logf("%d ops: %d of %d allocations failed, %d of them with enough free bytes; final %+v",
		ops, fails, allocs, fragFails, s)
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	empties := 0
	for _, h := range handles {
		if _, _, empty, ok := a.Free(h); !ok {
			t.Fatal("Free of a live handle failed")
		} else if empty {
			empties++
		}
	}
	s = a.Stats()
	if s.FreeBlocks != 4 || s.Used != 0 || s.LargestFree != regionSize || empties > 4 {
		t.Fatalf("after freeing all: %d empty reports, %+v", empties, s)
	}
	for id := range uint32(4) {
		if !a.RemoveRegion(id) {
			t.Fatalf("region %d is not one free block", id)
		}
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}

// ---- fuzzing ---------------------------------------------------------------

// FuzzAllocator decodes bytes into a sequence of operations and runs it on
// the allocator and the model; every step is checked in full.
//
// An operation is one byte, low three bits the kind and high five an
// argument, plus up to two bytes of parameters. The encoding is dense and
// sequences are capped so that each input runs fast: the fuzzing engine's
// minimizer is quadratic in input length.
func FuzzAllocator(f *testing.F) {
	f.Add([]byte{0x08, 8, 2 | 3<<3, 10, 0, 2, 0, 0, 5, 0x0d})
	f.Add([]byte{0, 2, 0x80, 4, 9, 0x40, 3, 0xff, 0xb0, 5, 6 | 3<<3, 7, 7 | 1<<3, 3, 1})
	f.Add([]byte{0, 0, 0, 0, 2, 0, 0, 2, 0, 0, 3, 0, 0, 5, 2, 0, 0, 6, 1, 1 | 1<<3, 0x18, 12, 2, 255, 255, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newHarness(t)
		next := func() uint64 {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return uint64(b)
		}
		for n := 0; len(data) > 0 && n < 128; n++ {
			b := next()
			arg := b >> 3
			switch b & 7 {
			case 0: // 64 B .. 1 GiB
				size := (arg + 1) << (next() % 20) * Granule
				if len(h.regions) < 8 {
					h.addRegion(size)
				}
			case 1:
				h.removeRegion(uint32(arg % 10))
			case 2, 3, 4: // 1 B .. 1 GiB, align 1 .. 4 MiB or odd
				size := (arg<<8 | next()) + 1
				c := next()
				size <<= c & 15
				align := uint64(1) << (c >> 4 * 3 / 2)
				if c>>4 == 15 {
					align = 100 + arg
				}
				h.alloc(size, align)
			case 5, 6:
				if len(h.handles) > 0 {
					h.free(int(arg) % len(h.handles))
				}
			case 7:
				if arg&1 == 0 && len(h.dead) > 0 {
					h.badFree(h.dead[int(arg>>1)%len(h.dead)])
				} else {
					// Near-valid forgeries: real slots, small generations.
					i := uint32(next()) % uint32(len(h.a.nodes)+2)
					h.badFree(makeHandle(i, uint32(arg>>1)))
				}
			}
		}
		for len(h.handles) > 0 {
			h.free(0)
		}
		if s := h.a.Stats(); s.FreeBlocks != s.Regions {
			t.Fatalf("after freeing all, %d free blocks in %d regions", s.FreeBlocks, s.Regions)
		}
	})
}

// BenchmarkAllocFree measures one Free plus one Alloc of random size
// (64 B..128 KiB, log-uniform) with many live blocks, in a region large
// enough never to fail.
func BenchmarkAllocFree(b *testing.B) {
	for _, bc := range []struct {
		name  string
		live  int
		align uint64
	}{
		{"live=1e3", 1e3, 0},
		{"live=1e5", 1e5, 0},
		{"live=1e6", 1e6, 0},
		{"live=1e5/align=4K", 1e5, 4096},
		{"live=1e5/align=mixed", 1e5, 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			const n = 1 << 16
			sizes := make([]uint64, n)
			aligns := make([]uint64, n)
			slots := make([]int32, n)
			for i := range sizes {
				s := uint64(64) << r.IntN(12)
				sizes[i] = s + r.Uint64N(s)
				aligns[i] = bc.align
				if bc.align == 1 {
					aligns[i] = 1 << (6 + r.IntN(11))
				}
				slots[i] = int32(r.IntN(bc.live))
			}
			a := New()
			a.AddRegion(1 << 40)
			handles := make([]Handle, bc.live)
			for i := range handles {
				h, _, _, ok := a.Alloc(sizes[i%n], aligns[i%n])
				if !ok {
					b.Fatal("Alloc failed")
				}
				handles[i] = h
			}
			for i := 0; b.Loop(); i++ {
				j := slots[i%n]
				a.Free(handles[j])
				h, _, _, ok := a.Alloc(sizes[i%n], aligns[i%n])
				if !ok {
					b.Fatal("Alloc failed")
				}
				handles[j] = h
			}
		})
	}
}
