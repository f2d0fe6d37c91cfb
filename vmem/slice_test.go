package vmem_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

type e1 uint8
type e8 uint64
type e24 struct {
	A uint64
	B [2]uint64
}
type e64 [8]uint64
type e100 [25]uint32
type e4096 [512]uint64

// mk builds a value of T whose bytes derive from seed.
func mk[T any](seed uint64) T {
	var v T
	b := unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v))
	for i := range b {
		b[i] = byte(seed>>((i%8)*8)) ^ byte(i)
	}
	return v
}

// sliceOps runs a random sequence of operations on a Slice and on a []T
// model and compares them after every step.
func sliceOps[T comparable](t *testing.T, d *vmem.Device, ops []byte, segBytes uint64) {
	t.Helper()
	s, err := vmem.NewSlice[T](d, 0, vmemtest.WithSegmentBytes(segBytes))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := &sliceOpsRun[T]{t: t, s: s, ops: ops}
	o.w = s.Writer(64)
	o.pending = map[int]T{}
	for step := 0; len(o.ops) > 0; step++ {
		op := o.next() % 10
		arg := o.next()*256 + o.next()
		// Pending writer stores are visible to readers at an unspecified
		// time before Flush, and other writes must not race them: flush
		// before anything but a read or another writer store.
		if op != 4 && op != 6 && op != 7 {
			o.flush()
		}
		if !o.apply(step, op, arg) {
			continue
		}
		if s.Len() != len(o.model) {
			t.Fatalf("step %d: Len %d, model %d", step, s.Len(), len(o.model))
		}
	}
	o.flush()
	model := o.model
	n := 0
	for i, v := range s.All() {
		if i != n || v != model[i] {
			t.Fatalf("All: element %d differs", i)
		}
		n++
	}
	if n != len(model) || s.Err() != nil {
		t.Fatalf("All visited %d of %d (%v)", n, len(model), s.Err())
	}
}

// sliceOpsRun is the state of sliceOps: the Slice, its writer, its model,
// the writer stores not yet flushed and the operations left.
type sliceOpsRun[T comparable] struct {
	t       *testing.T
	s       *vmem.Slice[T]
	model   []T
	w       *vmem.SliceWriter[T]
	pending map[int]T
	ops     []byte
}

// next takes the next byte of the operations (0 once they run out).
func (o *sliceOpsRun[T]) next() int {
	if len(o.ops) == 0 {
		return 0
	}
	v := int(o.ops[0])
	o.ops = o.ops[1:]
	return v
}

// flush flushes the writer and applies its pending stores to the model.
func (o *sliceOpsRun[T]) flush() {
	if err := o.w.Flush(); err != nil {
		o.t.Fatal(err)
	}
	for i, v := range o.pending {
		o.model[i] = v
	}
	clear(o.pending)
}

// apply runs operation op with argument arg on the Slice and the model; it
// reports false where the step was skipped.
func (o *sliceOpsRun[T]) apply(step, op, arg int) bool {
	t, s := o.t, o.s
	t.Helper()
	switch op {
	case 0, 1: // Append a few
		o.appendGen(arg%5+1, step*31)
	case 2: // Append many (bulk path)
		o.appendGen(arg%70+17, step*7)
	case 3: // Set
		if len(o.model) > 0 {
			i := arg % len(o.model)
			v := mk[T](uint64(step))
			s.Set(i, v)
			o.model[i] = v
		}
	case 4: // Get
		if len(o.model) > 0 {
			return o.get(step, arg)
		}
	case 5: // CopyFrom a range
		if len(o.model) > 0 {
			at := arg % len(o.model)
			k := min(len(o.model)-at, o.next()%40)
			src := make([]T, k)
			for i := range src {
				src[i] = mk[T](uint64(step*13 + i))
			}
			if err := s.CopyFrom(src, at); err != nil {
				t.Fatal(err)
			}
			copy(o.model[at:], src)
		}
	case 6: // CopyTo a range
		if len(o.model) > 0 {
			o.copyTo(step, arg)
		}
	case 7: // Writer sets, flushed on the next Writer op or at check
		if len(o.model) > 0 {
			i := arg % len(o.model)
			v := mk[T](uint64(step * 3))
			o.w.Set(i, v)
			o.pending[i] = v
		}
	case 8: // Flush the writer (done above)
	case 9: // Resize
		n := arg % (len(o.model) + 10)
		if err := s.Resize(n); err != nil {
			t.Fatal(err)
		}
		if n <= len(o.model) {
			o.model = o.model[:n]
		} else {
			o.model = append(o.model, make([]T, n-len(o.model))...)
		}
	}
	return true
}

