package collections

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// ringModel is the reference: a FIFO on a Go slice with the same policy
// and the same publication rule. hist holds every element pushed since the
// last Reset; the consumer sees hist[lo():pub], pub being the elements
// published (which the ring chooses within the rule, see sync).
type ringModel[T any] struct {
	hist      []T
	head      int // elements consumed
	pub       int // elements published
	capacity  int
	overwrite bool
	wanted    bool // a consumer call found the ring empty since the last push that published itself
}

// lo is the oldest element the consumer can see.
func (m *ringModel[T]) lo() int {
	if m.overwrite {
		return max(m.head, m.pub-m.capacity)
	}
	return m.head
}

// items are the elements the consumer sees.
func (m *ringModel[T]) items() []T { return m.hist[m.lo():m.pub] }

// empty records a consumer call that found the ring empty.
func (m *ringModel[T]) empty() bool {
	if m.lo() < m.pub {
		return false
	}
	m.wanted = true
	return true
}

func (m *ringModel[T]) publish() { m.pub = len(m.hist) }

func (m *ringModel[T]) push(v T) error {
	if !m.overwrite && len(m.hist)-m.head == m.capacity {
		m.publish() // a push that fails publishes
		return ErrFull
	}
	m.hist = append(m.hist, v)
	return nil
}

// afterPush checks the ring's published count after a successful Push:
// anything from the last count to all, never 16 or more behind, and all
// when the consumer asked.
func (m *ringModel[T]) afterPush(pub uint64) error {
	n := len(m.hist)
	switch {
	case pub < uint64(m.pub) || pub > uint64(n):
		return fmt.Errorf("published %d: model %d, %d pushed", pub, m.pub, n)
	case n-int(pub) >= ringPubEvery:
		return fmt.Errorf("published %d of %d pushed", pub, n)
	case m.wanted && pub != uint64(n):
		return fmt.Errorf("published %d of %d pushed, with the consumer waiting", pub, n)
	}
	m.pub = int(pub)
	if m.pub == n {
		m.wanted = false
	}
	return nil
}

func (m *ringModel[T]) pushBatch(vs []T) (int, error) {
	n := len(vs)
	if !m.overwrite {
		n = min(n, m.capacity-(len(m.hist)-m.head))
	}
	m.hist = append(m.hist, vs[:n]...)
	m.publish()
	if n < len(vs) {
		return n, ErrFull
	}
	return n, nil
}

func (m *ringModel[T]) pop() (v T, ok bool) {
	if m.empty() {
		return v, false
	}
	lo := m.lo()
	m.head = lo + 1
	return m.hist[lo], true
}

func (m *ringModel[T]) peek() (v T, ok bool) {
	if m.empty() {
		return v, false
	}
	return m.hist[m.lo()], true
}

func (m *ringModel[T]) popBatch(dst []T) int {
	if len(dst) == 0 || m.empty() {
		return 0
	}
	lo := m.lo()
	n := copy(dst, m.hist[lo:m.pub])
	m.head = lo + n
	return n
}

func (m *ringModel[T]) all() []T {
	m.empty()
	return m.items()
}

