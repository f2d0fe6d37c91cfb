package collections

// Combining single Gets from many goroutines.
//
// A Get that misses the host tier waits a PCIe round trip for one line
// of VRAM (docs/physics.md; longer under load), and the core that runs
// it does nothing else meanwhile: a Go scheduler runs one goroutine per
// P, so a server with 256 goroutines doing Gets on 16 cores keeps at most
// 16 lines in flight, and its Gets per second stop growing with the
// number of goroutines. Independent line loads from one core overlap
// (docs/physics.md gives the random line rates of one thread and of
// many).
//
// So when another goroutine is in Get too, a miss joins a lane (picked by
// its hash): the first to find the lane idle leads it, taking every
// request queued there and looking them all up at once, while the others
// wait parked (a waiter that spins or yields keeps taking the Ps the
// leaders need). A round looks its keys up with the batch path's
// overlapped line loads (getBlock); with getCombGPU a round of several
// keys goes to the GPU instead, in the rounds that concurrent batch calls
// share (map_combine.go), so that the lookups in flight are not bounded by
// the cores. A leader runs a few rounds at most, then hands the lane to
// the oldest waiter, so no caller waits on other callers' requests for
// long.
//
// Both kinds of round are off by default, and GPU rounds stay off when
// combining is on: BenchmarkMapGetParallel measured combining faster than
// the direct path only at 256 goroutines, and GPU rounds slower than line
// loads (docs/map.md). A parked leader or waiter needs a P to run again,
// and the goroutines still on the direct path hold theirs through every
// device load (a load stalls its core; Go preempts a goroutine that never
// blocks only after milliseconds), so a round's callers wait far longer
// than the round.
//
// The gauge of goroutines in Get is a plain counter in host memory off
// the Go heap, not an atomic one: a locked instruction on the lookup path
// stops the CPU from overlapping one Get's device load with the next
// one's, which costs a lone caller a round trip per Get. Increments from
// goroutines that meet may be lost, so the gauge drifts; after many rounds
// in a row that held only their leader's request, it is set back to zero.
//
// A lone caller never sees the gauge above one: it keeps the direct path
// and pays one plain increment and decrement. (A bound of GOMAXPROCS would
// never be reached: a Get that waits for VRAM stalls its core, it does not
// yield its P, so no more goroutines than Ps are ever in Get at once.)
//
// VMEM_COMBINE_GETS=1 turns combining on.

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Bounds of combining (variables so that tests can force or forbid it).
var (
	// getCombMin: combining starts when more goroutines than this are in
	// Get; 0 means 1, a negative value every Get (tests).
	getCombMin = 0
	// getCombRounds: rounds a leader runs before it hands its lane on.
	getCombRounds = 4
	// getCombMaxBatch: requests one round looks up at most.
	getCombMaxBatch = 256
	// getCombGPU: rounds of at least getCombGPUMin requests go to the GPU
	// (else every round uses line loads; benchmarks and tests compare the
	// two; see above for why it is off).
	getCombGPU    = false
	getCombGPUMin = 2
)

// getComb is a Map's state for combining Gets.
type getComb[K comparable, V any] struct {
	gauge *int64 // goroutines in the lookup path (plain, off the Go heap; see above)
	min   int64
	lanes []getLane[K, V]
	gpu   bool // rounds may go to the GPU (getCombGPU when made)
	pool  sync.Pool
	// shared counts the Gets answered by rounds of more than one (Stats);
	// gpuRounds the rounds that went to the GPU.
	shared    atomic.Uint64
	gpuRounds atomic.Uint64
}

// getLane queues requests for one leader at a time.
type getLane[K comparable, V any] struct {
	mu    sync.Mutex
	reqs  []*getReq[K, V] // waiting for a round
	busy  atomic.Bool     // a leader runs rounds
	keys  []K
	vals  []V
	found []bool
	_     [64]byte
}

// singles is the count of rounds in a row that held one request (plain,
// beside the gauge).
func (c *getComb[K, V]) singles() *int64 {
	return (*int64)(unsafe.Add(unsafe.Pointer(c.gauge), 8))
}

// getCombSingles: rounds of one in a row after which the gauge is reset.
const getCombSingles = 64

// getReq is one waiting Get.
type getReq[K comparable, V any] struct {
	k  K
	v  V
	ok bool
	// done is getReqDone when v and ok are set, getReqRetry when the
	// caller must look up alone, getReqLead when it must lead the lane;
	// wake then gets a token (buffered, so the sender never blocks).
	done atomic.Uint32
	wake chan struct{}
}

const (
	getReqDone  = 1
	getReqRetry = 2
	getReqLead  = 3
)

// answer sets r's state (the first answer wins) and wakes its caller.
func (r *getReq[K, V]) answer(st uint32) {
	if r.done.CompareAndSwap(0, st) {
		r.wake <- struct{}{}
	}
}

// getCombInit gives a map on a GPU its combining state when combining is
// on (VMEM_COMBINE_GETS=1, or tests' getCombMin); without memory for the
// gauge its Gets stay direct. Combining is off by default until it is
// shown faster on a GPU than a line load per caller (docs/map.md).
func (m *Map[K, V]) getCombInit() {
	if getCombMin == 0 && (!getCombOn || !kdev(m.dev).OnGPU() || m.cfg.plain) {
		return
	}
	m.getCombStart()
}

