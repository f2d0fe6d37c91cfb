package collections

// Combining concurrent batch lookups into shared GPU rounds.
//
// A GPU round costs the same fixed price (a submission and a fence:
// docs/physics.md) for 64 keys as for 64,000, so a server whose goroutines
// each look up a few thousand keys gains most by sending them together.
// Without combining, every GetBatch ran a round of its own: each took a
// staging and a device buffer, up to three command streams and two
// semaphores from the device's pools, which keep only a handful of each,
// so with many callers most rounds allocated and freed pinned memory,
// command pools and fences; and every round waited behind the others on
// the same queues anyway.
//
// The scheme is group commit:
//
//   - At most mapCombFlights rounds run at once. A caller that finds a
//     free flight and nobody waiting runs its own round at once, exactly as
//     a lone GetBatch always did: a lone caller waits for nobody.
//   - Otherwise it queues its request and sleeps. A leader whose round
//     ends hands the flight to the first waiter, with as many queued
//     requests as one round takes (mapCombRoundMax keys): that waiter
//     copies their keys into one staging buffer and runs one round for
//     all of them. So requests that arrive while a round is in flight
//     ride together in the next one.
//   - The leader hands the flight on before anyone copies answers out,
//     so the next round's upload overlaps this round's copies; each
//     caller copies its own answers from the round's buffer (all at
//     once, on their own goroutines), and the last one gives the buffer
//     back.
//   - The queue is bounded (mapCombQueueMax keys): a caller that finds it
//     full waits for room. A queued caller therefore waits for at most
//     the rounds in flight and the queue ahead of it, a bounded number of
//     rounds.
//   - A round's error (the device lost, no memory for the mirror of the
//     control bytes) is every one of its callers' error, and none of them
//     reads the round's answers. ErrNoKernels sends each caller to the CPU
//     path on its own.
//   - Calls of more than mapCombJoinMax keys run their own rounds: they
//     already fill a round, and a queue of them would hold the small ones
//     back.
//
// Only lookups combine: PutBatch is a write, which must not overlap any
// other call, so two PutBatch calls never meet.

import (
	"errors"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/lines"
	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/layout"
	"github.com/govram/govram/vmem"
)

// Bounds of combining (variables so that tests can make rounds small).
var (
	// mapCombFlights: rounds in flight at once. Two keep the device busy
	// while the CPU copies one round's keys in and another's answers out,
	// and keep every round's buffers and streams within what the device
	// keeps for reuse.
	mapCombFlights = 2
	// mapCombRoundMax: keys of one combined round. From about 64K keys a
	// round's transfers cost as much as its fixed price, so larger rounds
	// gain little and hold their callers longer.
	mapCombRoundMax = 1 << 18
	// mapCombJoinMax: calls of more keys run their own rounds.
	mapCombJoinMax = 1 << 16
	// mapCombQueueMax: keys waiting at most; later callers wait for room.
	mapCombQueueMax = 4 << 18
)

// envCombine, set to 0, turns combining off: every batch lookup runs its
// own rounds at once, as before combining (for comparisons in one binary).
const envCombine = "VMEM_COMBINE"

func init() {
	if os.Getenv(envCombine) == "0" {
		mapCombFlights = math.MaxInt
	}
}

// mapBatchStats counts how batch lookups were answered, for Stats.
type mapBatchStats struct {
	rounds   atomic.Uint64 // GPU rounds of GetBatch (each a submission and a wait)
	keys     atomic.Uint64 // keys those rounds looked up
	combined atomic.Uint64 // calls answered by a round shared with other calls
	cpuPath  atomic.Uint64 // calls answered by CPU line loads
	gpuPath  atomic.Uint64 // calls answered by GPU rounds
}

// mapComb is a Map's queue of lookups waiting for a round.
type mapComb struct {
	mu     sync.Mutex
	room   sync.Cond // the queue shrank
	active int       // rounds being run, at most mapCombFlights
	queue  []*mapCombReq
	queued int // keys in queue
}

// mapCombReq is one caller's lookup. Its slices are kept as pointers so
// that the non-generic queue holds any Map's requests; only a method of
// that Map reads them.
type mapCombReq struct {
	keys, vals unsafe.Pointer
	found      *bool // nil: not wanted
	n          int
	off        int           // the first key's place in its round
	wake       chan struct{} // one send: answered, or lead is set
	lead       []*mapCombReq // set by the handing leader: run a round of these
	round      *mapCombRound // the answers, when err is nil
	err        error
}

