package collections

import (
	"bytes"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// The tests of this file check that every call of the containers that
// blocks (on a GPU fence, on workers of its own) keeps its container
// reachable until it returns (vmemtest.KeptAlive): a container the caller
// no longer references is otherwise freed by its garbage-collection
// backstop while the call still reads or writes its memory.

const kaN = 1 << 17 // a GetBatch of two parts on the GPU

func kaKeys() ([]uint64, []uint64) {
	keys := make([]uint64, kaN)
	vals := make([]uint64, kaN)
	for i := range keys {
		keys[i] = uint64(i)*1_000_003 + 1 // ascending, for BulkLoad
		vals[i] = uint64(i)
	}
	return keys, vals
}

// kaCheck fails t unless vals and found answer keys made by kaKeys.
func kaCheck(t *testing.T, vals []uint64, found []bool) {
	t.Helper()
	for i := range vals {
		if !found[i] || vals[i] != uint64(i) {
			t.Fatalf("key %d: %d, %v; want %d, true", i, vals[i], found[i], i)
		}
	}
}

// kaWaited fails t when a device that runs kernels saw no wait at all:
// the test would then check nothing.
func kaWaited(t *testing.T, kernels bool, waits int) {
	t.Helper()
	if kernels && waits == 0 {
		t.Errorf("no wait: the test checks nothing")
	}
}

func TestMapKeptAlive(t *testing.T) {
	keys, vals := kaKeys()
	newMap := func(t *testing.T, d *vmem.Device) *Map[uint64, uint64] {
		m, err := NewMap[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.PutBatch(keys, vals); err != nil {
			t.Fatal(err)
		}
		return m
	}
	type M = *Map[uint64, uint64]
	ops := []struct {
		name string
		run  func(t *testing.T, m M)
	}{
		{"GetBatch", func(t *testing.T, m M) {
			got, found := make([]uint64, kaN), make([]bool, kaN)
			if err := m.GetBatch(keys, got, found); err != nil {
				t.Fatal(err)
			}
			kaCheck(t, got, found)
		}},
		{"GetMany", func(t *testing.T, m M) {
			got, found := make([]uint64, kaN), make([]bool, kaN)
			m.getMany(keys, got, found)
			kaCheck(t, got, found)
		}},
		{"PutBatch", func(t *testing.T, m M) {
			if err := m.PutBatch(keys, vals); err != nil {
				t.Fatal(err)
			}
		}},
		{"PutMany", func(t *testing.T, m M) {
			if err := m.putMany(keys, vals); err != nil {
				t.Fatal(err)
			}
		}},
		{"Save", func(t *testing.T, m M) {
			if err := m.Save(new(bytes.Buffer)); err != nil {
				t.Fatal(err)
			}
		}},
		{"All", func(t *testing.T, m M) {
			if n := kaCount(m.All()); n != kaN {
				t.Fatalf("All gave %d entries, want %d", n, kaN)
			}
		}},
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		waits := 0
		for _, op := range ops {
			t.Run(op.name, func(t *testing.T) {
				waits += vmemtest.KeptAlive(t, newMap(t, d), func(m M) { op.run(t, m) })
			})
		}
		kaWaited(t, kdev(d).KernelsAvailable(), waits)
	})
}

func TestBTreeKeptAlive(t *testing.T) {
	keys, vals := kaKeys()
	newTree := func(t *testing.T, d *vmem.Device, load bool) *BTree[uint64, uint64] {
		bt, err := NewBTreeOrdered[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		if load {
			if err := bt.BulkLoad(keys, vals); err != nil {
				t.Fatal(err)
			}
		}
		return bt
	}
	type B = *BTree[uint64, uint64]
	ops := []struct {
		name  string
		empty bool
		run   func(t *testing.T, bt B)
	}{
		{"GetBatch", false, func(t *testing.T, bt B) {
			got, found := make([]uint64, kaN), make([]bool, kaN)
			if err := bt.GetBatch(keys, got, found); err != nil {
				t.Fatal(err)
			}
			kaCheck(t, got, found)
		}},
		{"BulkLoad", true, func(t *testing.T, bt B) {
			if err := bt.BulkLoad(keys, vals); err != nil {
				t.Fatal(err)
			}
		}},
		{"Save", false, func(t *testing.T, bt B) {
			if err := bt.Save(new(bytes.Buffer)); err != nil {
				t.Fatal(err)
			}
		}},
		{"Range", false, func(t *testing.T, bt B) {
			if n := kaCount(bt.Range(keys[10], keys[kaN-10])); n != kaN-20 {
				t.Fatalf("Range gave %d entries, want %d", n, kaN-20)
			}
		}},
		{"Ascend", false, func(t *testing.T, bt B) {
			if n := kaCount(bt.Ascend(keys[10])); n != kaN-10 {
				t.Fatalf("Ascend gave %d entries, want %d", n, kaN-10)
			}
		}},
		{"Descend", false, func(t *testing.T, bt B) {
			if n := kaCount(bt.Descend(keys[kaN-11])); n != kaN-10 {
				t.Fatalf("Descend gave %d entries, want %d", n, kaN-10)
			}
		}},
		{"All", false, func(t *testing.T, bt B) {
			if n := kaCount(bt.All()); n != kaN {
				t.Fatalf("All gave %d entries, want %d", n, kaN)
			}
		}},
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		waits := 0
		for _, op := range ops {
			t.Run(op.name, func(t *testing.T) {
				waits += vmemtest.KeptAlive(t, newTree(t, d, !op.empty), func(bt B) { op.run(t, bt) })
			})
		}
		kaWaited(t, kdev(d).KernelsAvailable(), waits)
	})
}

func TestRingKeptAlive(t *testing.T) {
	_, vals := kaKeys()
	newRing := func(t *testing.T, d *vmem.Device) *Ring[uint64] {
		r, err := NewRing[uint64](d, 2*kaN)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.PushBatch(vals); err != nil {
			t.Fatal(err)
		}
		return r
	}
	type R = *Ring[uint64]
	ops := []struct {
		name string
		run  func(t *testing.T, r R)
	}{
		{"PushBatch", func(t *testing.T, r R) {
			if _, err := r.PushBatch(vals); err != nil {
				t.Fatal(err)
			}
		}},
		{"PopBatch", func(t *testing.T, r R) {
			got := make([]uint64, kaN)
			n, err := r.PopBatch(got)
			if err != nil || n != kaN {
				t.Fatalf("PopBatch: %d, %v", n, err)
			}
			for i, v := range got {
				if v != uint64(i) {
					t.Fatalf("element %d = %d", i, v)
				}
			}
		}},
		{"Save", func(t *testing.T, r R) {
			if err := r.Save(new(bytes.Buffer)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, op := range ops {
			t.Run(op.name, func(t *testing.T) {
				vmemtest.KeptAlive(t, newRing(t, d), func(r R) { op.run(t, r) })
			})
		}
	})
}

func TestShardedKeptAlive(t *testing.T) {
	keys, vals := kaKeys()
	// A Map on a pool holds nothing but its shards (no backstop of its
	// own): what must stay reachable while a call runs is the shardedMap
	// it forwards to, whose methods the calls below run.
	type SM = *shardedMap[uint64, uint64]
	type SB = *BTree[uint64, uint64]
	// The calls are those of the one-device tests, on a pool.
	mapOps := []struct {
		name string
		run  func(t *testing.T, m SM)
	}{
		{"GetBatch", func(t *testing.T, m SM) {
			got, found := make([]uint64, kaN), make([]bool, kaN)
			if err := m.GetBatch(keys, got, found); err != nil {
				t.Fatal(err)
			}
			kaCheck(t, got, found)
		}},
		{"GetMany", func(t *testing.T, m SM) {
			got, found := make([]uint64, kaN), make([]bool, kaN)
			m.getMany(keys, got, found)
			kaCheck(t, got, found)
		}},
		{"PutBatch", func(t *testing.T, m SM) {
			if err := m.PutBatch(keys, vals); err != nil {
				t.Fatal(err)
			}
		}},
		{"PutMany", func(t *testing.T, m SM) {
			if err := m.putMany(keys, vals); err != nil {
				t.Fatal(err)
			}
		}},
		{"All", func(t *testing.T, m SM) {
			if n := kaCount(m.All()); n != kaN {
				t.Fatalf("All gave %d entries, want %d", n, kaN)
			}
		}},
	}
	treeOps := []struct {
		name  string
		empty bool
		run   func(t *testing.T, bt SB)
	}{
		{"GetBatch", false, func(t *testing.T, bt SB) {
			got, found := make([]uint64, kaN), make([]bool, kaN)
			if err := bt.GetBatch(keys, got, found); err != nil {
				t.Fatal(err)
			}
			kaCheck(t, got, found)
		}},
		{"BulkLoad", true, func(t *testing.T, bt SB) {
			if err := bt.BulkLoad(keys, vals); err != nil {
				t.Fatal(err)
			}
		}},
		{"All", false, func(t *testing.T, bt SB) {
			if n := kaCount(bt.All()); n != kaN {
				t.Fatalf("All gave %d entries, want %d", n, kaN)
			}
		}},
		{"Ascend", false, func(t *testing.T, bt SB) {
			if n := kaCount(bt.Ascend(keys[0])); n != kaN {
				t.Fatalf("Ascend gave %d entries, want %d", n, kaN)
			}
		}},
		{"Descend", false, func(t *testing.T, bt SB) {
			if n := kaCount(bt.Descend(keys[kaN-1])); n != kaN {
				t.Fatalf("Descend gave %d entries, want %d", n, kaN)
			}
		}},
	}
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		newMap := func(t *testing.T) SM {
			m, err := NewMap[uint64, uint64](p)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.PutBatch(keys, vals); err != nil {
				t.Fatal(err)
			}
			return m.sh
		}
		newTree := func(t *testing.T, empty bool) SB {
			bt, err := NewBTreeOrdered[uint64, uint64](p)
			if err != nil {
				t.Fatal(err)
			}
			if !empty {
				if err := bt.BulkLoad(keys, vals); err != nil {
					t.Fatal(err)
				}
			}
			return bt
		}
		waits := 0
		for _, op := range mapOps {
			t.Run("Map/"+op.name, func(t *testing.T) {
				waits += vmemtest.KeptAlive(t, newMap(t), func(m SM) { op.run(t, m) })
			})
		}
		for _, op := range treeOps {
			t.Run("BTree/"+op.name, func(t *testing.T) {
				waits += vmemtest.KeptAlive(t, newTree(t, op.empty), func(bt SB) { op.run(t, bt) })
			})
		}
		kaWaited(t, kdev(p.Devices()[0]).KernelsAvailable(), waits)
	})
}

// kaCount counts the entries of a sequence.
func kaCount[K, V any](seq func(yield func(K, V) bool)) int {
	n := 0
	for range seq {
		n++
	}
	return n
}
