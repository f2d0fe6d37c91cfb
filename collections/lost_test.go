package collections

import (
	"errors"
	"iter"
	"testing"

	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// mustPanicLost runs f and fails t unless f panics with an error matching
// vmem.ErrDeviceLost (the design of reads on a lost device: see lost.go).
func mustPanicLost(t *testing.T, what string, f func()) {
	t.Helper()
	if err := panicLost(f); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// panicLost runs f and returns why it did not panic as a read on a lost
// device must, or nil.
func panicLost(f func()) (bad error) {
	defer func() {
		r := recover()
		err, ok := r.(error)
		switch {
		case r == nil:
			bad = errors.New("no panic, want one matching vmem.ErrDeviceLost")
		case !ok || !errors.Is(err, vmem.ErrDeviceLost):
			bad = errors.New("panic " + errString(r) + ", want one matching vmem.ErrDeviceLost")
		}
	}()
	f()
	return nil
}

func errString(r any) string {
	if err, ok := r.(error); ok {
		return err.Error()
	}
	if s, ok := r.(string); ok {
		return s
	}
	return "(not an error)"
}

// TestReadsPanicWhenLost: every read without an error result of every
// container panics with an error matching vmem.ErrDeviceLost once the device is
// lost, on every backend, and the error-returning forms return the loss.
// The one exception is the host backend's Slice.Get on its first segment:
// plain memory, read inline with no check (see Slice.Get).
func TestReadsPanicWhenLost(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		pool, err := vmemtest.NewPool(d)
		if err != nil {
			t.Fatal(err)
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		const n = 1000
		var fx lostFixture
		fx.keys = make([]uint64, n)
		for i := range fx.keys {
			fx.keys[i] = uint64(i)
		}
		keys := fx.keys
		fx.sl, err = vmem.NewSlice[uint64](d, n, vmemtest.WithSegmentBytes(4096))
		must(err)
		defer fx.sl.Close()
		must(fx.sl.CopyFrom(keys, 0))
		fx.ps, err = vmem.NewSlice[uint64](pool, n)
		must(err)
		defer fx.ps.Close()
		must(fx.ps.CopyFrom(keys, 0))
		fx.m, err = NewMap[uint64, uint64](d)
		must(err)
		defer fx.m.Close()
		must(fx.m.PutBatch(keys, keys))
		fx.sm, err = NewMap[uint64, uint64](pool)
		must(err)
		defer fx.sm.Close()
		must(fx.sm.PutBatch(keys, keys))
		fx.bt, err = NewBTreeOrdered[uint64, uint64](d)
		must(err)
		defer fx.bt.Close()
		must(fx.bt.BulkLoad(keys, keys))
		fx.sb, err = NewBTreeOrdered[uint64, uint64](pool)
		must(err)
		defer fx.sb.Close()
		must(fx.sb.BulkLoad(keys, keys))
		fx.rg, err = NewRing[uint64](d, 64)
		must(err)
		defer fx.rg.Close()
		for i := range 10 {
			must(fx.rg.Push(uint64(i)))
		}

		fx.idx, fx.dst, fx.found = []int{1, 500, 999}, make([]uint64, n), make([]bool, n)
		reads := lostReadCases(&fx)

		kdev(d).InjectFaults(kern.Faults{LoseDevice: true})
		for _, r := range reads {
			mustPanicLost(t, r.name, r.f)
		}
		if d.Info().Backend == vmem.BackendHost {
			if v := fx.sl.Get(3); v != 3 {
				t.Errorf("host Slice.Get(3) on its first segment = %d", v)
			}
		} else {
			mustPanicLost(t, "Slice.Get(first segment)", func() { fx.sl.Get(3) })
		}
		if fx.rg.Len() != 10 {
			t.Errorf("Ring.Len %d after reads on a lost device, want 10", fx.rg.Len())
		}
		// The forms with an error result return the loss.
		lostErrForms(t, &fx)
	})
}

// lostFixture holds the containers TestReadsPanicWhenLost reads, and the
// buffers its reads use.
type lostFixture struct {
	keys  []uint64
	sl    *vmem.Slice[uint64]
	ps    *vmem.Slice[uint64]
	m     *Map[uint64, uint64]
	sm    *Map[uint64, uint64] // on the pool
	bt    *BTree[uint64, uint64]
	sb    *BTree[uint64, uint64]
	rg    *Ring[uint64]
	idx   []int
	dst   []uint64
	found []bool
}

// lostCase is one read without an error result, by name.
type lostCase struct {
	name string
	f    func()
}

// drainSeq2 returns a function that runs s to its end.
func drainSeq2[K, V any](s iter.Seq2[K, V]) func() {
	return func() {
		for range s {
		}
	}
}

// drainSeq returns a function that runs s to its end.
func drainSeq[V any](s iter.Seq[V]) func() {
	return func() {
		for range s {
		}
	}
}

// lostReadCases lists the reads without an error result of every container
// of fx.
func lostReadCases(fx *lostFixture) []lostCase {
	sl, ps, rg := fx.sl, fx.ps, fx.rg
	keys, dst, found := fx.keys, fx.dst, fx.found
	drain2 := drainSeq2[uint64, uint64]
	drainI := drainSeq2[int, uint64]
	drain1 := drainSeq[uint64]
	type read = lostCase
	reads := []read{
		{"Slice.Get", func() { sl.Get(999) }},
		{"Slice.All", drainI(sl.All())},
		{"Slice.Chunks", func() {
			for range sl.Chunks() {
			}
		}},
		{"Slice(pool).Get", func() { ps.Get(1) }},
		{"Slice(pool).All", drainI(ps.All())},
		{"Slice(pool).Chunks", func() {
			for range ps.Chunks() {
			}
		}},
	}
	for _, c := range []struct {
		name string
		get  func(uint64) (uint64, bool)
		has  func(uint64) bool
		many func([]uint64, []uint64, []bool) int
		all  iter.Seq2[uint64, uint64]
		ks   iter.Seq[uint64]
		vs   iter.Seq[uint64]
	}{
		{"Map", fx.m.Get, fx.m.Has, fx.m.getMany, fx.m.All(), keysOf(fx.m.All()), valuesOf(fx.m.All())},
		{"Map/pool", fx.sm.Get, fx.sm.Has, fx.sm.getMany, fx.sm.All(), keysOf(fx.sm.All()), valuesOf(fx.sm.All())},
	} {
		reads = append(reads,
			read{c.name + ".Get", func() { c.get(5) }},
			read{c.name + ".Get(absent)", func() { c.get(1 << 40) }},
			read{c.name + ".Has", func() { c.has(5) }},
			read{c.name + ".getMany", func() { c.many(keys, dst, found) }},
			read{c.name + ".All", drain2(c.all)},
			read{c.name + ".Keys", drain1(c.ks)},
			read{c.name + ".Values", drain1(c.vs)})
	}
	reads = lostTreeReads(reads, fx)
	reads = append(reads,
		read{"Ring.Peek", func() { rg.Peek() }},
		read{"Ring.Pop", func() { rg.Pop() }},
		read{"Ring.All", drainI(rg.All())})
	return reads
}

// lostTestTree is what a BTree on a device and on a pool share of reads.
type lostTestTree interface {
	Get(uint64) (uint64, bool)
	Has(uint64) bool
	Min() (uint64, uint64, bool)
	Max() (uint64, uint64, bool)
	All() iter.Seq2[uint64, uint64]
	Backward() iter.Seq2[uint64, uint64]
	Range(lo, hi uint64) iter.Seq2[uint64, uint64]
	Ascend(from uint64) iter.Seq2[uint64, uint64]
	Descend(from uint64) iter.Seq2[uint64, uint64]
}

// lostTreeReads appends to reads the reads of fx's two trees.
func lostTreeReads(reads []lostCase, fx *lostFixture) []lostCase {
	type read = lostCase
	drain2 := drainSeq2[uint64, uint64]
	for name, tr := range map[string]lostTestTree{"BTree": fx.bt, "BTree on a pool": fx.sb} {
		reads = append(reads,
			read{name + ".Get", func() { tr.Get(5) }},
			read{name + ".Get(absent)", func() { tr.Get(1 << 40) }},
			read{name + ".Has", func() { tr.Has(5) }},
			read{name + ".Min", func() { tr.Min() }},
			read{name + ".Max", func() { tr.Max() }},
			read{name + ".All", drain2(tr.All())},
			read{name + ".Backward", drain2(tr.Backward())},
			read{name + ".Range", drain2(tr.Range(10, 20))},
			read{name + ".Ascend", drain2(tr.Ascend(10))},
			read{name + ".Ascend(above the maximum)", drain2(tr.Ascend(1 << 40))},
			read{name + ".Descend", drain2(tr.Descend(20))},
			read{name + ".Descend(the minimum)", drain2(tr.Descend(0))})
	}
	return reads
}

// lostErrForms checks that the forms with an error result return the loss.
func lostErrForms(t *testing.T, fx *lostFixture) {
	sl, ps, m, sm, bt, sb, rg := fx.sl, fx.ps, fx.m, fx.sm, fx.bt, fx.sb, fx.rg
	keys, idx, dst, found := fx.keys, fx.idx, fx.dst, fx.found
	lost := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, vmem.ErrDeviceLost) {
			t.Errorf("%s: %v, want vmem.ErrDeviceLost", name, err)
		}
	}
	lost("Slice.CopyTo", sl.CopyTo(dst[:10], 0))
	lost("Slice.GetBatch", sl.GetBatch(idx, dst))
	lost("Slice(pool).CopyTo", ps.CopyTo(dst[:10], 0))
	lost("Slice(pool).GetBatch", ps.GetBatch(idx, dst))
	lost("Map.GetBatch", m.GetBatch(keys, dst, found))
	lost("Map/pool.GetBatch", sm.GetBatch(keys, dst, found))
	lost("BTree.GetBatch", bt.GetBatch(keys, dst, found))
	lost("BTree.GetBatch on a pool", sb.GetBatch(keys, dst, found))
	_, err := rg.PopBatch(dst)
	lost("Ring.PopBatch", err)
	for name, e := range map[string]error{"Slice": sl.Err(), "Map": m.Err(), "BTree": bt.Err(), "Ring": rg.Err()} {
		lost(name+".Err", e)
	}
}