// appendGen appends k generated elements, from base on, to the Slice and the model.
func (o *sliceOpsRun[T]) appendGen(k, base int) {
	o.t.Helper()
	vs := make([]T, k)
	for i := range vs {
		vs[i] = mk[T](uint64(base + i))
	}
	if err := o.s.Append(vs...); err != nil {
		o.t.Fatal(err)
	}
	o.model = append(o.model, vs...)
}

// get checks Get at an index chosen by arg and GetMany around it; it
// reports false where that index has a pending writer store.
func (o *sliceOpsRun[T]) get(step, arg int) bool {
	t, s, model, pending := o.t, o.s, o.model, o.pending
	t.Helper()
	i := arg % len(model)
	if _, p := pending[i]; p {
		return false
	}
	if got := s.Get(i); got != model[i] {
		t.Fatalf("step %d: Get(%d) differs", step, i)
	}
	// GetMany over a few indices around i.
	var idx []int
	for k := 0; k < 70 && k < len(model); k++ {
		j := (i + k*37) % len(model)
		if _, p := pending[j]; !p {
			idx = append(idx, j)
		}
	}
	got := make([]T, len(idx))
	s.GetManyCPU(idx, got)
	for k, j := range idx {
		if got[k] != model[j] {
			t.Fatalf("step %d: GetMany element %d (index %d) differs", step, k, j)
		}
	}
	return true
}

// copyTo checks CopyTo over a range chosen by arg and the next operation
// byte, past the elements with pending writer stores.
func (o *sliceOpsRun[T]) copyTo(step, arg int) {
	t, s, model, pending := o.t, o.s, o.model, o.pending
	t.Helper()
	at := arg % len(model)
	k := min(len(model)-at, o.next()%60)
	dst := make([]T, k)
	if err := s.CopyTo(dst, at); err != nil {
		t.Fatal(err)
	}
	for i := range dst {
		if _, p := pending[at+i]; p {
			continue
		}
		if dst[i] != model[at+i] {
			t.Fatalf("step %d: CopyTo at %d+%d differs", step, at, i)
		}
	}
}

func randomOps(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestSliceDifferential(t *testing.T) {
	n := 6000
	if testing.Short() {
		n = 2000
	}
	vmemtest.Each(t, vmem.Options{ChunkSize: 4 << 20}, func(t *testing.T, d *vmem.Device) {
		// Small segments put many segment boundaries in play.
		t.Run("1", func(t *testing.T) { sliceOps[e1](t, d, randomOps(1, n), 4096) })
		t.Run("8", func(t *testing.T) { sliceOps[e8](t, d, randomOps(2, n), 4096) })
		t.Run("24", func(t *testing.T) { sliceOps[e24](t, d, randomOps(3, n), 4096) })
		t.Run("64", func(t *testing.T) { sliceOps[e64](t, d, randomOps(4, n), 8192) })
		t.Run("100", func(t *testing.T) { sliceOps[e100](t, d, randomOps(5, n), 16384) })
		t.Run("4096", func(t *testing.T) { sliceOps[e4096](t, d, randomOps(6, n/2), 65536) })
		t.Run("8/bigsegments", func(t *testing.T) { sliceOps[e8](t, d, randomOps(7, n), 0) })
	})
}

func FuzzSlice(f *testing.F) {
	f.Add(randomOps(1, 200))
	f.Add([]byte{2, 0, 9, 9, 1, 1, 4, 0, 0})
	d, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { d.Close() })
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4000 {
			ops = ops[:4000]
		}
		sliceOps[e24](t, d, ops, 4096)
		sliceOps[e8](t, d, ops, 4096)
	})
}