// mapCombRound holds one round's answers until its last caller has
// copied its own out.
type mapCombRound struct {
	vals, found unsafe.Pointer // staging memory of the round
	refs        atomic.Int32
	close       func()
	long        bool // string keys were left to the CPU (mapGetJob.long)
}

var mapCombReqs = sync.Pool{New: func() any { return &mapCombReq{wake: make(chan struct{}, 1)} }}

// errMapCombPanic is the error of the callers whose round's leader
// panicked (a WithHasher function's panic, raised in the leader).
var errMapCombPanic = errors.New("collections: GetBatch: the goroutine running the shared round panicked")

// mapBatchGPUMin: a batch of at least this many keys goes to the GPU when
// the table's slots are in mapped VRAM, fewer are read by CPU line loads:
// the planner's gather threshold (a round's fixed price over a streamed
// line's).
var mapBatchGPUMin = lines.DefaultPlanner().GatherMinLines

// batchGPU picks the path of a batch lookup of n keys: a GPU round (true,
// with the kernels' hash mode) or CPU line loads. Slots in mapped VRAM are
// streamed a line per key, so rounds pay from the planner's gather
// threshold on; slots in private VRAM cost the CPU a DMA round trip per
// key, so there a round pays as soon as the keys expected there cost more
// round trips than one round.
func (m *Map[K, V]) batchGPU(t *mapTable, n int) (uint32, bool) {
	hmode, ok := m.getMode()
	if !ok || n == 0 || !kdev(m.dev).KernelsAvailable() {
		return 0, false
	}
	if n >= mapBatchGPUMin {
		return hmode, true
	}
	var priv uint64
	for i := range t.segs {
		if t.segs[i].Kind == access.DMA {
			priv += t.segs[i].n
		}
	}
	if priv == 0 {
		return 0, false
	}
	c := layout.H200Costs
	dmas := float64(n) * float64(priv) / float64(t.nbAll)
	return hmode, dmas*float64(c.DMARoundTrip) >= float64(c.GatherRoundTrip)
}

// combGet answers a lookup by GPU rounds, shared with concurrent callers
// where there are any. ErrNoKernels: nothing was answered.
func (m *Map[K, V]) combGet(t *mapTable, hmode uint32, keys []K, vals []V, found []bool) error {
	roundMax := min(mapCombRoundMax, mapGPUChunk)
	if len(keys) > min(mapCombJoinMax, roundMax) {
		return m.gpuGet(t, hmode, keys, vals, found)
	}
	r, pipelined := m.combJoin(keys, vals, found, roundMax)
	if r == nil {
		// Deferred: a panic in the round (a WithHasher function's) must
		// still free the flight.
		defer m.combNext()
		return m.gpuGetRound(t, hmode, keys, vals, found, pipelined)
	}
	<-r.wake
	if r.lead != nil {
		m.combRound(t, hmode, r)
	}
	return m.combCollect(r)
}

// combJoin takes a flight for a lone round (nil; pipelined: another round
// is in flight), or queues a request and returns it: a round is then in
// flight on every flight (nobody queues otherwise), and a leader will
// answer the request or hand it the next round.
func (m *Map[K, V]) combJoin(keys []K, vals []V, found []bool, roundMax int) (*mapCombReq, bool) {
	c := &m.gpu.comb
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.active < mapCombFlights && len(c.queue) == 0 {
			c.active++
			return nil, c.active > 1
		}
		if c.queued+len(keys) <= max(mapCombQueueMax, roundMax) {
			break
		}
		if c.room.L == nil {
			c.room.L = &c.mu
		}
		c.room.Wait()
	}
	r := mapCombReqs.Get().(*mapCombReq)
	r.keys, r.vals, r.n = unsafe.Pointer(&keys[0]), unsafe.Pointer(&vals[0]), len(keys)
	if found != nil {
		r.found = &found[0]
	}
	c.queue = append(c.queue, r)
	c.queued += len(keys)
	return r, false
}

