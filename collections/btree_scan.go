package collections

import (
	"iter"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/recs"
	"github.com/govram/govram/internal/waithook"
)

// Scans walk the bottom of the host index in key order and cut it into
// windows: runs of consecutive leaves that lie in one extent (an extent
// holds one key range, so a scan meets each extent's leaves together). A
// window's leaves are read at once: by one DMA of the span of slots they
// occupy, into a pinned host buffer, or by streaming loads of just their
// live lines when they are few (the access planner decides). Separator keys in
// the index say in advance which leaves a bounded scan needs, so no leaf
// past the range is read, and only the boundary leaves test keys against
// the bounds.

// btScan is a scan's reusable state.
type btScan struct {
	win  []btWin
	blk  block.Block // pinned host buffer, zero when buf is on the Go heap
	buf  []byte
	base unsafe.Pointer // leaf slot s of the window is at base + (s-min)*leafSize
	min  uint32
	lo   uint32   // lowest slot of the window
	sp   *btSplit // reading windows in parts (btree_split.go), once it has
}

type btWin struct {
	id   uint32
	cnt  int32
	full bool // every key of the leaf lies inside the scan's far bound
}

func (s *btScan) release(h *owner) {
	if !s.blk.IsZero() {
		h.Free(s.blk)
	}
	s.blk, s.buf = block.Block{}, nil
}

// btFirstWindow is how many leaves an open-ended scan reads first.
const btFirstWindow = 2

// btScanPool bounds the scan states a tree keeps for reuse, in all.
const btScanPool = 8

// btScanShards: the kept scan states are spread over this many lists,
// each with its own lock, so that scans from many goroutines do not queue
// on one lock for every window (they did: a profile of 16 goroutines'
// Ranges spent a fifth of its time there).
const btScanShards = 8

// btScans keeps scan states (and their pinned buffers) for reuse.
type btScans struct {
	kept   atomic.Int32 // states kept, over every list (at most btScanPool)
	closed bool         // set by drain under every list's lock: nothing is kept after
	lists  [btScanShards]struct {
		mu sync.Mutex
		s  []*btScan
		_  [24]byte // one line per list
	}
}

// get returns a kept state, or a new one. The first list is tried first,
// by get and put alike: one goroutine's scans then reuse the state (and the
// buffer lines) they used last, as one list did; concurrent scans that find
// it locked go on to the others from a random one.
func (p *btScans) get() *btScan {
	if p.kept.Load() == 0 {
		return &btScan{}
	}
	i0 := rand.Uint32()
	for i := range uint32(btScanShards + 1) {
		l := &p.lists[0]
		if i > 0 {
			l = &p.lists[(i0+i)%btScanShards]
		}
		if !l.mu.TryLock() {
			continue
		}
		if n := len(l.s); n > 0 {
			s := l.s[n-1]
			l.s = l.s[:n-1]
			p.kept.Add(-1)
			l.mu.Unlock()
			return s
		}
		l.mu.Unlock()
	}
	return &btScan{}
}