// getCombStart makes the combining state (benchmarks call it to compare).
func (m *Map[K, V]) getCombStart() {
	if m.gauge == nil {
		mem, err := m.held.MapHost(getGaugeBytes)
		if err != nil {
			return
		}
		m.gauge = mem
	}
	p := runtime.GOMAXPROCS(0)
	c := &getComb[K, V]{gauge: (*int64)(m.gauge), min: 1, lanes: make([]getLane[K, V], max(p/2, 1)), gpu: getCombGPU}
	*c.gauge, *c.singles() = 0, 0
	if getCombMin != 0 {
		c.min = int64(getCombMin)
	}
	c.pool.New = func() any { return &getReq[K, V]{wake: make(chan struct{}, 1)} }
	m.comb = c
}

// envCombineGets, set to 1, turns the combining of single Gets on.
const envCombineGets = "VMEM_COMBINE_GETS"

var getCombOn = os.Getenv(envCombineGets) == "1"

const getGaugeBytes = 64

// lookup is the table lookup of Get (after the tier, if any): direct, or
// combined with other goroutines' when many are in it.
func (m *Map[K, V]) lookup(kp *K, h uint64) (V, bool) {
	c := m.comb
	if c == nil {
		return m.get(kp, h)
	}
	g := c.gauge
	n := max(*g, 0) + 1 // lost increments drift it below zero
	*g = n
	var v V
	var ok bool
	if n > c.min && n < 1<<30 || c.min < 0 {
		v, ok = m.getCombined(c, kp, h)
	} else {
		v, ok = m.get(kp, h)
	}
	*g--
	return v, ok
}

// getCombined looks k up in a round of its lane.
func (m *Map[K, V]) getCombined(c *getComb[K, V], kp *K, h uint64) (V, bool) {
	ln := &c.lanes[(h>>32)%uint64(len(c.lanes))]
	r := c.pool.Get().(*getReq[K, V])
	r.k = *kp
	r.done.Store(0)
	ln.mu.Lock()
	ln.reqs = append(ln.reqs, r)
	// busy changes only under the lock (here, and where a leader gives
	// the lane up or hands it on), so a lane has one leader at a time.
	lead := ln.busy.CompareAndSwap(false, true)
	ln.mu.Unlock()
	for {
		if lead {
			m.leadLane(c, ln)
		}
		<-r.wake
		if r.done.Load() != getReqLead {
			break
		}
		// Handed the lane: this caller's request is still queued.
		r.done.Store(0)
		lead = true
	}
	v, ok, st := r.v, r.ok, r.done.Load()
	*r = getReq[K, V]{wake: r.wake} // the pool keeps no caller's key or value
	c.pool.Put(r)
	if st == getReqRetry {
		return m.get(kp, h)
	}
	return v, ok
}

// leadLane runs up to getCombRounds rounds of the lane's queued requests,
// then hands the lane to the oldest waiter, or gives it up when none is
// left. A panic in a round (a lost device met by a flush) sends the
// round's callers to look up alone.
func (m *Map[K, V]) leadLane(c *getComb[K, V], ln *getLane[K, V]) {
	defer func() {
		ln.mu.Lock()
		if len(ln.reqs) > 0 {
			ln.reqs[0].answer(getReqLead) // busy stays set: the lane passes on
		} else {
			ln.busy.Store(false)
		}
		ln.mu.Unlock()
	}()
	for range getCombRounds {
		ln.mu.Lock()
		// The batch keeps the queue's array; the queue starts a new one, so
		// that no enqueuer ever writes where a round reads.
		batch := ln.reqs
		ln.reqs = nil
		if len(batch) > getCombMaxBatch {
			ln.reqs = append([]*getReq[K, V](nil), batch[getCombMaxBatch:]...)
			batch = batch[:getCombMaxBatch]
		}
		ln.mu.Unlock()
		if len(batch) == 0 {
			break
		}
		if len(batch) == 1 {
			// Alone in its round: after many such rounds in a row, the
			// gauge has drifted (lost decrements) and is set back.
			s := c.singles()
			if *s++; *s >= getCombSingles {
				*c.gauge, *s = 0, 0
			}
		} else {
			*c.singles() = 0
			c.shared.Add(uint64(len(batch)))
		}
		m.runRound(c, ln, batch)
	}
}

// runRound looks up a batch of requests with overlapped line loads and
// answers each.
func (m *Map[K, V]) runRound(c *getComb[K, V], ln *getLane[K, V], batch []*getReq[K, V]) {
	done := false
	defer func() {
		if !done {
			for _, r := range batch {
				r.answer(getReqRetry)
			}
		}
	}()
	if m.pending.Load() {
		m.flushForRead()
	}
	n := len(batch)
	if cap(ln.keys) < n {
		ln.keys, ln.vals, ln.found = make([]K, n, getCombMaxBatch), make([]V, n, getCombMaxBatch), make([]bool, n, getCombMaxBatch)
	}
	keys, vals, found := ln.keys[:n], ln.vals[:n], ln.found[:n]
	for i, r := range batch {
		keys[i] = r.k
	}
	t := m.t
	if hmode, ok := m.getMode(); ok && c.gpu && n >= getCombGPUMin && kdev(m.dev).KernelsAvailable() {
		if err := m.combGet(t, hmode, keys, vals, found); err != nil {
			return // the callers look up alone and meet the error themselves
		}
		c.gpuRounds.Add(1)
	} else {
		m.getBlock(t, keys, vals, found)
	}
	for i, r := range batch {
		r.v, r.ok = vals[i], found[i]
		r.answer(getReqDone)
	}
	clear(keys) // the lane keeps no caller's key or value
	clear(vals)
	done = true
}
