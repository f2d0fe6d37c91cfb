package main

// The naive path for each container: the same data in one mapped block of
// the device, read and written with plain Go loads and stores, the way a
// program would use VRAM if it simply mapped it. On the host backend this
// is ordinary memory and the naive path is as fast as the heap; on a GPU
// every plain load from mapped VRAM costs about 1.5 µs (docs/benchmarks.md).

import (
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/vmem"
)

// naiveMap is an open-addressing hash table of uint64 keys and values with
// linear probing, keys and values interleaved so a probe reads one line.
// Key 0 marks an empty slot (the suites' keys are never 0).
type naiveMap struct {
	blk   block.Block
	slots []uint64 // key, value, key, value, ...
	mask  uint64
	n     int
}

// newNaiveMap builds a table of capacity entries in host memory with
// fill, then copies it into mapped memory in one sequential pass (plain
// loads of VRAM while building would cost minutes at large sizes; the
// cases then use the mapped copy).
func newNaiveMap(dev *vmem.Device, capacity int, fill func(put func(k, v uint64))) (*naiveMap, error) {
	size := uint64(16)
	for size < 2*uint64(capacity) {
		size *= 2
	}
	m := &naiveMap{slots: make([]uint64, 2*size), mask: size - 1}
	fill(m.put)
	blk, u, err := mappedU64s(dev, int(2*size))
	if err != nil {
		return nil, err
	}
	copy(u, m.slots)
	m.blk, m.slots = blk, u
	return m, nil
}

func (m *naiveMap) get(k uint64) (uint64, bool) {
	for i := mix64(k) & m.mask; ; i = (i + 1) & m.mask {
		switch m.slots[2*i] {
		case k:
			return m.slots[2*i+1], true
		case 0:
			return 0, false
		}
	}
}

// put stores v under k; the table is sized for the suite's entries and
// never grows.
func (m *naiveMap) put(k, v uint64) {
	for i := mix64(k) & m.mask; ; i = (i + 1) & m.mask {
		switch m.slots[2*i] {
		case k:
			m.slots[2*i+1] = v
			return
		case 0:
			m.slots[2*i], m.slots[2*i+1] = k, v
			m.n++
			return
		}
	}
}

// del removes k with backward-shift deletion (no tombstones).
func (m *naiveMap) del(k uint64) bool {
	i := mix64(k) & m.mask
	for {
		switch m.slots[2*i] {
		case 0:
			return false
		case k:
		default:
			i = (i + 1) & m.mask
			continue
		}
		break
	}
	m.n--
	j := i
	for {
		j = (j + 1) & m.mask
		kj := m.slots[2*j]
		if kj == 0 {
			break
		}
		home := mix64(kj) & m.mask
		// Move kj back into the hole at i unless its home lies in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			m.slots[2*i], m.slots[2*i+1] = kj, m.slots[2*j+1]
			i = j
		}
	}
	m.slots[2*i], m.slots[2*i+1] = 0, 0
	return true
}

func (m *naiveMap) close(dev *vmem.Device) error { return kern.Of(dev).Free(m.blk) }
