package strarena

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

func TestClasses(t *testing.T) {
	for u := uint64(1); u <= 1<<24; u = u*9/8 + 1 {
		c := classOf(u)
		if classUnits[c] < u || (c > 0 && classUnits[c-1] >= u) {
			t.Fatalf("classOf(%d) = %d of %d units; previous %d", u, c, classUnits[c], classUnits[max(c-1, 0)])
		}
		if f := floorClass(u); classUnits[f] > u || (f+1 < numClasses && classUnits[f+1] <= u) {
			t.Fatalf("floorClass(%d) = %d of %d units", u, f, classUnits[f])
		}
	}
	if classUnits[numClasses-1] != 1<<24 {
		t.Fatalf("largest class %d units, want %d", classUnits[numClasses-1], 1<<24)
	}
	for c := 1; c < numClasses; c++ {
		if classUnits[c] <= classUnits[c-1] {
			t.Fatalf("classes not increasing at %d", c)
		}
		if c >= smallUnits && float64(classUnits[c]) > 1.126*float64(classUnits[c-1]+1) {
			t.Fatalf("class %d wastes more than 12.5%%", c)
		}
	}
}

func TestHandle(t *testing.T) {
	h := makeHandle(3<<30+48, 1234)
	if h.Len() != 1234 || h.Offset() != 3<<30+48 {
		t.Fatalf("handle round trip: %d, %#x", h.Len(), h.Offset())
	}
}

// randBytes makes a string of n bytes that shares a prefix with others.
func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(3))
	}
	return b
}

