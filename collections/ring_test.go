package collections

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// ringModel is the reference: a FIFO on a Go slice with the same policy.
type ringModel[T any] struct {
	items     []T
	capacity  int
	overwrite bool
}

func (m *ringModel[T]) push(v T) error {
	if len(m.items) == m.capacity {
		if !m.overwrite {
			return ErrFull
		}
		m.items = m.items[1:]
	}
	m.items = append(m.items, v)
	return nil
}

func (m *ringModel[T]) pushBatch(vs []T) (int, error) {
	if !m.overwrite {
		n := min(len(vs), m.capacity-len(m.items))
		m.items = append(m.items, vs[:n]...)
		if n < len(vs) {
			return n, ErrFull
		}
		return n, nil
	}
	for _, v := range vs {
		m.push(v)
	}
	return len(vs), nil
}

func (m *ringModel[T]) pop() (v T, ok bool) {
	if len(m.items) == 0 {
		return v, false
	}
	v = m.items[0]
	m.items = m.items[1:]
	return v, true
}

func (m *ringModel[T]) popBatch(dst []T) int {
	n := copy(dst, m.items)
	m.items = m.items[n:]
	return n
}

// ringTypeCase runs the differential test for one element type.
type ringTypeCase struct {
	name   string
	run    func(t *testing.T, cfg ringDiffConfig)
	maxCap int // larger capacities are skipped (big elements are slow to model)
}

// ringTypeCases covers element types of many sizes: below a word, dividing
// a line, straddling lines (12, 40, 104 bytes), exactly a line, several
// lines, more than the window, and zero.
func ringTypeCases() []ringTypeCase {
	type s12 [3]uint32
	type s16 struct {
		A uint64
		B uint32
	}
	type empty struct{}
	return []ringTypeCase{
		{"u8", func(t *testing.T, c ringDiffConfig) { ringDiff(t, c, func(i uint64) uint8 { return uint8(i*7 + 1) }) }, 0},
		{"u16", func(t *testing.T, c ringDiffConfig) {
			ringDiff(t, c, func(i uint64) uint16 { return uint16(i*31 + 3) })
		}, 0},
		{"u64", func(t *testing.T, c ringDiffConfig) {
			ringDiff(t, c, func(i uint64) uint64 { return i*0x9E3779B97F4A7C15 + 1 })
		}, 0},
		{"s12", func(t *testing.T, c ringDiffConfig) {
			ringDiff(t, c, func(i uint64) s12 { return s12{uint32(i), uint32(i >> 3), ^uint32(i)} })
		}, 0},
		{"s16pad", func(t *testing.T, c ringDiffConfig) {
			ringDiff(t, c, func(i uint64) s16 { return s16{i, uint32(i * 3)} })
		}, 0},
		{"a40", func(t *testing.T, c ringDiffConfig) { ringDiff(t, c, ringArrGen[[5]uint64]) }, 0},
		{"a64", func(t *testing.T, c ringDiffConfig) { ringDiff(t, c, ringArrGen[[8]uint64]) }, 0},
		{"a104", func(t *testing.T, c ringDiffConfig) { ringDiff(t, c, ringArrGen[[13]uint64]) }, 0},
		{"a320", func(t *testing.T, c ringDiffConfig) { ringDiff(t, c, ringArrGen[[40]uint64]) }, 17},
		{"a4800", func(t *testing.T, c ringDiffConfig) { ringDiff(t, c, ringArrGen[[600]uint64]) }, 3},
		{"empty", func(t *testing.T, c ringDiffConfig) { ringDiff(t, c, func(uint64) empty { return empty{} }) }, 0},
	}
}

// ringArrGen fills an array of uint64 from i.
func ringArrGen[A ~[5]uint64 | ~[8]uint64 | ~[13]uint64 | ~[40]uint64 | ~[600]uint64](i uint64) A {
	var a A
	for j := range len(a) {
		a[j] = i*1000 + uint64(j)
	}
	return a
}

type ringDiffConfig struct {
	dev      *vmem.Device
	capacity int
	policy   RingPolicy
	opts     []RingOption
	ops      int    // random operations (when src is nil)
	seed     uint64 // of the random operations
	// src, when set, supplies the operations instead: k in [0, 100) picks
	// the operation, arg sizes it; ok false ends the run.
	src func() (k, arg int, ok bool)
}

