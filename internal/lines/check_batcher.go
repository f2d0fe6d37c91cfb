package lines

import "fmt"

// check walks the batcher's table and slots and panics on any broken
// invariant. Tests call it directly; with -tags invariants every operation
// calls it.
func (b *Batcher) check() {
	fail := func(format string, args ...any) {
		panic(fmt.Sprintf("lines: Batcher invariant: "+format, args...))
	}
	if b.n < 0 || b.n > b.maxLines {
		fail("n = %d outside [0, %d]", b.n, b.maxLines)
	}
	lines := (uint64(b.size) + LineSize - 1) / LineSize
	used := 0
	tm := uint32(len(b.table) - 1)
	for i, e := range b.table {
		if e == 0 {
			continue
		}
		used++
		s := int(e&entrySlotMask) - 1
		if s < 0 || s >= b.n {
			fail("table[%d] names slot %d of %d", i, s, b.n)
		}
		if e>>entrySlotBits != b.line[s] {
			fail("table[%d] holds line %d, slot %d has line %d", i, e>>entrySlotBits, s, b.line[s])
		}
		if b.pos[s] != uint32(i) {
			fail("slot %d says position %d, found at %d", s, b.pos[s], i)
		}
		// Linear probing: no empty position between the home of the key
		// and where it sits, or find would stop short.
		for j := uint32((b.line[s] * hashMul) >> b.shift); j != uint32(i); j = (j + 1) & tm {
			if b.table[j] == 0 {
				fail("line %d at %d is unreachable: empty position %d on its probe path", b.line[s], i, j)
			}
		}
	}
	if used != b.n {
		fail("table holds %d entries, n = %d", used, b.n)
	}
	seen := make(map[uint64]bool, b.n)
	for s := range b.n {
		if b.table[b.pos[s]]&entrySlotMask != uint64(s+1) {
			fail("slot %d not at its position %d", s, b.pos[s])
		}
		if b.mask[s] == 0 {
			fail("slot %d (line %d) pending with nothing dirty", s, b.line[s])
		}
		if b.line[s] >= lines {
			fail("slot %d: line %d outside the region's %d lines", s, b.line[s], lines)
		}
		if seen[b.line[s]] {
			fail("line %d pending twice", b.line[s])
		}
		seen[b.line[s]] = true
	}
}
