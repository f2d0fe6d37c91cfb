package collections

import (
	"iter"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/waithook"
	"github.com/govram/govram/vmem"
)

// The consumer side: Pop, PopBatch, Peek, All and the reads beneath them.
// See ring.go for the design and the ordering argument.

// Pop removes and returns the oldest element; ok is false when the ring is
// empty. It reads from a window of lines filled by streaming loads, so
// consecutive pops of small elements share one load. It panics after Close,
// and once the device is lost (an error matching vmem.ErrDeviceLost; PopBatch
// returns it instead).
func (r *Ring[T]) Pop() (v T, ok bool) {
	r.mustOpen()
	r.readCheck("Pop")
	for {
		h, t := r.cstart(1)
		if h >= t {
			return v, false
		}
		v = r.readOne(h)
		if r.overwrite && h < r.dropFloor(r.tail.Load()) {
			continue // overwritten while we read it: take the new oldest
		}
		r.c.head = h + 1
		r.head.Store(h + 1)
		return v, true
	}
}

// Peek returns the oldest element without removing it; ok is false when
// the ring is empty. It panics after Close, and once the device is lost.
func (r *Ring[T]) Peek() (v T, ok bool) {
	r.mustOpen()
	r.readCheck("Peek")
	for {
		h, t := r.cstart(1)
		if h >= t {
			return v, false
		}
		v = r.readOne(h)
		if r.overwrite && h < r.dropFloor(r.tail.Load()) {
			continue
		}
		return v, true
	}
}

// PopBatch removes up to len(dst) of the oldest elements into dst, oldest
// first, and returns how many. Long runs are read by DMA (through pinned
// staging on a GPU), short ones with streaming loads. On error
// (vmem.ErrDeviceLost) nothing is removed. After Close it returns
// vmem.ErrClosed.
func (r *Ring[T]) PopBatch(dst []T) (int, error) {
	if err := r.ringUsable(); err != nil {
		return 0, err
	}
	for {
		h, t := r.cstart(uint64(len(dst)))
		if h >= t || len(dst) == 0 {
			return 0, nil
		}
		n := min(uint64(len(dst)), t-h)
		if r.size != 0 {
			if err := r.readElems(dst[:n], h); err != nil {
				return 0, err
			}
		}
		if r.overwrite {
			if lo := r.dropFloor(r.tail.Load()); lo > h {
				// The producer overtook the front of what we read: those
				// elements are gone; the rest were intact when read.
				k := lo - h
				if k >= n {
					continue
				}
				copy(dst, dst[k:n])
				h, n = lo, n-k
			}
		}
		r.c.head = h + n
		r.head.Store(h + n)
		return int(n), nil
	}
}

// All returns the elements from oldest to newest with their position (0 is
// the oldest when All was called), without removing them. It reads in
// large runs (by DMA on a GPU). It is a consumer call: elements popped
// during the iteration, or overwritten by a concurrent producer, are
// skipped; elements pushed after the call began are not included. An error
// stops the iteration and is reported by Err.
func (r *Ring[T]) All() iter.Seq2[int, T] {
	return func(yield func(int, T) bool) {
		defer runtime.KeepAlive(r) // the ring's memory is read until the end
		c := &r.c
		if r.closed {
			r.noteErr(vmem.ErrClosed)
			return
		}
		r.readCheck("All")
		h0, t := r.cstart(math.MaxUint64)
		if h0 >= t {
			return
		}
		per := t - h0
		if r.size > 0 {
			per = min(per, max(ringAllChunk/r.size, 1))
		}
		buf, free := r.allBuffer(per)
		defer free()
		for i := h0; i < t; {
			k := min(per, t-i)
			if r.size != 0 {
				if err := r.readElems(buf[:k], i); err != nil {
					r.noteErr(err)
					r.readCheck("All") // a lost device did not run out of elements
					return
				}
			}
			lo := c.head
			if r.overwrite {
				lo = max(lo, r.dropFloor(r.tail.Load()))
			}
			j := uint64(0)
			if lo > i {
				j = min(lo-i, k)
			}
			for ; j < k; j++ {
				if !yield(int(i+j-h0), buf[j]) {
					return
				}
			}
			i += k
		}
	}
}

// Err returns the first error that stopped an All, the ring's one method
// without an error result that meets the device (nil if none did), as a
// Map's and a BTree's Err return the first error their methods without an
// error result met; Clear forgets it. Like All, it is a consumer call.
func (r *Ring[T]) Err() error { return r.c.err }

// noteErr keeps err for Err unless an earlier error is kept.
func (r *Ring[T]) noteErr(err error) {
	if r.c.err == nil {
		r.c.err = err
	}
}