func (m *ringModel[T]) reset() {
	m.hist, m.head, m.pub, m.wanted = nil, 0, 0, false
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
	policy   ringPolicy
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
	r, err := NewRing[T](cfg.dev, cfg.capacity, append([]RingOption{withPolicy(cfg.policy)}, cfg.opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := &ringModel[T]{capacity: cfg.capacity, overwrite: cfg.policy == ringOverwriteOldest}
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
			got, want := r.Push(v), m.push(v)
			if !errors.Is(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("op %d Push: %v, model %v", op, got, want)
			}
			if got == nil {
				if err := m.afterPush(r.tail.Load()); err != nil {
					t.Fatalf("op %d Push: %v", op, err)
				}
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
			ringDiffPopBatch(t, r, m, op, arg%(2*cfg.capacity+2))
		case k < 88:
			what = "Peek"
			v, ok := r.Peek()
			mv, mok := m.peek()
			if ok != mok || v != mv {
				t.Fatalf("op %d Peek: %v, %v; model %v, %v", op, v, ok, mv, mok)
			}
		case k < 90:
			what = "Flush"
			if err := r.Flush(); err != nil {
				t.Fatalf("op %d Flush: %v", op, err)
			}
			m.publish()
		case k < 96:
			what = "All"
			ringDiffAll(t, r, m, op)
		case k < 97:
			what = "Clear"
			r.Clear()
			m.reset()
		default:
			what = "All-break"
			m.all()
			n := 0
			for range r.All() {
				n++
				if n == 2 {
					break
				}
			}
		}
		if r.Len() != len(m.items()) || int(r.capacity) != cfg.capacity || r.tail.Load() != uint64(m.pub) {
			t.Fatalf("op %d (%s): Len %d Cap %d published %d, model %d %d %d", op, what, r.Len(), int(r.capacity), r.tail.Load(), len(m.items()), cfg.capacity, m.pub)
		}
		if buildconst.Invariants {
			if err := r.check(); err != nil {
				t.Fatalf("op %d (%s): %v", op, what, err)
			}
		}
	}
	ringDiffDrain(t, r, m)
}

// ringDiffPopBatch pops a batch of up to size elements from the Ring and
// the model and compares them.
func ringDiffPopBatch[T comparable](t *testing.T, r *Ring[T], m *ringModel[T], op, size int) {
	t.Helper()
	dst := make([]T, size)
	mdst := make([]T, len(dst))
	n, err := r.PopBatch(dst)
	if err != nil {
		t.Fatalf("op %d PopBatch: %v", op, err)
	}
	if mn := m.popBatch(mdst); n != mn || !slices.Equal(dst[:n], mdst[:mn]) {
		t.Fatalf("op %d PopBatch(%d): %d elements, model %d", op, len(dst), n, mn)
	}
}

// ringDiffAll compares the Ring's All with the model's elements.
func ringDiffAll[T comparable](t *testing.T, r *Ring[T], m *ringModel[T], op int) {
	t.Helper()
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
	if mi := m.all(); !slices.Equal(got, mi) {
		t.Fatalf("op %d All: %d elements, model %d", op, len(got), len(mi))
	}
}

// ringDiffDrain checks the Ring's invariants, then publishes, drains and
// compares what is left with the model.
func ringDiffDrain[T comparable](t *testing.T, r *Ring[T], m *ringModel[T]) {
	t.Helper()
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
	// Publish, drain and compare what is left.
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	m.publish()
	for len(m.items()) > 0 {
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
		if testing.Short() || d.Info().Backend == vmem.BackendVulkan {
			ops = 250
		}
		for _, tc := range ringTypeCases() {
			for _, capacity := range []int{1, 3, 17, 100} {
				if tc.maxCap > 0 && capacity > tc.maxCap {
					continue
				}
				for _, policy := range []ringPolicy{ringErrorWhenFull, ringOverwriteOldest} {
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
			pin, err := kdev(d).Alloc(block.Host, capacity*8, 64)
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
			kdev(d).Free(pin)
			r.Close()
		}
	})
}

// TestRingFaults shows that a ring survives out-of-memory at construction
// (nothing allocated) and a failed DMA (nothing consumed).
func TestRingFaults(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, fail := range []int64{1, 3} {
			kdev(d).InjectFaults(kern.Faults{FailAlloc: fail})
			_, err := NewRing[uint64](d, 1000, ringWithSegmentLines(16))
			if !errors.Is(err, vmem.ErrOutOfMemory) {
				t.Fatalf("FailAlloc %d: NewRing: %v, want vmem.ErrOutOfMemory", fail, err)
			}
			vmemtest.CheckNoLeaks(t, d)
		}
		kdev(d).InjectFaults(kern.Faults{})
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
		kdev(d).InjectFaults(kern.Faults{FailSubmit: 1})
		dst := make([]uint64, 4096)
		if n, err := r.PopBatch(dst); n != 0 || !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("PopBatch under a lost device: %d, %v", n, err)
		}
		if r.Len() != 4096 {
			t.Fatalf("Len %d after a failed PopBatch", r.Len())
		}
		// Reads without an error result panic, consuming nothing.
		mustPanicLost(t, "Pop", func() { r.Pop() })
		mustPanicLost(t, "Peek", func() { r.Peek() })
		if r.Len() != 4096 {
			t.Fatalf("Len %d after a Pop on a lost device", r.Len())
		}
		// Loss is sticky for calls with an error result (docs/reliability.md).
		if err := r.Push(7); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("Push after device loss: %v", err)
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
	if _, err := NewRing[*int](d, 4); !errors.Is(err, vmem.ErrPointerType) {
		t.Errorf("NewRing[*int]: %v", err)
	}
	if _, err := NewRing[struct{ S string }](d, 4); !errors.Is(err, vmem.ErrPointerType) {
		t.Errorf("NewRing[string field]: %v", err)
	}
	if _, err := NewRing[uint64](d, 0); !errors.Is(err, vmem.ErrRange) {
		t.Errorf("NewRing capacity 0: %v", err)
	}
	if _, err := NewRing[uint64](d, 1, withPolicy(ringPolicy(9))); err == nil {
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
	if err := r.Push(1); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("Push after Close: %v", err)
	}
	if _, err := r.PushBatch([]uint32{1}); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("PushBatch after Close: %v", err)
	}
	if _, err := r.PopBatch(make([]uint32, 1)); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("PopBatch after Close: %v", err)
	}
	for range r.All() {
		t.Error("All after Close yielded")
	}
	if !errors.Is(r.Err(), vmem.ErrClosed) {
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
		r, err := NewRing[[3]uint32](d, 10, withPolicy(ringOverwriteOldest))
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
func ringSliceOf[T any](b block.Block, n int) []T {
	return unsafe.Slice((*T)(b.Ptr()), n)
}
