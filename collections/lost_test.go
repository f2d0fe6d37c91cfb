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
// ErrDeviceLost (the design of reads on a lost device: see lost.go).
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
			bad = errors.New("no panic, want one matching ErrDeviceLost")
		case !ok || !errors.Is(err, vmem.ErrDeviceLost):
			bad = errors.New("panic " + errString(r) + ", want one matching ErrDeviceLost")
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
// container panics with an error matching ErrDeviceLost once the device is
// lost, on every backend, and the error-returning forms return the loss.
// The one exception is the host backend's Slice.Get on its first segment:
// plain memory, read inline with no check (see Slice.Get).
func TestReadsPanicWhenLost(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		pool, err := vmem.NewPool(d)
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
		keys := make([]uint64, n)
		for i := range keys {
			keys[i] = uint64(i)
		}
		sl, err := vmem.NewSlice[uint64](d, n, vmem.WithSegmentBytes(4096))
		must(err)
		defer sl.Close()
		must(sl.CopyFrom(keys, 0))
		ps, err := vmem.NewPoolSlice[uint64](pool, n)
		must(err)
		defer ps.Close()
		must(ps.CopyFrom(keys, 0))
		m, err := NewMap[uint64, uint64](d)
		must(err)
		defer m.Close()
		must(m.PutBatch(keys, keys))
		sm, err := NewShardedMap[uint64, uint64](pool)
		must(err)
		defer sm.Close()
		must(sm.PutBatch(keys, keys))
		bt, err := NewBTreeOrdered[uint64, uint64](d)
		must(err)
		defer bt.Close()
		must(bt.BulkLoad(keys, keys))
		sb, err := NewShardedBTreeOrdered[uint64, uint64](pool)
		must(err)
		defer sb.Close()
		must(sb.BulkLoad(keys, keys))
		rg, err := NewRing[uint64](d, 64)
		must(err)
		defer rg.Close()
		for i := range 10 {
			must(rg.Push(uint64(i)))
		}

		drain2 := func(s iter.Seq2[uint64, uint64]) func() {
			return func() {
				for range s {
				}
			}
		}
		drainI := func(s iter.Seq2[int, uint64]) func() {
			return func() {
				for range s {
				}
			}
		}
		drain1 := func(s iter.Seq[uint64]) func() {
			return func() {
				for range s {
				}
			}
		}
		visit := func(uint64, uint64) bool { return true }
		runs := func([]uint64, []uint64) bool { return true }
		idx, dst, found := []int{1, 500, 999}, make([]uint64, n), make([]bool, n)
		type read struct {
			name string
			f    func()
		}
		reads := []read{
			{"Slice.Get", func() { sl.Get(999) }},
			{"Slice.GetMany", func() { sl.GetMany(idx, dst) }},
			{"Slice.All", drainI(sl.All())},
			{"Slice.Chunks", func() {
				for range sl.Chunks() {
				}
			}},
			{"PoolSlice.Get", func() { ps.Get(1) }},
			{"PoolSlice.GetMany", func() { ps.GetMany(idx, dst) }},
			{"PoolSlice.All", drainI(ps.All())},
			{"PoolSlice.Chunks", func() {
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
			{"Map", m.Get, m.Has, m.GetMany, m.All(), m.Keys(), m.Values()},
			{"ShardedMap", sm.Get, sm.Has, sm.GetMany, sm.All(), sm.Keys(), sm.Values()},
		} {
			reads = append(reads,
				read{c.name + ".Get", func() { c.get(5) }},
				read{c.name + ".Get(absent)", func() { c.get(1 << 40) }},
				read{c.name + ".Has", func() { c.has(5) }},
				read{c.name + ".GetMany", func() { c.many(keys, dst, found) }},
				read{c.name + ".All", drain2(c.all)},
				read{c.name + ".Keys", drain1(c.ks)},
				read{c.name + ".Values", drain1(c.vs)})
		}
		type tree interface {
			Get(uint64) (uint64, bool)
			Has(uint64) bool
			Min() (uint64, uint64, bool)
			Max() (uint64, uint64, bool)
			All() iter.Seq2[uint64, uint64]
			Backward() iter.Seq2[uint64, uint64]
			Range(lo, hi uint64) iter.Seq2[uint64, uint64]
			Keys() iter.Seq[uint64]
			Values() iter.Seq[uint64]
			Ascend(func(uint64, uint64) bool)
			AscendRange(uint64, uint64, func(uint64, uint64) bool)
			AscendGreaterOrEqual(uint64, func(uint64, uint64) bool)
			AscendLessThan(uint64, func(uint64, uint64) bool)
			Descend(func(uint64, uint64) bool)
			DescendRange(uint64, uint64, func(uint64, uint64) bool)
			DescendLessOrEqual(uint64, func(uint64, uint64) bool)
			DescendGreaterThan(uint64, func(uint64, uint64) bool)
			AscendRuns(func([]uint64, []uint64) bool)
			AscendRangeRuns(uint64, uint64, func([]uint64, []uint64) bool)
		}
		for name, tr := range map[string]tree{"BTree": bt, "ShardedBTree": sb} {
			reads = append(reads,
				read{name + ".Get", func() { tr.Get(5) }},
				read{name + ".Get(absent)", func() { tr.Get(1 << 40) }},
				read{name + ".Has", func() { tr.Has(5) }},
				read{name + ".Min", func() { tr.Min() }},
				read{name + ".Max", func() { tr.Max() }},
				read{name + ".All", drain2(tr.All())},
				read{name + ".Backward", drain2(tr.Backward())},
				read{name + ".Range", drain2(tr.Range(10, 20))},
				read{name + ".Keys", drain1(tr.Keys())},
				read{name + ".Values", drain1(tr.Values())},
				read{name + ".Ascend", func() { tr.Ascend(visit) }},
				read{name + ".AscendRange", func() { tr.AscendRange(10, 20, visit) }},
				read{name + ".AscendGreaterOrEqual", func() { tr.AscendGreaterOrEqual(10, visit) }},
				read{name + ".AscendLessThan", func() { tr.AscendLessThan(10, visit) }},
				read{name + ".Descend", func() { tr.Descend(visit) }},
				read{name + ".DescendRange", func() { tr.DescendRange(20, 10, visit) }},
				read{name + ".DescendLessOrEqual", func() { tr.DescendLessOrEqual(10, visit) }},
				read{name + ".DescendGreaterThan", func() { tr.DescendGreaterThan(10, visit) }},
				read{name + ".AscendRuns", func() { tr.AscendRuns(runs) }},
				read{name + ".AscendRangeRuns", func() { tr.AscendRangeRuns(10, 20, runs) }})
		}
		reads = append(reads,
			read{"Ring.Peek", func() { rg.Peek() }},
			read{"Ring.Pop", func() { rg.Pop() }},
			read{"Ring.All", drainI(rg.All())})

		kdev(d).InjectFaults(kern.Faults{LoseDevice: true})
		for _, r := range reads {
			mustPanicLost(t, r.name, r.f)
		}
		if d.Backend() == vmem.BackendHost {
			if v := sl.Get(3); v != 3 {
				t.Errorf("host Slice.Get(3) on its first segment = %d", v)
			}
		} else {
			mustPanicLost(t, "Slice.Get(first segment)", func() { sl.Get(3) })
		}
		if rg.Len() != 10 {
			t.Errorf("Ring.Len %d after reads on a lost device, want 10", rg.Len())
		}
		// The forms with an error result return the loss.
		lost := func(name string, err error) {
			t.Helper()
			if !errors.Is(err, vmem.ErrDeviceLost) {
				t.Errorf("%s: %v, want ErrDeviceLost", name, err)
			}
		}
		lost("Slice.CopyTo", sl.CopyTo(dst[:10], 0))
		lost("Slice.Gather", sl.Gather(idx, dst))
		lost("PoolSlice.CopyTo", ps.CopyTo(dst[:10], 0))
		lost("PoolSlice.Gather", ps.Gather(idx, dst))
		lost("Map.GetBatch", m.GetBatch(keys, dst, found))
		lost("ShardedMap.GetBatch", sm.GetBatch(keys, dst, found))
		lost("BTree.GetBatch", bt.GetBatch(keys, dst, found))
		lost("ShardedBTree.GetBatch", sb.GetBatch(keys, dst, found))
		_, err = rg.PopBatch(dst)
		lost("Ring.PopBatch", err)
		for name, e := range map[string]error{"Slice": sl.Err(), "Map": m.Err(), "BTree": bt.Err(), "Ring": rg.Err()} {
			lost(name+".Err", e)
		}
	})
}