// run drives a random sequence of Put, Free, Read, Equal and Compare
// against a model and checks the arena after each step.
func run(t *testing.T, d *vmem.Device, o Options, seed uint64, steps, maxLen int) {
	a, err := New(d, o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r := rand.New(rand.NewPCG(seed, 1))
	type ent struct {
		h Handle
		b []byte
	}
	var live []ent
	for step := 0; step < steps; step++ {
		switch op := r.IntN(10); {
		case op < 5 || len(live) == 0:
			n := r.IntN(maxLen + 1)
			if r.IntN(4) == 0 {
				n = r.IntN(40)
			}
			b := randBytes(r, n)
			h, err := a.Put(b)
			if err != nil {
				t.Fatalf("step %d: Put(%d bytes): %v", step, n, err)
			}
			if h.Len() != n || (n == 0) != (h == 0) {
				t.Fatalf("step %d: handle %#x for %d bytes", step, uint64(h), n)
			}
			live = append(live, ent{h, b})
		case op < 7:
			i := r.IntN(len(live))
			a.Free(live[i].h)
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
		default:
			e := live[r.IntN(len(live))]
			got, err := a.String(e.h)
			if err != nil || got != string(e.b) {
				t.Fatalf("step %d: String = %q, %v; want %q", step, got, err, e.b)
			}
			if eq, err := a.Equal(e.h, e.b); !eq || err != nil {
				t.Fatalf("step %d: Equal(own bytes) = %v, %v", step, eq, err)
			}
			if len(e.b) > 0 {
				other := bytes.Clone(e.b)
				other[r.IntN(len(other))] ^= 0x40
				if eq, _ := a.Equal(e.h, other); eq {
					t.Fatalf("step %d: Equal with a changed byte", step)
				}
				c, err := a.Compare(e.h, other)
				if want := bytes.Compare(e.b, other); c != want || err != nil {
					t.Fatalf("step %d: Compare = %d, %v; want %d", step, c, err, want)
				}
				if c2, _ := a.CompareString(e.h, string(other)); c2 != c {
					t.Fatalf("step %d: CompareString = %d, Compare %d", step, c2, c)
				}
				off := r.IntN(len(e.b))
				part := make([]byte, r.IntN(len(e.b)-off+1))
				if err := a.Read(part, e.h, off); err != nil || !bytes.Equal(part, e.b[off:off+len(part)]) {
					t.Fatalf("step %d: Read(%d at %d): %v", step, len(part), off, err)
				}
			}
			c, _ := a.Compare(e.h, e.b[:len(e.b)/2])
			if want := bytes.Compare(e.b, e.b[:len(e.b)/2]); c != want {
				t.Fatalf("step %d: Compare with a prefix = %d, want %d", step, c, want)
			}
		}
		if step%50 == 0 {
			if err := a.Check(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
	st := a.Stats()
	nonEmpty := 0
	for _, e := range live {
		if len(e.b) > 0 {
			nonEmpty++
		}
	}
	if st.Strings != nonEmpty {
		t.Fatalf("Stats.Strings = %d, want %d", st.Strings, nonEmpty)
	}
	for _, e := range live {
		if eq, err := a.Equal(e.h, e.b); !eq || err != nil {
			t.Fatalf("final: Equal = %v, %v", eq, err)
		}
	}
	a.Reset()
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	if s := a.Stats(); s.Strings != 0 || s.Live != 0 || s.Segments != st.Segments {
		t.Fatalf("after Reset: %+v", s)
	}
	h, err := a.Put([]byte("after reset"))
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := a.String(h); s != "after reset" {
		t.Fatalf("after Reset: %q", s)
	}
}

func TestArena(t *testing.T) {
	steps := 3000
	if testing.Short() {
		steps = 800
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, tier := range []vmem.Tier{vmem.Mapped, vmem.Private, vmem.Host} {
			t.Run(tier.String(), func(t *testing.T) {
				run(t, d, Options{Tier: tier, FirstSegment: 1 << 10}, uint64(tier)+7, steps, 3000)
			})
		}
	})
}

func TestArenaSpill(t *testing.T) {
	// A mapped tier of 64 KiB forces the later segments into the private
	// tier: one arena then spans both.
	var lim [3]uint64
	lim[vmem.Mapped] = 64 << 10
	vmemtest.Each(t, vmem.Options{Limits: lim, ChunkSize: 64 << 10}, func(t *testing.T, d *vmem.Device) {
		run(t, d, Options{FirstSegment: 16 << 10}, 99, 600, 5000)
	})
}

func TestArenaOOM(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		// The private tier: a mapped arena would spill there instead of
		// failing (one injected fault fails one Alloc).
		a, err := New(d, Options{Tier: vmem.Private, FirstSegment: 256})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		h1, err := a.PutString(strings.Repeat("x", 200))
		if err != nil {
			t.Fatal(err)
		}
		before := a.Stats()
		kdev(d).InjectFaults(kern.Faults{FailAlloc: 1})
		if _, err := a.PutString(strings.Repeat("y", 300)); !errors.Is(err, vmem.ErrOutOfMemory) {
			t.Fatalf("Put under an allocation fault: %v", err)
		}
		if after := a.Stats(); after != before {
			t.Fatalf("a failed Put changed the arena: %+v -> %+v", before, after)
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
		if s, _ := a.String(h1); s != strings.Repeat("x", 200) {
			t.Fatal("earlier string damaged")
		}
		if _, err := a.Put(make([]byte, MaxLen+1)[:MaxLen+1]); !errors.Is(err, vmem.ErrTooLarge) {
			t.Fatalf("Put of MaxLen+1 bytes: %v", err)
		}
	})
}

func TestArenaReuse(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		a, err := New(d, Options{FirstSegment: 4 << 10})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		// Freed space is reused: a steady churn does not grow the arena.
		var hs []Handle
		for i := 0; i < 100; i++ {
			h, err := a.Put(bytes.Repeat([]byte{byte(i)}, 100+i))
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, h)
		}
		reserved := a.Stats().Reserved
		for round := 0; round < 20; round++ {
			for i, h := range hs {
				a.Free(h)
				nh, err := a.Put(bytes.Repeat([]byte{byte(i + round)}, 100+(i+round)%100))
				if err != nil {
					t.Fatal(err)
				}
				hs[i] = nh
			}
		}
		if got := a.Stats().Reserved; got > 2*reserved {
			t.Fatalf("churn grew the arena from %d to %d bytes", reserved, got)
		}
		// A large freed block serves small strings (split), not new segments.
		a.Reset()
		big, _ := a.Put(make([]byte, 3000))
		a.Free(big)
		before := a.Stats()
		for i := 0; i < 10; i++ {
			if _, err := a.Put(make([]byte, 100)); err != nil {
				t.Fatal(err)
			}
		}
		if after := a.Stats(); after.Free >= before.Free || after.Segments != before.Segments {
			t.Fatalf("small strings did not reuse a freed large block: %+v -> %+v", before, after)
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestArenaNoAllocs(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		a, err := New(d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		b := bytes.Repeat([]byte("abcdefgh"), 300)
		h, err := a.Put(b)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() {
			if eq, _ := a.Equal(h, b); !eq {
				t.Fatal("not equal")
			}
			if c, _ := a.Compare(h, b[:100]); c != 1 {
				t.Fatal("bad compare")
			}
		}); n != 0 {
			t.Fatalf("Equal and Compare allocate %v times", n)
		}
	})
}

func TestArenaClosed(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		a, err := New(d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		h, _ := a.PutString("hello")
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if _, err := a.PutString("x"); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("Put after Close: %v", err)
		}
		if _, err := a.String(h); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("String after Close: %v", err)
		}
		a.Free(h) // no effect, no panic
	})
}

