package strarena

import (
	"fmt"
	"runtime"
	"slices"
)

// Check walks the free lists and counters and returns an error describing
// the first broken invariant: every free block lies inside the used part of
// a segment, no two free blocks (or, in invariants builds, a free block and
// a live string) overlap, and live plus free space is exactly what has been
// carved from the segments.
func (a *Arena) Check() error {
	defer runtime.KeepAlive(a)
	return a.st.check()
}

func (st *state) mustCheck() {
	if err := st.check(); err != nil {
		panic("strarena: invariant broken: " + err.Error())
	}
}

func (st *state) check() error {
	if st.closed {
		return nil
	}
	if st.cur > len(st.segs) || (st.cur < len(st.segs) && st.bump > st.segs[st.cur].size) {
		return fmt.Errorf("cursor %d/%d past its segment (%d segments)", st.cur, st.bump, len(st.segs))
	}
	// used reports how far segment i has been carved.
	used := func(i int) uint64 {
		switch {
		case i < st.cur:
			return st.segs[i].size
		case i == st.cur:
			return st.bump
		}
		return 0
	}
	var carved uint64
	for i := range st.segs {
		carved += used(i)
	}
	type span struct{ off, n uint64 }
	var spans []span
	var freeB uint64
	for c := range st.free {
		sz := classUnits[c] << unitShift
		if (st.free[c].n > 0) != (st.nonEmp[c/64]&(1<<(c%64)) != 0) {
			return fmt.Errorf("class %d: non-empty bit disagrees with %d entries", c, st.free[c].n)
		}
		for _, off := range st.free[c].items() {
			if off%Unit != 0 {
				return fmt.Errorf("class %d: free offset %#x not aligned", c, off)
			}
			si := int(off >> segShift)
			if si >= len(st.segs) || off&segMask+sz > used(si) {
				return fmt.Errorf("class %d: free block [%#x, +%d) outside the carved space", c, off, sz)
			}
			spans = append(spans, span{off, sz})
			freeB += sz
		}
	}
	if freeB != st.freeB {
		return fmt.Errorf("free lists hold %d bytes, counter says %d", freeB, st.freeB)
	}
	if st.live+st.freeB+st.lost != carved {
		return fmt.Errorf("live %d + free %d + lost %d != carved %d", st.live, st.freeB, st.lost, carved)
	}
	if st.liveSet != nil {
		if len(st.liveSet) != st.nlive {
			return fmt.Errorf("%d live strings recorded, counter says %d", len(st.liveSet), st.nlive)
		}
		for off, n := range st.liveSet {
			spans = append(spans, span{off, classUnits[classOf((uint64(n)+Unit-1)>>unitShift)] << unitShift})
		}
	}
	slices.SortFunc(spans, func(x, y span) int {
		switch {
		case x.off < y.off:
			return -1
		case x.off > y.off:
			return 1
		}
		return 0
	})
	for i := 1; i < len(spans); i++ {
		if spans[i-1].off+spans[i-1].n > spans[i].off {
			return fmt.Errorf("blocks [%#x, +%d) and [%#x, +%d) overlap", spans[i-1].off, spans[i-1].n, spans[i].off, spans[i].n)
		}
	}
	return nil
}