// put keeps s for reuse, or releases its buffer to h when enough are kept
// or the pool was drained (the tree is closing).
func (p *btScans) put(s *btScan, h *owner) {
	s.win = s.win[:0]
	if p.kept.Add(1) <= btScanPool {
		l := &p.lists[0]
		if !l.mu.TryLock() {
			l = &p.lists[rand.Uint32()%btScanShards]
			l.mu.Lock()
		}
		if !p.closed {
			l.s = append(l.s, s)
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
	}
	p.kept.Add(-1)
	s.release(h)
}

// drain releases every kept state's buffer to h; with close, states put
// afterwards are released at once (Close).
func (p *btScans) drain(h *owner, close bool) {
	for i := range p.lists {
		p.lists[i].mu.Lock()
	}
	p.closed = p.closed || close
	for i := range p.lists {
		l := &p.lists[i]
		for _, s := range l.s {
			s.release(h)
			p.kept.Add(-1)
		}
		l.s = nil
	}
	for i := range p.lists {
		p.lists[i].mu.Unlock()
	}
}

func (t *BTree[K, V]) getScan() *btScan { return t.scans.get() }

func (t *BTree[K, V]) putScan(s *btScan) { t.scans.put(s, t.mem) }

// buffer returns the scan's host buffer, at least need bytes (a power of
// two from 64 KiB up to a whole extent, kept for later windows). It is
// pinned host memory when the device has some, so DMA lands in it
// directly.
func (t *BTree[K, V]) buffer(s *btScan, need uintptr) []byte {
	if uintptr(len(s.buf)) >= need {
		return s.buf
	}
	size := max(uintptr(1)<<bits.Len64(uint64(need-1)), 64<<10)
	size = max(min(size, uintptr(t.g.extentLeaves())*t.g.leafSize), need)
	s.release(t.mem)
	if b, err := t.mem.Alloc(block.Host, uint64(size)); err == nil {
		s.blk, s.buf = b, b.Bytes()
	} else {
		s.buf = make([]byte, size)
	}
	return s.buf
}

// liveLines is how many lines hold the keys and values of cnt entries.
func (g *btGeom) liveLines(cnt int) int {
	if cnt == 0 {
		return 0
	}
	lines := func(lo, hi uintptr) int {
		return int(((hi+recs.LineSize-1)&^(recs.LineSize-1) - lo&^(recs.LineSize-1)) / recs.LineSize)
	}
	n := lines(g.keyAt(0), g.keyAt(cnt))
	if g.vs > 0 {
		n += lines(g.valAt(0), g.valAt(cnt-1)+g.vs)
	}
	return n
}

// windowSpan returns the live lines of the window's leaves and the bytes
// from the first to the last of their slots; it sets s.lo to the lowest
// slot.
func (t *BTree[K, V]) windowSpan(s *btScan) (lines int, span uintptr) {
	g := &t.g
	lo, hi := ^uint32(0), uint32(0)
	for _, w := range s.win {
		sl := w.id & g.xMask
		lo, hi = min(lo, sl), max(hi, sl)
		lines += g.liveLines(int(w.cnt))
	}
	s.lo = lo
	return lines, uintptr(hi-lo+1) * g.leafSize
}

// fetch makes the window's leaves readable through s.base. It returns false
// (and notes the error) if a transfer failed.
func (t *BTree[K, V]) fetch(s *btScan) bool {
	g := &t.g
	e := t.lv.extentOf(s.win[0].id)
	if c := t.lv.hot; c != nil && t.tierScans(e, s) {
		return t.fetchTiered(c, s)
	}
	if e.Kind == access.Direct {
		s.base, s.min = e.Base, 0
		return true
	}
	lines, span := t.windowSpan(s)
	lo := s.lo
	buf := t.buffer(s, span)
	s.base, s.min = unsafe.Pointer(unsafe.SliceData(buf)), lo
	if e.Kind == access.WC && planStreams(lines, int(span)) {
		// Windows are counted only where one may be cut: the count is two
		// locked instructions a window.
		count := btScanParts >= 2
		var r int32
		if count {
			r = t.reading.Add(1)
		}
		if !(len(s.win) <= 64 && splitWorth(e, len(s.win), lines, r) && t.streamSplit(e, s, btWinMask(len(s.win)))) {
			for _, w := range s.win {
				t.streamLeaf(e, w, buf[uintptr((w.id&g.xMask)-lo)*g.leafSize:])
			}
		}
		if count {
			t.reading.Add(-1)
		}
		return true
	}
	if e.Kind == access.DMA && len(s.win) == 1 {
		// One leaf: read its live bytes only.
		w := s.win[0]
		n := g.keyAt(int(w.cnt))
		if g.vs > 0 && w.cnt > 0 {
			n = max(n, g.valAt(int(w.cnt)-1)+g.vs)
		}
		if err := e.Read(buf[:n], uint64(uintptr(lo)*g.leafSize)); err != nil {
			t.noteErr(err)
			return false
		}
		return true
	}
	if err := kdev(t.dev).Read(buf[:span], e.blk, uint64(uintptr(lo)*g.leafSize)); err != nil {
		t.noteErr(err)
		return false
	}
	return true
}

// streamLeaf loads the live lines of one mapped-VRAM leaf into dst.
func (t *BTree[K, V]) streamLeaf(e *btExtent, w btWin, dst []byte) {
	g := &t.g
	if w.cnt == 0 {
		return
	}
	leaf := unsafe.Add(e.Base, uintptr(w.id&g.xMask)*g.leafSize)
	load := func(lo, hi uintptr) {
		lo &^= recs.LineSize - 1
		hi = (hi + recs.LineSize - 1) &^ (recs.LineSize - 1)
		lineio.LoadLines(dst[lo:hi], unsafe.Add(leaf, lo))
	}
	load(g.keyAt(0), g.keyAt(int(w.cnt)))
	if g.vs > 0 {
		load(g.valAt(0), g.valAt(int(w.cnt)-1)+g.vs)
	}
}

func (s *btScan) leaf(g *btGeom, id uint32) unsafe.Pointer {
	return unsafe.Add(s.base, uintptr(id&g.xMask-s.min)*g.leafSize)
}

// btCursor is a scan's position: leaf i of bottom node b (b is btNil when
// the scan has passed the last leaf it needs).
type btCursor struct {
	b uint32
	i int
}

// window fills s.win with the next leaves from cur that lie in one extent,
// ascending or descending, and moves cur past them. far is the bound the
// scan runs towards (hi ascending, lo descending; nil when open). It
// reports whether no leaf after the window can hold a wanted key.
func (t *BTree[K, V]) window(desc bool, s *btScan, cur *btCursor, far *K, limit int) (last bool) {
	x := &t.idx
	g := &t.g
	s.win = s.win[:0]
	ext := x.nodes[cur.b].kids[cur.i] >> g.xShift
	for len(s.win) < limit {
		nd := x.nodes[cur.b]
		id := nd.kids[cur.i]
		if id>>g.xShift != ext {
			return false
		}
		full := true
		var nb uint32
		var ni int
		if !desc {
			nb, ni = x.next(cur.b, cur.i)
			if far != nil {
				// The next leaf's bound nk caps this leaf's keys: all are
				// below hi when nk <= hi, and no later leaf matters when
				// nk >= hi.
				if nb == btNil {
					full, last = false, true
				} else {
					nk := x.nodes[nb].keys[ni]
					full = !t.less(*far, nk)
					last = !t.less(nk, *far)
				}
			}
		} else {
			if far != nil {
				// The leaf's own bound lb: its keys are all above lo when
				// lb > lo, and earlier leaves do not matter when lb <= lo.
				// The first leaf's bound is not a real one.
				if cur.b == x.first && cur.i == 0 {
					full, last = false, true
				} else {
					full = t.less(*far, nd.keys[cur.i])
					last = !full
				}
			}
			nb, ni = x.prev(cur.b, cur.i)
		}
		s.win = append(s.win, btWin{id: id, cnt: int32(nd.cnts[cur.i]), full: full})
		cur.b, cur.i = nb, ni
		if last || nb == btNil {
			return true
		}
	}
	return false
}

// descendPush calls yield with the entries with hi >= key > lo,
// descending (a nil bound is open), until it returns false. op names the
// public method in the panic of a lost device. Ascending scans go by
// ascendPush, a leaf's run at a time.
func (t *BTree[K, V]) descendPush(op string, lo, hi *K, yield func(K, V) bool) {
	if t.sh != nil {
		t.sh.descendPush(op, lo, hi, yield)
		runtime.KeepAlive(t) // the caller's tree stays reachable for the scan, as on one device
		return
	}
	if t.sk != nil {
		t.sk.descendPush(op, lo, hi, yield)
		return
	}
	t.descendOne(op, lo, hi, yield)
}

// descendOne is descendPush on one device with keys as they are stored:
// what a string-keyed tree's inner tree and a pool's shards run. It calls
// nothing that leads back to descendPush, so that the compiler sees no
// recursion and yield (the loop body) stays on the caller's stack. While
// one window's entries are handed to yield, the next windows' DMA runs
// in other goroutines.
func (t *BTree[K, V]) descendOne(op string, lo, hi *K, yield func(K, V) bool) {
	// The entries are read from the tree's buffers: the tree must stay
	// reachable, so that its backstop frees nothing, until the scan ends.
	defer runtime.KeepAlive(t)
	var w btWalk[K, V]
	if !w.start(t, op, true, lo, hi) {
		return
	}
	// Every exit gives the windows back, a panic in the caller's function
	// included (the reads in flight are waited for first).
	defer w.stop()
	for first := true; ; first = false {
		s := w.window()
		if s == nil {
			return
		}
		if !t.emit(s, first, w.nearBound(), w.farBound(), yield) {
			return
		}
	}
}

// btWalk is a scan's queue of windows: up to btScanDepth are read ahead by
// DMA, each in a goroutine of its own, while the caller consumes the
// oldest, so the link's round trips overlap one another and the CPU's
// work. Streamed windows are read when they reach the head (no work is
// done ahead for a caller that may stop).
type btWalk[K, V any] struct {
	t    *BTree[K, V]
	op   string // the public read, whose lost device panics ("" for Save, which returns it)
	desc bool
	// The bound the scan starts from and the one it runs to, if any:
	// copies, not pointers to the caller's, which would then escape to
	// the heap with everything a walk points to.
	near, far       K
	hasNear, hasFar bool
	cur             btCursor
	limit, per      int
	q               [btScanDepth + 1]btPending
	qh, qn          int
	last            bool   // no window after those queued
	head            bool   // q[qh] was handed out by window
	writes          uint64 // t.writes at start

	// sh: the walk of a tree on a pool, through its shards' walks in
	// turn (btree_sharded_scan.go); the fields above are then unused.
	sh *btShRuns[K, V]
}

// start positions the walk at the first leaf; false if no entry can be in
// range.
func (w *btWalk[K, V]) start(t *BTree[K, V], op string, desc bool, lo, hi *K) bool {
	if t.closed || t.dev == nil {
		t.usedAfterClose()
	}
	if op != "" {
		t.readCheck(op)
	}
	t.sync()
	x := &t.idx
	if x.height == 0 || (lo != nil && hi != nil && !t.less(*lo, *hi)) {
		return false
	}
	w.t, w.op, w.desc, w.writes = t, op, desc, t.writes
	near, far := lo, hi
	switch {
	case desc && hi != nil:
		w.cur.b, w.cur.i = x.find(*hi)
		near, far = hi, lo
	case desc:
		w.cur.b = x.last
		w.cur.i = int(x.nodes[w.cur.b].n) - 1
		near, far = nil, lo
	case lo != nil:
		w.cur.b, w.cur.i = x.find(*lo)
	default:
		w.cur.b = x.first
	}
	w.hasNear, w.hasFar = near != nil, far != nil
	if near != nil {
		w.near = *near
	}
	if far != nil {
		w.far = *far
	}
	// An open-ended scan may be stopped by its caller at any time: its
	// windows start at a few leaves (streamed) and double up to an extent
	// (one DMA), so a short walk reads little and a long one moves at the
	// link's speed. A bounded scan knows which leaves it needs.
	w.per = t.g.extentLeaves()
	w.limit = w.per
	if !w.hasFar {
		w.limit = min(btFirstWindow, w.per)
	}
	return true
}

// nearBound and farBound return the walk's bounds (nil: none).
func (w *btWalk[K, V]) nearBound() *K {
	if !w.hasNear {
		return nil
	}
	return &w.near
}

func (w *btWalk[K, V]) farBound() *K {
	if !w.hasFar {
		return nil
	}
	return &w.far
}

// push queues the next window, starting its DMA if it goes by DMA.
func (w *btWalk[K, V]) push() {
	t := w.t
	s := t.getScan()
	p := &w.q[(w.qh+w.qn)%len(w.q)]
	w.last = t.window(w.desc, s, &w.cur, w.farBound(), w.limit)
	w.limit = min(2*w.limit, w.per)
	*p = btPending{s: s}
	if t.fetchByDMA(s) {
		done := make(chan bool, 1)
		p.done = done
		go func() { done <- t.fetch(s) }()
	}
	w.qn++
}

// window returns the next window, read (nil at the end or on a read
// error, which the tree keeps for Err). It gives back the one returned
// before.
func (w *btWalk[K, V]) window() *btScan {
	t := w.t
	if t.writes != w.writes {
		// The windows queued hold leaves as they were; a write may have
		// split, merged or freed them.
		panic("collections: BTree changed during an iteration of it (a write in the body of a loop over All, Backward, Range, Ascend or Descend)")
	}
	if w.head {
		w.head = false
		t.putScan(w.q[w.qh].s)
		w.qh = (w.qh + 1) % len(w.q)
		w.qn--
	}
	for !w.last && w.qn < len(w.q) && (w.qn < 2 || w.q[(w.qh+w.qn-1)%len(w.q)].done != nil) {
		w.push()
	}
	if w.qn == 0 {
		return nil
	}
	p := &w.q[w.qh]
	w.head = true
	var ok bool
	if p.done != nil {
		waithook.Run()
		ok = <-p.done
		p.done = nil
	} else {
		ok = t.fetch(p.s)
	}
	if !ok {
		w.stop()
		if w.op != "" {
			// The scan did not run out of entries: the device is gone.
			t.readCheck(w.op)
		}
		return nil
	}
	return p.s
}

// stop waits for every read in flight and gives back the queued states.
func (w *btWalk[K, V]) stop() {
	if w.sh != nil {
		w.sh.stop()
		return
	}
	w.head = false
	for ; w.qn > 0; w.qn-- {
		p := &w.q[w.qh]
		if p.done != nil {
			<-p.done
			p.done = nil
		}
		w.t.putScan(p.s)
		w.qh = (w.qh + 1) % len(w.q)
	}
}

// btScanDepth is how many windows a scan reads ahead by DMA: three 4 MiB
// transfers in flight hide each one's fixed round trip (docs/physics.md)
// behind the others' data.
const btScanDepth = 3

// btPending is a window of a scan's queue; done delivers the result of its
// DMA, nil when it is read at the head of the queue.
type btPending struct {
	s    *btScan
	done chan bool
}

// fetchByDMA reports whether fetch will read s's window by DMA (worth
// overlapping with the CPU's work).
func (t *BTree[K, V]) fetchByDMA(s *btScan) bool {
	e := t.lv.extentOf(s.win[0].id)
	switch e.Kind {
	case access.Direct:
		return false
	case access.DMA:
		return true
	}
	lines, span := t.windowSpan(s)
	return !planStreams(lines, int(span))
}

// emit yields the window's entries, descending. near bounds the first
// leaf (inclusive), far the leaves not marked full (exclusive). It
// reports whether the scan goes on.
func (t *BTree[K, V]) emit(s *btScan, first bool, near, far *K, yield func(K, V) bool) bool {
	g := &t.g
	for _, w := range s.win {
		leaf := s.leaf(g, w.id)
		n := int(w.cnt)
		keys := unsafe.Slice((*K)(unsafe.Add(leaf, g.keyOff)), n)
		j := n - 1
		if first && near != nil {
			j = t.upper(unsafe.Add(leaf, g.keyOff), n, *near) - 1
		}
		first = false
		if g.vdense && w.full && !t.strV {
			vals := unsafe.Slice((*V)(unsafe.Add(leaf, g.valOff)), n)
			for ; j >= 0; j-- {
				if !yield(keys[j], vals[j]) {
					return false
				}
			}
			continue
		}
		for ; j >= 0; j-- {
			if !w.full && !t.less(*far, keys[j]) {
				return false
			}
			if !yield(keys[j], t.vOut(unsafe.Add(leaf, g.valAt(j)))) {
				return false
			}
		}
	}
	return true
}

// leafRun returns the entries of window leaf w that lie in the scan's
// range: the keys as they lie in the read leaf, the values too where the
// layout keeps them dense (else converted into vbuf). first says w is the
// scan's first leaf (near bounds it); more is false when the far bound lies
// in this leaf.
func (t *BTree[K, V]) leafRun(s *btScan, w btWin, first bool, near, far *K, vbuf *[]V) (keys []K, vals []V, more bool) {
	g := &t.g
	leaf := s.leaf(g, w.id)
	n := int(w.cnt)
	kp := unsafe.Add(leaf, g.keyOff)
	j, end := 0, n
	if first && near != nil {
		j, _ = t.lower(kp, n, *near)
	}
	if !w.full {
		end, _ = t.lower(kp, n, *far)
	}
	if j >= end {
		return nil, nil, end == n
	}
	if !t.valsCopied() {
		vals = unsafe.Slice((*V)(unsafe.Add(leaf, g.valOff)), n)[j:end:end]
	} else {
		vals = (*vbuf)[:0]
		for i := j; i < end; i++ {
			vals = append(vals, t.vOut(unsafe.Add(leaf, g.valAt(i))))
		}
		*vbuf = vals
	}
	return unsafe.Slice((*K)(kp), n)[j:end:end], vals, end == n
}

// btCopyBound returns a copy of the scan bound *p on the heap (nil for
// nil).
func btCopyBound[K any](p *K) *K {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// valsCopied reports whether leafRun converts a run's values into its
// buffer, rather than handing them out in place in the leaf.
func (t *BTree[K, V]) valsCopied() bool { return !t.g.vdense || t.strV }

// btRuns is an ascending scan handed out a leaf's run at a time by next,
// for the sequences (All, Range, Ascend) that the compiler inlines with
// their loop body: the body then runs in a plain loop over each run.
//
// A sequence with a defer is not inlined, so these cannot stop their walk
// in a deferred call when the loop body panics. The walk lives apart from
// the btRuns instead, and a cleanup attached to the btRuns stops it once
// the btRuns is unreachable: the windows of a scan abandoned by a panic
// return to the tree at the next garbage collection. Callers that may
// panic and can afford the call (Save) defer stop themselves.
type btRuns[K, V any] struct {
	w     *btWalk[K, V]
	s     *btScan // the window being handed out
	i     int     // its next leaf
	first bool    // the next leaf is the scan's first
	last  bool    // the far bound lay in the leaf of the last run
	done  bool
	vbuf  *[]V // leafRun's values, where it copies them (valsCopied)
}

// next returns the next run of entries (nil at the end): valid until the
// following call.
func (r *btRuns[K, V]) next() ([]K, []V) {
	if r.w.sh != nil {
		return r.w.sh.next()
	}
	if r.last {
		// The run handed out before was the last: its window is given
		// back only now that the caller is done with it.
		r.stop()
	}
	for !r.done {
		if r.s == nil || r.i == len(r.s.win) {
			if r.s = r.w.window(); r.s == nil {
				r.done = true
				break
			}
			r.i = 0
		}
		w := r.s.win[r.i]
		r.i++
		if r.vbuf == nil && r.w.t.valsCopied() {
			// Its own allocation: &r.vbuf of a slice field would make
			// the whole btRuns, and the walk it points to, escape to the
			// heap (escape analysis does not tell a struct's fields
			// apart): an allocation for every scan, values copied or not.
			r.vbuf = new([]V)
		}
		keys, vals, more := r.w.t.leafRun(r.s, w, r.first, r.w.nearBound(), r.w.farBound(), r.vbuf)
		r.first = false
		if !more {
			if len(keys) == 0 {
				r.stop()
				break
			}
			r.last = true
		}
		if len(keys) > 0 {
			return keys, vals
		}
	}
	return nil, nil
}

// seq hands out r's entries one by one (a method value is a Seq2).
func (r *btRuns[K, V]) seq(yield func(K, V) bool) {
	for {
		keys, vals := r.next()
		if keys == nil {
			return
		}
		vals = vals[:len(keys)]
		for i, k := range keys {
			if !yield(k, vals[i]) {
				r.stop()
				return
			}
		}
	}
}

// stop ends the scan early: the reads in flight are waited for.
func (r *btRuns[K, V]) stop() {
	if !r.done {
		r.done = true
		r.w.stop()
	}
}

// ascend starts an ascending scan of [lo, hi) (nil: open) for btRuns.
func (t *BTree[K, V]) ascend(op string, lo, hi *K) *btRuns[K, V] {
	if t.sh != nil {
		return t.sh.ascend(t, op, lo, hi)
	}
	r := &btRuns[K, V]{first: true, w: &btWalk[K, V]{}}
	if !r.w.start(t, op, false, lo, hi) {
		r.done = true
		return r
	}
	runtime.AddCleanup(r, (*btWalk[K, V]).stop, r.w)
	return r
}

// All returns every entry in ascending key order. Leaves are read in bulk
// (see the type's comment); a transfer error ends the sequence early and
// is reported by Err, and a lost device panics (see Get), as it does in
// every scan.
func (t *BTree[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) { t.ascendPush("All", nil, nil, yield) }
}

// ascendPush calls yield with the entries in [lo, hi) until it returns
// false. A push iterator ends inside this call, also when yield panics: its
// walk lives in the call and the deferred stop ends it (the reads in
// flight waited for, the buffers given back), where a pull walk (ascend)
// is kept on the heap with a cleanup for callers that drop it unfinished.
func (t *BTree[K, V]) ascendPush(op string, lo, hi *K, yield func(K, V) bool) {
	if t.sk != nil {
		t.sk.ascendPush(op, lo, hi, yield)
		return
	}
	var w btWalk[K, V]
	rs := btRuns[K, V]{first: true, w: &w}
	r := &rs
	if t.sh != nil {
		// A tree on a pool: a walk over its shards' walks, which keeps
		// its own copies of the bounds, so the caller's stay on its stack.
		r = t.ascend(op, btCopyBound(lo), btCopyBound(hi))
	} else if !w.start(t, op, false, lo, hi) {
		return
	}
	defer r.stop() // also when yield panics: a pool's shard walks end before a Close
	r.seq(yield)
}

// Backward returns every entry in descending key order.
func (t *BTree[K, V]) Backward() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) { t.descendPush("Backward", nil, nil, yield) }
}