// allBuffer returns a buffer for n elements: pinned host memory when reads
// that long go by DMA (no staging copy), else the Go heap.
func (r *Ring[T]) allBuffer(n uint64) ([]T, func()) {
	if r.wc && n*r.size >= r.dmaMin {
		if b, err := kdev(r.dev).Alloc(block.Host, n*r.size, ringLine); err == nil {
			return unsafe.Slice((*T)(b.Ptr()), n), func() { kdev(r.dev).Free(b) }
		}
	}
	return make([]T, n), func() {}
}

// cstart returns the oldest live element and a recent tail, reloading the
// tail when the one cached shows fewer than want elements. When it finds
// the ring empty and want > 0 it asks the producer to publish its next push
// at once (see "Publishing" in ring.go).
func (r *Ring[T]) cstart(want uint64) (h, t uint64) {
	c := &r.c
	h = c.head
	if !r.overwrite {
		t = c.tail
		if t-h < want {
			t = r.tail.Load()
			c.tail = t
		}
	} else {
		t = r.tail.Load()
		c.tail = t
		h = max(h, r.dropFloor(t))
	}
	if h >= t && want > 0 && c.wanted != t+1 {
		// One store per empty tail seen, not per poll of an empty ring.
		c.wanted = t + 1
		r.want.Store(t + 1)
	}
	return h, t
}

// readOne reads element h (pushed, and not consumed).
func (r *Ring[T]) readOne(h uint64) (v T) {
	if r.size == 0 {
		return v
	}
	c := &r.c
	g := h * r.size
	if g >= c.winStart && g+r.size <= c.winEnd {
		return *(*T)(unsafe.Add(unsafe.Pointer(&c.win), g-c.winStart))
	}
	if r.refill(g, r.size) {
		return *(*T)(unsafe.Add(unsafe.Pointer(&c.win), g-c.winStart))
	}
	r.readStream(ringBytesOf(&v, 1), g)
	return v
}

// readElems reads elements [h, h+len(dst)) into dst.
func (r *Ring[T]) readElems(dst []T, h uint64) error {
	c := &r.c
	b := ringBytesOf(unsafe.SliceData(dst), len(dst))
	g := h * r.size
	n := uint64(len(b))
	if (g >= c.winStart && g+n <= c.winEnd) || r.refill(g, n) {
		copy(b, unsafe.Slice((*byte)(unsafe.Pointer(&c.win)), len(c.win)*8)[g-c.winStart:])
		return nil
	}
	return r.readBulk(b, g)
}

// refill loads the window with the pushed bytes from the line holding
// stream byte g on (at most ringWinLines lines), if the n bytes from g fit
// in it: durable lines from the ring, the others from staging. Data that
// has been pushed never changes (until its slot is reused after it is
// consumed or dropped), so the window stays valid while the consumer works
// through it.
func (r *Ring[T]) refill(g, n uint64) bool {
	c := &r.c
	la, lb := g/ringLine, (g+n-1)/ringLine
	if lb-la >= ringWinLines {
		return false
	}
	start := la * ringLine
	end := min(start+ringWinLines*ringLine, c.tail*r.size)
	win := unsafe.Slice((*byte)(unsafe.Pointer(&c.win)), len(c.win)*8)
	split := r.readStaged(win[:end-start], start)
	if split > start {
		// Whole lines: the last one is durable, so all of it is there.
		buf := win[:(split-start+ringLine-1)/ringLine*ringLine]
		if r.wc {
			// WC memory may be read speculatively: the loads must not run
			// ahead of the durable load that says the lines are there.
			lineio.FullFence()
		}
		for L, off := la, uint64(0); off < uint64(len(buf)); {
			src, run := r.lineRun(L, (uint64(len(buf))-off)/ringLine)
			part := buf[off : off+run*ringLine]
			if r.wc {
				lineio.LoadLines(part, src)
			} else {
				copy(part, unsafe.Slice((*byte)(src), len(part)))
			}
			L += run
			off += run * ringLine
		}
		r.orderReads()
	}
	c.winStart, c.winEnd = start, end
	return true
}

// orderReads makes the ring reads before it complete before the loads of
// tail and floor that validate them in overwrite mode (streaming loads are
// weakly ordered; so are all loads off x86).
func (r *Ring[T]) orderReads() {
	if r.overwrite && (r.wc || !ringTSO) {
		lineio.FullFence()
	}
}

// readStream reads stream bytes [g, g+len(dst)) with CPU loads only.
func (r *Ring[T]) readStream(dst []byte, g uint64) {
	if split := r.readStaged(dst, g); split > g {
		r.readRing(dst[:split-g], g)
	}
}