// ringDiff runs operations on a Ring and on the model side by side and
// compares every result.
func ringDiff[T comparable](t *testing.T, cfg ringDiffConfig, gen func(uint64) T) {
	t.Helper()
	r, err := NewRing[T](cfg.dev, cfg.capacity, append([]RingOption{WithPolicy(cfg.policy)}, cfg.opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := &ringModel[T]{capacity: cfg.capacity, overwrite: cfg.policy == OverwriteOldest}
	src := cfg.src
	if src == nil {
		rng := rand.New(rand.NewPCG(cfg.seed, uint64(cfg.capacity)))
		left := cfg.ops
		src = func() (int, int, bool) {
			left--
			return rng.IntN(100), rng.IntN(1 << 16), left >= 0
		}
	}
	var seq uint64
	next := func(n int) []T {
		vs := make([]T, n)
		for i := range vs {
			vs[i] = gen(seq)
			seq++
		}
		return vs
	}
	for op := 0; ; op++ {
		k, arg, ok := src()
		if !ok {
			break
		}
		var what string
		switch {
		case k < 30:
			what = "Push"
			v := next(1)[0]
			if got, want := r.Push(v), m.push(v); !errors.Is(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("op %d Push: %v, model %v", op, got, want)
			}
		case k < 42:
			what = "PushBatch"
			vs := next(arg % (3*cfg.capacity + 2))
			n, err := r.PushBatch(vs)
			mn, merr := m.pushBatch(vs)
			if n != mn || !errors.Is(err, merr) || (err == nil) != (merr == nil) {
				t.Fatalf("op %d PushBatch(%d): %d, %v; model %d, %v", op, len(vs), n, err, mn, merr)
			}
		case k < 70:
			what = "Pop"
			v, ok := r.Pop()
			mv, mok := m.pop()
			if ok != mok || v != mv {
				t.Fatalf("op %d Pop: %v, %v; model %v, %v", op, v, ok, mv, mok)
			}
		case k < 84:
			what = "PopBatch"
			dst := make([]T, arg%(2*cfg.capacity+2))
			mdst := make([]T, len(dst))
			n, err := r.PopBatch(dst)
			if err != nil {
				t.Fatalf("op %d PopBatch: %v", op, err)
			}
			if mn := m.popBatch(mdst); n != mn || !slices.Equal(dst[:n], mdst[:mn]) {
				t.Fatalf("op %d PopBatch(%d): %d elements, model %d", op, len(dst), n, mn)
			}
		case k < 90:
			what = "Peek"
			v, ok := r.Peek()
			var mv T
			mok := len(m.items) > 0
			if mok {
				mv = m.items[0]
			}
			if ok != mok || v != mv {
				t.Fatalf("op %d Peek: %v, %v; model %v, %v", op, v, ok, mv, mok)
			}
		case k < 96:
			what = "All"
			var got []T
			for i, v := range r.All() {
				if i != len(got) {
					t.Fatalf("op %d All: index %d at position %d", op, i, len(got))
				}
				got = append(got, v)
			}
			if err := r.Err(); err != nil {
				t.Fatalf("op %d All: %v", op, err)
			}
			if !slices.Equal(got, m.items) {
				t.Fatalf("op %d All: %d elements, model %d", op, len(got), len(m.items))
			}
		case k < 97:
			what = "Reset"
			r.Reset()
			m.items = nil
		default:
			what = "All-break"
			n := 0
			for range r.All() {
				n++
				if n == 2 {
					break
				}
			}
		}
		if r.Len() != len(m.items) || r.Cap() != cfg.capacity {
			t.Fatalf("op %d (%s): Len %d Cap %d, model %d %d", op, what, r.Len(), r.Cap(), len(m.items), cfg.capacity)
		}
		if ringInvariants {
			if err := r.check(); err != nil {
				t.Fatalf("op %d (%s): %v", op, what, err)
			}
		}
	}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
	// Drain and compare what is left.
	for len(m.items) > 0 {
		v, ok := r.Pop()
		if mv, _ := m.pop(); !ok || v != mv {
			t.Fatalf("drain: %v, %v; model %v", v, ok, mv)
		}
	}
	if _, ok := r.Pop(); ok {
		t.Fatal("drain: ring not empty")
	}
}

// ringTinyOpts makes every boundary frequent: 4-line segments, 2 staging
// slots, and the multi-goroutine store path from 128 bytes on.
func ringTinyOpts() []RingOption {
	return []RingOption{ringWithSegmentLines(4), ringWithStageLines(2), ringWithParallelMin(128)}
}

func TestRingDifferential(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		ops := 600
		if testing.Short() || d.Backend() == vmem.BackendVulkan {
			ops = 250
		}
		for _, tc := range ringTypeCases() {
			for _, capacity := range []int{1, 3, 17, 100} {
				if tc.maxCap > 0 && capacity > tc.maxCap {
					continue
				}
				for _, policy := range []RingPolicy{ErrorWhenFull, OverwriteOldest} {
					for tiny, opts := range [][]RingOption{nil, ringTinyOpts()} {
						t.Run(fmt.Sprintf("%s/cap%d/%v/tiny=%d", tc.name, capacity, policy, tiny), func(t *testing.T) {
							tc.run(t, ringDiffConfig{dev: d, capacity: capacity, policy: policy, opts: opts, ops: ops, seed: uint64(capacity)*3 + uint64(tiny)})
						})
					}
				}
			}
		}
	})
}

