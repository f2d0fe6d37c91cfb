package collections

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/par"
)

// The producer side: Push, PushBatch and the staging ring. See ring.go for
// the design and the ordering argument.

// Push adds v at the back. By default it returns ErrFull when the
// ring is full (nothing changes); with WithOverwrite(true) it drops the oldest
// element instead. After Close it returns vmem.ErrClosed.
//
// v is visible to the consumer (Pop, PopBatch, Peek, All, Len) when Push
// returns: the index moves with a release store after v's bytes are in
// place.
func (r *Ring[T]) Push(v T) error {
	if err := r.ringUsable(); err != nil {
		return err
	}
	p := &r.p
	t := p.tail
	if !r.overwrite && t-p.headSeen >= r.capacity {
		// Reload head only when the stale copy says full: the consumer's
		// line is then touched once per lap, not once per push.
		p.headSeen = r.head.Load()
		if t-p.headSeen >= r.capacity {
			// The consumer may be waiting for what we hold: publish it.
			r.publishTail()
			return ErrFull
		}
	}
	sz := r.size
	if sz == 0 || sz > ringLine {
		return r.pushLarge(&v)
	}
	g := t * sz
	L := g / ringLine
	o := g % ringLine
	if o == 0 {
		r.claim(L, L)
	} else if o+sz > ringLine {
		r.claim(L+1, L)
	}
	if so := g & r.stageMask; so+sz <= r.stageMask+1 {
		*(*T)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.stage)), so)) = v
	} else {
		r.stageWrite(g, ringBytesOf(&v, 1))
	}
	p.tail = t + 1
	if o+sz >= ringLine && L+1-p.durable >= r.stageK/2 {
		// Half the staging ring holds completed lines: write them out (and
		// publish tail, before the burst).
		r.flush(L + 1)
	} else {
		// Publish at once with a release store (a plain store on amd64:
		// sync/atomic's Store would be a locked instruction, dearer than
		// the rest of the push).
		lineio.StoreRelease(ringTailWord(&r.tail), t+1)
		p.pub = t + 1
		p.served = r.want.Load()
	}
	return nil
}

// ringTailWord is the uint64 inside tail, for lineio.StoreRelease; the
// consumer loads it with tail.Load.
func ringTailWord(a *atomic.Uint64) *uint64 { return (*uint64)(unsafe.Pointer(a)) }

// publishTail makes every element pushed so far visible to the consumer.
func (r *Ring[T]) publishTail() {
	if p := &r.p; p.pub != p.tail {
		r.tail.Store(p.tail)
		p.pub = p.tail
	}
}

// Flush publishes every element pushed so far: the consumer sees them when
// Flush returns. It is a producer call; it writes nothing to device memory
// (published elements still in host staging are read from there). Call it
// when the producer stops pushing for a while, as with a bufio.Writer. After
// Close it returns vmem.ErrClosed.
func (r *Ring[T]) Flush() error {
	if err := r.ringUsable(); err != nil {
		return err
	}
	r.publishTail()
	return nil
}

// afterPush publishes at the end of a push outside Push's fast path.
func (r *Ring[T]) afterPush() {
	p := &r.p
	w := r.want.Load()
	r.publishTail()
	p.served = w
}

// pushLarge pushes one element of zero size or of more than a line. The
// caller has checked for room.
func (r *Ring[T]) pushLarge(v *T) error {
	p := &r.p
	if r.size == 0 {
		p.tail++
		r.afterPush()
		return nil
	}
	// Copy through a producer-owned buffer so that v does not escape (the
	// bulk path may hand its source to other goroutines).
	if uint64(len(p.scratch)) < r.size {
		p.scratch = make([]byte, r.size)
	}
	copy(p.scratch, ringBytesOf(v, 1))
	r.pushBytes(p.scratch[:r.size], 1)
	if r.overwrite && p.floor+r.capacity > p.pub {
		// pushBytes dropped the oldest (floor) before writing over it in
		// VRAM: publish the element that replaces it too, so that the
		// consumer never sees fewer than Cap elements in a full ring.
		r.publishTail()
	}
	r.afterPush()
	return nil
}