// readBulk reads stream bytes [g, g+len(dst)), the part in the ring by DMA
// when it is long.
func (r *Ring[T]) readBulk(dst []byte, g uint64) error {
	split := r.readStaged(dst, g)
	if split == g {
		return nil
	}
	part := dst[:split-g]
	n := uint64(len(part))
	if n < r.dmaMin {
		r.readRing(part, g)
		return nil
	}
	if r.wc && n >= 2*ringDMAPiece && ringDMAWorkers > 1 {
		if err := r.readPieces(part, g); err != nil {
			return err
		}
		r.orderReads()
		return nil
	}
	for off := uint64(0); off < n; {
		seg, so, run := r.byteRun(g+off, n-off)
		if err := kdev(r.dev).Read(part[off:off+run], seg.blk, so); err != nil {
			return err
		}
		off += run
	}
	r.orderReads()
	return nil
}

// readPieces reads stream bytes [g, g+len(dst)), all in durable lines, by
// DMA in pieces of ringDMAPiece, ringDMAWorkers of them in flight: each
// goroutine takes the next piece and reads it with the plumbing's Read (direct DMA
// into dst when dst lies in pinned memory, else through vmem's pinned
// staging and a parallel copy), so the copy engine always has a piece
// queued, and the CPU copies of one piece overlap the DMA of the others.
func (r *Ring[T]) readPieces(dst []byte, g uint64) error {
	type piece struct {
		seg     *ringSeg
		off, at uint64 // in the segment, in dst
		n       uint64
	}
	var pieces []piece
	n := uint64(len(dst))
	for at := uint64(0); at < n; {
		seg, so, run := r.byteRun(g+at, min(n-at, ringDMAPiece))
		pieces = append(pieces, piece{seg, so, at, run})
		at += run
	}
	var next atomic.Int64
	var failed atomic.Bool
	errs := make([]error, len(pieces))
	var wg sync.WaitGroup
	work := func() {
		for !failed.Load() {
			i := int(next.Add(1) - 1)
			if i >= len(pieces) {
				return
			}
			pc := pieces[i]
			if err := kdev(r.dev).Read(dst[pc.at:pc.at+pc.n], pc.seg.blk, pc.off); err != nil {
				errs[i] = err
				failed.Store(true)
			}
		}
	}
	// Not par.Run nor par.Go: the pieces wait on DMA, which would hold
	// par's kept workers from the copies inside the plumbing's Read (vmem's, on
	// par.Run), and par.Go would leave the caller idle and start a
	// goroutine more; here the caller takes pieces as one of the workers.
	for range min(ringDMAWorkers, len(pieces)) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	waithook.Run()
	wg.Wait()
	runtime.KeepAlive(r)
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// readStaged copies the part of stream bytes [g, g+len(dst)) that lies in
// lines not yet durable from the staging ring, and returns where that part
// begins: the caller reads [g, split) from the ring.
func (r *Ring[T]) readStaged(dst []byte, g uint64) (split uint64) {
	end := g + uint64(len(dst))
	d := r.durable.Load()
	if (end-1)/ringLine < d {
		return end
	}
	// Announce the first staged line we may read, then look again: lines
	// that became durable meanwhile may already have lost their slot, so
	// they are read from the ring; the others keep theirs until we withdraw
	// the announcement (see claim).
	a := max(g/ringLine, d)
	r.announce.Store(a + 1)
	split = max(max(a, r.durable.Load())*ringLine, g)
	if ringHookStaged != nil {
		ringHookStaged()
	}
	if split < end {
		r.stageRead(dst[split-g:], split)
	}
	r.announce.Store(0)
	return min(split, end)
}

// ringHookStaged, when set (by tests), runs while the consumer holds an
// announcement, to widen the window in which the producer may want the slot.
var ringHookStaged func()

// stageRead copies stream bytes [g, g+len(b)) from the staging ring.
func (r *Ring[T]) stageRead(b []byte, g uint64) {
	st := r.stageBytes()
	k := copy(b, st[g&r.stageMask:])
	copy(b[k:], st)
}

// readRing reads stream bytes [g, g+len(dst)), all in durable lines, from
// the ring with CPU loads: streaming loads on VRAM.
func (r *Ring[T]) readRing(dst []byte, g uint64) {
	n := uint64(len(dst))
	if r.wc {
		lineio.FullFence() // as in refill
	}
	for off := uint64(0); off < n; {
		seg, so, run := r.byteRun(g+off, n-off)
		src := unsafe.Add(seg.base, so)
		if r.wc {
			lineio.CopyUnfenced(unsafe.Pointer(&dst[off]), src, uintptr(run))
		} else {
			copy(dst[off:off+run], unsafe.Slice((*byte)(src), run))
		}
		off += run
	}
	if r.wc && !r.overwrite {
		// Copy writes whole lines of dst with NT stores: make them visible
		// to whatever goroutine the caller hands dst to.
		lineio.Fence()
	}
	r.orderReads()
}