// TestRingBulkDMA covers PopBatch and All over runs long enough to go by
// DMA, wrapping around the ring's end and across segments, into heap and
// pinned buffers.
func TestRingBulkDMA(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, opts := range [][]RingOption{nil, {ringWithSegmentLines(256)}} {
			const capacity = 10000
			r, err := NewRing[uint64](d, capacity, opts...)
			if err != nil {
				t.Fatal(err)
			}
			pin, err := d.Alloc(vmem.Host, capacity*8, 64)
			if err != nil {
				t.Fatal(err)
			}
			pinned := ringSliceOf[uint64](pin, capacity)
			var in, out uint64
			src := make([]uint64, capacity)
			for round := range 8 {
				// Push a run that wraps, then pop most of it in one batch.
				k := capacity - r.Len() - round*7
				for i := range src[:k] {
					src[i] = in + uint64(i)
				}
				if n, err := r.PushBatch(src[:k]); n != k || err != nil {
					t.Fatalf("round %d: PushBatch %d: %d, %v", round, k, n, err)
				}
				in += uint64(k)
				i := 0
				for _, v := range r.All() {
					if v != out+uint64(i) {
						t.Fatalf("round %d: All[%d] = %d, want %d", round, i, v, out+uint64(i))
					}
					i++
				}
				if i != r.Len() || r.Err() != nil {
					t.Fatalf("round %d: All gave %d of %d: %v", round, i, r.Len(), r.Err())
				}
				dst := pinned
				if round%2 == 1 {
					dst = make([]uint64, capacity)
				}
				want := r.Len() - 100 - round
				n, err := r.PopBatch(dst[:want])
				if n != want || err != nil {
					t.Fatalf("round %d: PopBatch: %d, %v", round, n, err)
				}
				for j, v := range dst[:n] {
					if v != out+uint64(j) {
						t.Fatalf("round %d: element %d = %d, want %d", round, j, v, out+uint64(j))
					}
				}
				out += uint64(n)
				if err := r.check(); err != nil {
					t.Fatal(err)
				}
			}
			d.Free(pin)
			r.Close()
		}
	})
}