func FuzzArena(f *testing.F) {
	f.Add(uint64(1), uint16(300))
	f.Add(uint64(2), uint16(4096))
	d, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { d.Close() })
	f.Fuzz(func(t *testing.T, seed uint64, maxLen uint16) {
		run(t, d, Options{FirstSegment: 512}, seed, 200, int(maxLen))
		vmemtest.CheckNoLeaks(t, d)
	})
}

// TestArenaCloseWhileCollected closes arenas while the collector runs: an
// arena's cleanup must never run while Close is still working on the
// arena, nor free again after it (under -race CI reported the two releases
// racing before Close kept the arena alive).
func TestArenaCloseWhileCollected(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
					runtime.GC()
				}
			}
		}()
		for range 300 {
			a, err := New(d, Options{FirstSegment: 4 << 10})
			if err != nil {
				t.Fatal(err)
			}
			h, err := a.PutString("a string kept off the Go heap")
			if err != nil {
				t.Fatal(err)
			}
			if s, err := a.String(h); err != nil || s != "a string kept off the Go heap" {
				t.Fatalf("String = %q, %v", s, err)
			}
			// Many segments and freed strings: Close takes a while.
			var hs []Handle
			for k := range 64 {
				h, err := a.Put(make([]byte, 1000+k))
				if err != nil {
					t.Fatal(err)
				}
				hs = append(hs, h)
			}
			for _, h := range hs[:len(hs)/2] {
				a.Free(h)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
		}
		close(stop)
		<-done
		runtime.GC()
	})
}

// TestArenaManyFrees frees more strings of one class than a free list's
// first stack holds: the stack's growth must keep what it held (the
// counters and the lists agree, and the space is reused).
func TestArenaManyFrees(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		a, err := New(d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		var hs []Handle
		for range 3000 {
			h, err := a.PutString(strings.Repeat("s", 40))
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, h)
		}
		reserved := a.Stats().Reserved
		for _, h := range hs {
			a.Free(h)
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
		if st := a.Stats(); st.Free < 3000*48 || st.Strings != 0 {
			t.Fatalf("after freeing every string: %+v", st)
		}
		for range 3000 {
			if _, err := a.PutString(strings.Repeat("t", 40)); err != nil {
				t.Fatal(err)
			}
		}
		if st := a.Stats(); st.Reserved != reserved {
			t.Fatalf("space not reused: %+v, reserved before %d", st, reserved)
		}
	})
}