// PushBatch adds vs at the back, in order, and returns how many it added.
// By default it adds as many as fit and returns ErrFull if that is
// fewer than len(vs); with WithOverwrite(true) it adds them all, dropping the
// oldest elements (and, when len(vs) exceeds Cap, the first of vs) to make
// room. Whole lines go from vs to VRAM with non-temporal stores (from
// several goroutines for runs over 512 KiB), the fast way to fill a ring.
// PushBatch publishes: what it added, and every earlier Push, is visible to
// the consumer when it returns. After Close it returns vmem.ErrClosed.
func (r *Ring[T]) PushBatch(vs []T) (int, error) {
	if err := r.ringUsable(); err != nil {
		return 0, err
	}
	if len(vs) == 0 {
		r.publishTail()
		return 0, nil
	}
	p := &r.p
	total := len(vs)
	n := uint64(total)
	if !r.overwrite {
		if free := r.capacity - (p.tail - p.headSeen); free < n {
			p.headSeen = r.head.Load()
		}
		n = min(n, r.capacity-(p.tail-p.headSeen))
		if n == 0 {
			r.publishTail()
			return 0, ErrFull
		}
	} else if n > r.capacity {
		r.skip(n - r.capacity)
		vs = vs[n-r.capacity:]
		n = r.capacity
	}
	if r.size == 0 {
		p.tail += n
	} else {
		r.pushBytes(ringBytesOf(unsafe.SliceData(vs), int(n)), n)
	}
	r.publishTail()
	if n < uint64(total) && !r.overwrite {
		return int(n), ErrFull
	}
	return total, nil
}

// pushBytes writes the n elements in src (n*size bytes) after the producer's
// position and advances p.tail; the caller publishes r.tail. There is room.
func (r *Ring[T]) pushBytes(src []byte, n uint64) {
	p := &r.p
	t := p.tail
	g := t * r.size
	end := g + uint64(len(src))
	if r.overwrite && t+n > r.phys {
		// The lines written below may replace elements up to t+n-phys-1
		// before the new tail drops them: drop them first.
		if f := t + n - r.phys; f > p.floor {
			r.floor.Store(f)
			p.floor = f
			r.dropFence()
		}
	}
	// The rest of the partial line in staging, if any (its slot is
	// claimed). A line completed here waits in staging with the others.
	if o := g % ringLine; o != 0 {
		k := min(ringLine-o, end-g)
		r.stageWrite(g, src[:k])
		g += k
		src = src[k:]
		if g%ringLine == 0 && g/ringLine-p.durable >= r.stageK/2 {
			r.flush(g / ringLine) // floor, stored above, covers these lines
		}
	}
	// Whole lines straight from the caller's memory to the ring, after the
	// lines waiting in staging, then one fence for all of them (publish),
	// before the tail can cover them.
	if full := (end - g) / ringLine; full > 0 {
		if r.overwrite {
			r.dropFence()
		}
		r.emitLines(p.durable, g/ringLine)
		r.storeLines(g/ringLine, src[:full*ringLine])
		g += full * ringLine
		src = src[full*ringLine:]
		r.publish(g / ringLine)
	}
	// The ragged end goes to staging.
	if len(src) > 0 {
		L := g / ringLine
		r.claim(L, L)
		r.stageWrite(g, src)
	}
	p.tail = t + n
}

// skip advances the producer by k elements without writing them: in
// overwrite mode, the elements of a batch longer than the ring that would be
// dropped at once. Everything before the new position is dropped first.
func (r *Ring[T]) skip(k uint64) {
	p := &r.p
	t, nt := p.tail, p.tail+k
	if nt > p.floor {
		r.floor.Store(nt)
		p.floor = nt
		r.dropFence()
	}
	if r.size == 0 {
		p.tail = nt
		return
	}
	g, ng := t*r.size, nt*r.size
	L, nL := g/ringLine, ng/ringLine
	if nL != L {
		// Lines before nL hold only dropped elements: those complete are
		// written out, the others never will be, and none needs staging.
		r.emitLines(p.durable, L)
		r.publish(nL)
	}
	if ng%ringLine != 0 && (g%ringLine == 0 || nL != L) {
		r.claim(nL, nL)
	}
	p.tail = nt
}