// TestRingFaults shows that a ring survives out-of-memory at construction
// (nothing allocated) and a failed DMA (nothing consumed).
func TestRingFaults(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, fail := range []int64{1, 3} {
			d.InjectFaults(vmem.Faults{FailAlloc: fail})
			_, err := NewRing[uint64](d, 1000, ringWithSegmentLines(16))
			if !errors.Is(err, ErrOutOfMemory) {
				t.Fatalf("FailAlloc %d: NewRing: %v, want ErrOutOfMemory", fail, err)
			}
			vmemtest.CheckNoLeaks(t, d)
		}
		d.InjectFaults(vmem.Faults{})
		r, err := NewRing[uint64](d, 4096)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		vs := make([]uint64, 4096)
		for i := range vs {
			vs[i] = uint64(i)
		}
		if _, err := r.PushBatch(vs); err != nil {
			t.Fatal(err)
		}
		d.InjectFaults(vmem.Faults{FailSubmit: 1})
		dst := make([]uint64, 4096)
		if n, err := r.PopBatch(dst); n != 0 || !errors.Is(err, ErrDeviceLost) {
			t.Fatalf("PopBatch under a lost device: %d, %v", n, err)
		}
		if r.Len() != 4096 {
			t.Fatalf("Len %d after a failed PopBatch", r.Len())
		}
		// CPU paths still work and see everything.
		for i := range 100 {
			if v, ok := r.Pop(); !ok || v != uint64(i) {
				t.Fatalf("Pop %d: %d, %v", i, v, ok)
			}
		}
		if err := r.Push(7); err != nil {
			t.Fatal(err)
		}
		if err := r.check(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRingErrors(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) { ringErrors(t, d) })
}

func ringErrors(t *testing.T, d *vmem.Device) {
	if _, err := NewRing[*int](d, 4); !errors.Is(err, ErrPointerType) {
		t.Errorf("NewRing[*int]: %v", err)
	}
	if _, err := NewRing[struct{ S string }](d, 4); !errors.Is(err, ErrPointerType) {
		t.Errorf("NewRing[string field]: %v", err)
	}
	if _, err := NewRing[uint64](d, 0); !errors.Is(err, vmem.ErrRange) {
		t.Errorf("NewRing capacity 0: %v", err)
	}
	if _, err := NewRing[uint64](d, 1, WithPolicy(RingPolicy(9))); err == nil {
		t.Error("NewRing with an unknown policy succeeded")
	}
	if _, err := NewRing[[1 << 20]uint64](d, 1<<50); !errors.Is(err, vmem.ErrTooLarge) {
		t.Errorf("NewRing of 2^73 bytes: %v", err)
	}
	r, err := NewRing[uint32](d, 2)
	if err != nil {
		t.Fatal(err)
	}
	r.Push(1)
	r.Push(2)
	if err := r.Push(3); !errors.Is(err, ErrFull) {
		t.Errorf("Push into a full ring: %v", err)
	}
	if n, err := r.PushBatch([]uint32{4}); n != 0 || !errors.Is(err, ErrFull) {
		t.Errorf("PushBatch into a full ring: %d, %v", n, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := r.Push(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Push after Close: %v", err)
	}
	if _, err := r.PushBatch([]uint32{1}); !errors.Is(err, ErrClosed) {
		t.Errorf("PushBatch after Close: %v", err)
	}
	if _, err := r.PopBatch(make([]uint32, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("PopBatch after Close: %v", err)
	}
	for range r.All() {
		t.Error("All after Close yielded")
	}
	if !errors.Is(r.Err(), ErrClosed) {
		t.Errorf("Err after All after Close: %v", r.Err())
	}
	if r.Len() != 0 {
		t.Errorf("Len after Close: %d", r.Len())
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Pop after Close did not panic")
			}
		}()
		r.Pop()
	}()
}

// TestRingOverwriteBatchLongerThanRing pushes batches longer than the ring
// in overwrite mode: only the newest Cap elements remain.
func TestRingOverwriteBatchLongerThanRing(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		r, err := NewRing[[3]uint32](d, 10, WithPolicy(OverwriteOldest))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.Push([3]uint32{99})
		vs := make([][3]uint32, 37)
		for i := range vs {
			vs[i] = [3]uint32{uint32(i), uint32(i), uint32(i)}
		}
		if n, err := r.PushBatch(vs); n != 37 || err != nil {
			t.Fatalf("PushBatch: %d, %v", n, err)
		}
		dst := make([][3]uint32, 20)
		n, err := r.PopBatch(dst)
		if err != nil || !slices.Equal(dst[:n], vs[27:]) {
			t.Fatalf("PopBatch: %d, %v: %v", n, err, dst[:n])
		}
	})
}

// ringSliceOf views a host or mapped block as n values of T.
func ringSliceOf[T any](b vmem.Block, n int) []T {
	return unsafe.Slice((*T)(b.Ptr()), n)
}
