package access

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/hostmem"
)

// fakeMover is a block reached only by copies, counting them: the DMA of
// a device without one.
type fakeMover struct {
	mem          []byte
	reads, write int
	fail         error
}

func (m *fakeMover) ReadAt(dst []byte, off uint64) error {
	m.reads++
	if m.fail != nil {
		return m.fail
	}
	copy(dst, m.mem[off:])
	return nil
}

func (m *fakeMover) WriteAt(off uint64, src []byte) error {
	m.write++
	if m.fail != nil {
		return m.fail
	}
	copy(m.mem[off:], src)
	return nil
}

func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		mapped, vram bool
		want         Kind
	}{
		{false, false, DMA}, {false, true, DMA}, {true, true, WC}, {true, false, Direct},
	} {
		if got := KindOf(c.mapped, c.vram); got != c.want {
			t.Errorf("KindOf(mapped=%v, vram=%v) = %v, want %v", c.mapped, c.vram, got, c.want)
		}
	}
	if v := New(nil, WC, nil); v.Kind != DMA || v.CPU() {
		t.Errorf("a view without an address is %v (CPU %v), want dma", v.Kind, v.CPU())
	}
	v := New(unsafe.Pointer(&[64]byte{}), WC, nil)
	if v.Plain().Kind != Direct || v.Kind != WC {
		t.Errorf("Plain of a write-combined view: %v (the view itself now %v)", v.Plain().Kind, v.Kind)
	}
	if d := New(nil, DMA, nil).Plain(); d.Kind != DMA {
		t.Errorf("Plain of a DMA view is %v", d.Kind)
	}
}

// TestViewMoves checks Read, Write and Compare of every kind against a Go
// slice holding the same bytes, at ragged offsets and lengths (the write-
// combined path runs its streaming loads on ordinary memory here), and
// that long spans of mapped memory go by the mover.
func TestViewMoves(t *testing.T) {
	const size = 3 * StreamMax
	base, err := hostmem.Map(size)
	if err != nil {
		t.Fatal(err)
	}
	defer hostmem.Unmap(base, size)
	mem := hostmem.Bytes(base, size)
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range []Kind{Direct, WC, DMA} {
		t.Run(k.String(), func(t *testing.T) {
			for i := range mem {
				mem[i] = byte(r.Uint32())
			}
			model := bytes.Clone(mem)
			mv := &fakeMover{mem: mem}
			p := base
			if k == DMA {
				p = nil
			}
			v := New(p, k, mv)
			for it := range 400 {
				n := 1 + r.IntN(300)
				if it%50 == 0 {
					n = StreamMax + 1 + r.IntN(100) // past the streaming bound
				}
				off := r.IntN(size - n)
				switch it % 3 {
				case 0:
					got := make([]byte, n)
					if err := v.Read(got, uint64(off)); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, model[off:off+n]) {
						t.Fatalf("Read(%d bytes at %d) differs", n, off)
					}
				case 1:
					src := make([]byte, n)
					for i := range src {
						src[i] = byte(r.Uint32())
					}
					if err := v.Write(uint64(off), src); err != nil {
						t.Fatal(err)
					}
					copy(model[off:], src)
					if !bytes.Equal(mem, model) {
						t.Fatalf("Write(%d bytes at %d) changed other bytes or missed some", n, off)
					}
				case 2:
					b := bytes.Clone(model[off : off+n])
					want := 0
					if r.IntN(2) == 0 {
						j := r.IntN(n)
						b[j] ^= byte(1 + r.IntN(255))
						want = bytes.Compare(model[off:off+n], b)
					}
					c, err := v.Compare(uint64(off), b)
					if err != nil {
						t.Fatal(err)
					}
					if c != want {
						t.Fatalf("Compare(%d bytes at %d) = %d, want %d", n, off, c, want)
					}
				}
			}
			switch {
			case k == Direct && mv.reads+mv.write != 0:
				t.Errorf("a direct view used the mover %d times", mv.reads+mv.write)
			case k == WC && (mv.reads == 0 || mv.write == 0):
				t.Errorf("long spans of a write-combined view did not go by the mover (%d reads, %d writes)", mv.reads, mv.write)
			}
		})
	}
}

func TestViewMoverError(t *testing.T) {
	boom := errors.New("device lost")
	v := New(nil, DMA, &fakeMover{mem: make([]byte, 128), fail: boom})
	if err := v.Read(make([]byte, 8), 0); !errors.Is(err, boom) {
		t.Errorf("Read: %v", err)
	}
	if err := v.Write(0, make([]byte, 8)); !errors.Is(err, boom) {
		t.Errorf("Write: %v", err)
	}
	if _, err := v.Compare(0, make([]byte, 8)); !errors.Is(err, boom) {
		t.Errorf("Compare: %v", err)
	}
	if err := v.Read(nil, 0); err != nil {
		t.Errorf("an empty Read touched the block: %v", err)
	}
}