func TestSlicePointerTypes(t *testing.T) {
	d := vmemtest.Open(t, vmem.BackendHost, vmem.Options{})
	type bad struct {
		A int
		B struct{ C []int }
	}
	if _, err := vmem.NewSlice[bad](d, 1); !errors.Is(err, vmem.ErrPointerType) {
		t.Fatalf("slice field accepted: %v", err)
	}
	if _, err := vmem.NewSlice[*int](d, 1); !errors.Is(err, vmem.ErrPointerType) {
		t.Fatalf("pointer accepted: %v", err)
	}
	if _, err := vmem.NewSlice[string](d, 1); !errors.Is(err, vmem.ErrPointerType) {
		t.Fatalf("string accepted: %v", err)
	}
}

func TestSliceSpillsToPrivate(t *testing.T) {
	o := vmem.Options{Limits: [3]uint64{vmem.Mapped: 1 << 20}, ChunkSize: 1 << 20}
	vmemtest.Each(t, o, func(t *testing.T, d *vmem.Device) {
		s, err := vmem.NewSlice[e64](d, 0, vmemtest.WithSegmentBytes(256<<10))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		const n = 40000 // 2.5 MiB: more than the mapped tier's 1 MiB
		vs := make([]e64, n)
		for i := range vs {
			vs[i] = mk[e64](uint64(i))
		}
		err = s.Append(vs...)
		if d.Info().Backend == vmem.BackendHost {
			// All tiers are host memory; the limit makes the Slice fail cleanly.
			if !errors.Is(err, vmem.ErrOutOfMemory) || s.Len() != 0 {
				t.Fatalf("host: want ErrOutOfMemory and an unchanged Slice, got %v, len %d", err, s.Len())
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.Info().Tiers[vmem.Private].InUse == 0 {
			t.Fatal("nothing went to the private tier")
		}
		for _, i := range []int{0, 1, n / 2, n - 1} {
			if s.Get(i) != vs[i] {
				t.Fatalf("Get(%d) differs", i)
			}
		}
		s.Set(n-1, vs[0])
		if s.Get(n-1) != vs[0] || s.Err() != nil {
			t.Fatalf("Set on a private segment: %v", s.Err())
		}
	})
}

func TestSliceClose(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		s, err := vmem.NewSlice[e8](d, 10)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(1); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("Append after Close: %v", err)
		}
		// Closed with room to spare: Append of one element needs no
		// growth, and must still refuse.
		r, err := vmem.NewSlice[e8](d, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Append(1); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if err := r.Append(2); !errors.Is(err, vmem.ErrClosed) || r.Len() != 0 {
			t.Fatalf("Append after Close of a Slice with room: %v, Len %d", err, r.Len())
		}
		defer func() {
			if recover() == nil {
				t.Fatal("Get after Close did not panic")
			}
		}()
		s.Get(0)
	})
}

// TestSliceWriterLarge fills batches big enough for the parallel flush
// (several goroutines, each a range of addresses) over several segments,
// with a quarter of the stores on a few hot elements at the edges of 4 MiB
// windows (segments are 16 MiB), where the flush splits its work: the last
// store must win.
func TestSliceWriterLarge(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		const n = 1 << 19 // 32 MiB of 64-byte elements
		s, err := vmem.NewSlice[e64](d, n, vmemtest.WithSegmentBytes(16<<20))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		model := make([]e64, n)
		const window = 4 << 20 / 64
		rng := rand.New(rand.NewPCG(3, 3))
		w := s.Writer(1 << 16)
		for round := range 3 {
			for k := 0; k < 1<<17+round; k++ {
				i := rng.IntN(n)
				if rng.IntN(4) == 0 {
					i = (rng.IntN(n/window)*window + window - 1 + rng.IntN(3)) % n
				}
				v := mk[e64](rng.Uint64())
				w.Set(i, v)
				model[i] = v
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			got := make([]e64, n)
			if err := s.CopyTo(got, 0); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i] != model[i] {
					t.Fatalf("round %d: element %d differs", round, i)
				}
			}
		}
	})
}