// combNext ends a leader's turn: the flight goes to the first waiter,
// with a round's worth of requests, or becomes free.
func (m *Map[K, V]) combNext() {
	c := &m.gpu.comb
	c.mu.Lock()
	if len(c.queue) == 0 {
		c.active--
		c.mu.Unlock()
		return
	}
	roundMax := min(mapCombRoundMax, mapGPUChunk)
	k, keys := 0, 0
	for k < len(c.queue) && (k == 0 || keys+c.queue[k].n <= roundMax) {
		keys += c.queue[k].n
		k++
	}
	lead := append([]*mapCombReq(nil), c.queue[:k]...)
	rest := copy(c.queue, c.queue[k:])
	clear(c.queue[rest:])
	c.queue = c.queue[:rest]
	c.queued -= keys
	if c.room.L != nil {
		c.room.Broadcast()
	}
	c.mu.Unlock()
	lead[0].lead = lead
	lead[0].wake <- struct{}{}
}

// combRound runs one round for self.lead (self among them), hands the
// flight on, and gives every request but self its answers.
func (m *Map[K, V]) combRound(t *mapTable, hmode uint32, self *mapCombReq) {
	reqs := self.lead
	self.lead = nil
	answered := false
	var j *mapGetJob[K, V]
	defer func() {
		if answered {
			return
		}
		// The leader is panicking: its waiters get an error, the flight
		// goes on, and the panic reaches the leader's caller.
		if j != nil {
			j.close()
		}
		for _, r := range reqs {
			r.err, r.round = errMapCombPanic, nil
			if r != self {
				r.wake <- struct{}{}
			}
		}
		m.combNext()
	}()
	total, wantFound := 0, false
	for _, r := range reqs {
		r.off = total
		total += r.n
		wantFound = wantFound || r.found != nil
	}
	var round *mapCombRound
	j, err := m.gpuGetBeginQ(t, hmode, total, true)
	if err != nil {
		j = nil
	} else {
		copyIn := func(r *mapCombReq) { j.putKeys(r.off, r.keys, r.n) }
		if total >= 1<<16 && len(reqs) > 1 {
			par.Go(len(reqs), func(i int) { copyIn(reqs[i]) })
		} else {
			for _, r := range reqs {
				copyIn(r)
			}
		}
		if err = j.run(total, wantFound); err == nil {
			round = &mapCombRound{vals: unsafe.Pointer(unsafe.SliceData(j.vals(total))),
				found: unsafe.Pointer(unsafe.SliceData(j.found(total))), close: j.close,
				long: j.long.Load() != 0}
			round.refs.Store(int32(len(reqs)))
		} else {
			j.close()
		}
	}
	j = nil // closed, or closed by the round's last caller
	if len(reqs) > 1 {
		m.gpu.stats.combined.Add(uint64(len(reqs)))
	}
	answered = true
	m.combNext()
	for _, r := range reqs {
		r.err, r.round = err, round
		if r != self {
			r.wake <- struct{}{}
		}
	}
}

// combCollect copies r's answers out of its round (none when the round
// failed) and returns r's error; r goes back to the pool.
func (m *Map[K, V]) combCollect(r *mapCombReq) error {
	err, round := r.err, r.round
	if err == nil {
		var zv V
		vs := uint64(unsafe.Sizeof(zv))
		mapParCopy(r.vals, unsafe.Add(round.vals, uint64(r.off)*vs), uint64(r.n)*vs)
		if r.found != nil {
			mapParCopy(unsafe.Pointer(r.found), unsafe.Add(round.found, r.off), uint64(r.n))
		}
		if round.long {
			var f []bool
			if r.found != nil {
				f = unsafe.Slice(r.found, r.n)
			}
			m.longKeys(m.t, unsafe.Slice((*K)(r.keys), r.n), unsafe.Slice((*V)(r.vals), r.n), f)
		}
	}
	if round != nil && round.refs.Add(-1) == 0 {
		round.close()
	}
	*r = mapCombReq{wake: r.wake}
	mapCombReqs.Put(r)
	return err
}

// gpuGetRound is a lone caller's round: its own keys, straight from its
// slices, as GetBatch ran before combining. pipelined: another round is in
// flight, so the copies go to the copy engines beside it.
func (m *Map[K, V]) gpuGetRound(t *mapTable, hmode uint32, keys []K, vals []V, found []bool, pipelined bool) error {
	j, err := m.gpuGetBeginQ(t, hmode, len(keys), pipelined)
	if err != nil {
		return err
	}
	defer j.close()
	return j.lookup(keys, vals, found)
}

// errIsDeviceLost reports whether err means the device is gone (so that
// answering on the CPU would read memory nobody keeps in step).
func errIsDeviceLost(err error) bool { return errors.Is(err, vmem.ErrDeviceLost) }
