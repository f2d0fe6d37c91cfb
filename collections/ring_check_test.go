package collections

import (
	"bytes"
	"fmt"
	"unsafe"

	"github.com/govram/govram/internal/lineio"
)

// check walks the ring's state and returns the first broken invariant. It
// must run with neither side in a call (tests call it between operations,
// with -tags invariants after every one). It reads the ring with plain
// loads: slow on VRAM, which is fine for a check.
func (r *Ring[T]) check() error {
	if r.closed {
		return nil
	}
	if r.wc {
		lineio.Fence() // so that plain loads see the lines stored so far
	}
	p, c := &r.p, &r.c
	t, h, d, f := r.tail.Load(), r.head.Load(), r.durable.Load(), r.floor.Load()
	switch {
	case t != p.pub:
		return fmt.Errorf("ring: tail %d, producer's copy %d", t, p.pub)
	case t > p.tail || p.tail-t >= ringPubEvery:
		return fmt.Errorf("ring: tail %d published, %d pushed", t, p.tail)
	case r.want.Load() > t+1 || c.wanted != r.want.Load():
		return fmt.Errorf("ring: want %d (consumer's copy %d), tail %d", r.want.Load(), c.wanted, t)
	case h != c.head:
		return fmt.Errorf("ring: head %d, consumer's copy %d", h, c.head)
	case d != p.durable:
		return fmt.Errorf("ring: durable %d, producer's copy %d", d, p.durable)
	case f != p.floor:
		return fmt.Errorf("ring: floor %d, producer's copy %d", f, p.floor)
	case r.announce.Load() != 0:
		return fmt.Errorf("ring: announce %d left set", r.announce.Load())
	case p.headSeen > h:
		return fmt.Errorf("ring: producer saw head %d beyond head %d", p.headSeen, h)
	case c.tail > t:
		return fmt.Errorf("ring: consumer saw tail %d beyond tail %d", c.tail, t)
	case f > t:
		return fmt.Errorf("ring: floor %d beyond tail %d", f, t)
	}
	if !r.overwrite {
		if h > t || p.tail-h > r.capacity {
			return fmt.Errorf("ring: head %d, tail %d (%d pushed), capacity %d", h, t, p.tail, r.capacity)
		}
	} else if h > t {
		return fmt.Errorf("ring: head %d beyond tail %d", h, t)
	}
	if r.size == 0 {
		return nil
	}
	g := p.tail * r.size
	cur := g / ringLine // lines below cur are complete
	if d > cur {
		return fmt.Errorf("ring: durable %d beyond the %d complete lines", d, cur)
	}
	// Every line not yet durable must still have its staging slot, and the
	// complete ones wait for at most one burst.
	if open := (g + ringLine - 1) / ringLine; open-d > r.stageK {
		return fmt.Errorf("ring: lines [%d, %d) not durable, but only %d staging slots", d, open, r.stageK)
	}
	if cur-d > r.stageK/2 {
		return fmt.Errorf("ring: %d complete lines wait in staging (burst %d)", cur-d, r.stageK/2)
	}
	st := r.stageBytes()
	live := r.oldest(t, h)
	// The window holds pushed bytes, equal to the ring's (durable lines)
	// or staging's (the others) while they belong to live elements.
	if c.winEnd > c.winStart {
		if c.winStart%ringLine != 0 || c.winEnd-c.winStart > ringWinLines*ringLine {
			return fmt.Errorf("ring: window [%d, %d)", c.winStart, c.winEnd)
		}
		if c.winEnd > t*r.size {
			return fmt.Errorf("ring: window ends at byte %d, beyond the %d bytes published", c.winEnd, t*r.size)
		}
		win := unsafe.Slice((*byte)(unsafe.Pointer(&c.win)), len(c.win)*8)
		for L := c.winStart / ringLine; L*ringLine < c.winEnd; L++ {
			lo, hi := max(L*ringLine, live*r.size), min((L+1)*ringLine, c.winEnd)
			if lo >= hi {
				continue
			}
			var want []byte
			if L < d {
				want = r.lineBytes(L)
			} else {
				want = st[(L&(r.stageK-1))*ringLine:][:ringLine]
			}
			if !bytes.Equal(want[lo-L*ringLine:hi-L*ringLine], win[lo-c.winStart:hi-c.winStart]) {
				return fmt.Errorf("ring: window line %d is stale", L)
			}
		}
	}
	return nil
}

// oldest is the oldest live element given tail and head.
func (r *Ring[T]) oldest(t, h uint64) uint64 {
	if r.overwrite {
		return max(h, r.dropFloor(t))
	}
	return h
}

// lineBytes copies global line L out of the ring (plain loads, for checks).
func (r *Ring[T]) lineBytes(L uint64) []byte {
	p, _ := r.lineRun(L, 1)
	return bytes.Clone(unsafe.Slice((*byte)(p), ringLine))
}

// ringWithSegmentLines caps a segment at n lines (rounded down to a power
// of two): tests use tiny segments to cover segment boundaries.
func ringWithSegmentLines(n uint64) RingOption {
	return ringOpt(func(c *ringConfig) { c.segLines = n })
}

// ringWithParallelMin lowers the run length from which PushBatch stores
// from several goroutines, so tests cover that path.
func ringWithParallelMin(n uint64) RingOption {
	return ringOpt(func(c *ringConfig) { c.parallelMin = n })
}

// ringWithStageLines sets the number of staging slots: tests use 2 or 4 so
// that slot reuse, and the announce handshake guarding it, happen often.
func ringWithStageLines(n uint64) RingOption {
	return ringOpt(func(c *ringConfig) { c.stageLines = n })
}

// ringPubEvery: the check's bound on how far the published tail may lag
// the producer's.
const ringPubEvery = 16