// claim prepares staging slot L mod K for line L, the producer's next new
// line; lines below done are complete. The slot last held line L-K: that
// line must be durable (so the consumer reads it from VRAM), and the
// consumer must not be reading it from staging right now.
func (r *Ring[T]) claim(L, done uint64) {
	if L-r.p.durable >= r.stageK {
		r.flush(done)
	}
	for {
		// announce is A+1 while the consumer copies staged lines from A on.
		a := r.announce.Load()
		if a == 0 || a-1+r.stageK > L {
			return
		}
		// The consumer saw L-K not yet durable and is copying it: wait for
		// it to finish (a few nanoseconds unless it was descheduled).
		runtime.Gosched()
	}
}

// stageWrite copies b into the staging ring at stream offset g.
func (r *Ring[T]) stageWrite(g uint64, b []byte) {
	st := r.stageBytes()
	o := g & r.stageMask
	k := copy(st[o:], b)
	copy(st, b[k:])
}

// flush writes the completed lines waiting in staging, up to line upTo,
// to the ring and publishes them. It first publishes tail: in overwrite
// mode the published tail must drop whatever the lines replace (every
// element in them is already pushed, so the new tail covers them), and the
// XCHG is cheap beside the burst.
func (r *Ring[T]) flush(upTo uint64) {
	r.publishTail()
	if r.overwrite {
		r.dropFence()
	}
	r.emitLines(r.p.durable, upTo)
	r.publish(upTo)
}

// emitLines writes lines [from, to) from their staging slots to the ring
// with NT stores, in as few runs as the ring's segments and the staging
// ring's wrap allow. Writing lines in bursts, rather than each as it
// completes, matters: the atomic store of every Push is a locked
// instruction, which waits until earlier NT stores have left the core, so
// a line written per completion would cost a full drain every few pushes.
func (r *Ring[T]) emitLines(from, to uint64) {
	st := r.stageBytes()
	for L := from; L < to; {
		slot := L & (r.stageK - 1)
		dst, n := r.lineRun(L, min(to-L, r.stageK-slot))
		src := st[slot*ringLine : (slot+n)*ringLine]
		if r.wc {
			lineio.StoreLines(dst, src)
		} else {
			copy(unsafe.Slice((*byte)(dst), len(src)), src)
		}
		L += n
	}
}

// dropFence orders the store that drops elements (tail or floor) before
// the stores that overwrite them. SFENCE for NT stores: whether a locked
// instruction alone orders later NT stores is not something Intel's manual
// promises. Plain stores on x86 need nothing.
func (r *Ring[T]) dropFence() {
	switch {
	case r.wc:
		lineio.Fence()
	case !ringTSO:
		lineio.FullFence()
	}
}

// publish fences and stores durable = upTo: every line below upTo is in
// the ring (or holds only dropped elements).
func (r *Ring[T]) publish(upTo uint64) {
	if upTo <= r.p.durable {
		return
	}
	if r.wc {
		// NT stores are weakly ordered: without SFENCE the consumer could
		// see durable move before the lines arrive.
		lineio.Fence()
	}
	// On the host backend the atomic store orders the plain stores before it.
	r.durable.Store(upTo)
	r.p.durable = upTo
}

// storeLines writes whole lines from src to the ring from global line L on.
func (r *Ring[T]) storeLines(L uint64, src []byte) {
	for len(src) > 0 {
		dst, run := r.lineRun(L, uint64(len(src))/ringLine)
		b := src[:run*ringLine]
		switch {
		case !r.wc:
			copy(unsafe.Slice((*byte)(dst), len(b)), b)
		case uint64(len(b)) >= r.parMin:
			// Sequential NT stores from one core fall short of the link's
			// limit, which several reach (docs/physics.md): a long run is
			// split over par's kept workers, in whole-line parts of at
			// least half of parMin.
			par.Copy(dst, unsafe.Pointer(unsafe.SliceData(b)), uint64(len(b)), max(r.parMin/2, ringLine), ringStoreWorkers, ringStoreFenced)
		default:
			lineio.StoreLines(dst, b)
		}
		L += run
		src = src[run*ringLine:]
	}
}

// ringStoreFenced writes a part of a long run of whole lines. Each part
// fences its own stores (SFENCE covers only its own core) before it
// reports done; publish fences again on the caller's core.
func ringStoreFenced(dst, src unsafe.Pointer, n uint64) {
	lineio.StoreLines(dst, unsafe.Slice((*byte)(src), n))
	lineio.Fence()
}