// Range returns the entries with lo <= key < hi in ascending order.
func (t *BTree[K, V]) Range(lo, hi K) iter.Seq2[K, V] {
	// One closure, small enough to inline: the loop body's closure then
	// stays on the caller's stack.
	return func(yield func(K, V) bool) { t.ascendPush("Range", &lo, &hi, yield) }
}

// Ascend returns the entries with key >= from in ascending order (what
// google/btree's AscendGreaterOrEqual and tidwall/btree's Ascend with a
// pivot call fn with). Like All and Range it reads leaves in bulk, ends
// early on a transfer error (see Err) and panics on a lost device.
//
// google/btree's callbacks map onto the sequences, a false return of fn
// becoming a break in the loop body:
//
//	Ascend(fn)                   for k, v := range t.All()
//	AscendGreaterOrEqual(p, fn)  for k, v := range t.Ascend(p)
//	AscendRange(ge, lt, fn)      for k, v := range t.Range(ge, lt)
//	AscendLessThan(p, fn)        for k, v := range t.All(), breaking at the first k >= p
func (t *BTree[K, V]) Ascend(from K) iter.Seq2[K, V] {
	// As Range: one closure, small enough to inline.
	return func(yield func(K, V) bool) { t.ascendPush("Ascend", &from, nil, yield) }
}

// Descend returns the entries with key <= from in descending order (what
// google/btree's DescendLessOrEqual calls fn with). It reads and fails as
// Backward does.
//
// google/btree's descending callbacks map onto the sequences, a false
// return of fn becoming a break in the loop body:
//
//	Descend(fn)                  for k, v := range t.Backward()
//	DescendLessOrEqual(p, fn)    for k, v := range t.Descend(p)
//	DescendRange(le, gt, fn)     for k, v := range t.Descend(le), breaking at the first k <= gt
//	DescendGreaterThan(p, fn)    for k, v := range t.Backward(), breaking at the first k <= p
func (t *BTree[K, V]) Descend(from K) iter.Seq2[K, V] {
	return func(yield func(K, V) bool) { t.descendPush("Descend", nil, &from, yield) }
}
