package collections

// GetBatch of a Map on a pool: every device probes its shard's keys at
// once, in rounds pipelined with the CPU's split and placing (see
// map_sharded.go).

import (
	"context"
	"errors"
	"fmt"
	"runtime/trace"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/internal/route"
	"github.com/govram/govram/vmem"
)

// GetBatch looks up every key as Map.GetBatch does, with Map.GetBatch on each
// shard: on GPUs, every device's kernel probes its shard's keys at the
// same time, so a batch over D GPUs takes about 1/D of the time on one,
// plus the split (one pass over the keys on all cores). Errors: vmem.ErrClosed,
// a length error matching vmem.ErrRange, and the shards' errors, joined.
// GetBatch is a read: it may run together with other reads.
func (s *shardedMap[K, V]) GetBatch(keys []K, vals []V, found []bool) error {
	if s.closed {
		return vmem.ErrClosed
	}
	if len(vals) < len(keys) || (found != nil && len(found) < len(keys)) {
		return fmt.Errorf("collections: Map.GetBatch: %d keys, %d values, %d found flags: %w", len(keys), len(vals), len(found), vmem.ErrRange)
	}
	if s.nd == 1 {
		return s.shards[0].GetBatch(keys, vals, found)
	}
	if len(keys) == 0 {
		return nil
	}
	if done, err := s.getBatchDirect(keys, vals, found); done {
		return err
	}
	sc := s.getScratch(len(keys))
	defer sc.release(&s.scratch, s.strs)
	pl := s.plan(keys, sc)
	err := shRun(pl.active(), func(d int) error {
		lo, hi := pl.run(d)
		var f []bool
		if found != nil {
			f = sc.found[lo:hi]
		}
		return s.shards[d].GetBatch(sc.keys[lo:hi], sc.vals[lo:hi], f)
	})
	if err != nil {
		return err
	}
	shUngroupAnswers(pl, sc.vals, vals[:len(keys)], sc.found, found)
	return nil
}

// getBatchDirect is GetBatch on GPUs without copies of its own: keys go
// from the batch straight into each shard's upload buffer, and answers
// from each shard's download buffer straight into vals and found; every
// device probes its part at the same time. The batch goes in rounds of up
// to mapGPUChunk keys (each shard's buffers hold a whole round, whatever
// its share), pipelined: while the devices probe round r+1, the CPU puts
// round r's answers in place and splits round r+2, both at once. It
// reports false (having done nothing) where a shard takes no kernels, and
// GetBatch then splits the batch through scratch.
func (s *shardedMap[K, V]) getBatchDirect(keys []K, vals []V, found []bool) (bool, error) {
	if len(keys) < shSmallBatch {
		return false, nil
	}
	for _, m := range s.shards {
		if _, ok := m.gpuMode(); !ok || m.closed || m.writing || m.t == nil || !kdev(m.dev).KernelsAvailable() {
			return false, nil
		}
	}
	g := s.newGetBatch(keys, vals, found)
	defer g.release()
	if done, err := g.begin(); !done || err != nil {
		return done, err
	}
	return true, g.run()
}

// shGetBatch is a getBatchDirect in progress: the batch and its rounds,
// the device buffers of the rounds queued at a time (sets) and the
// rounds' plans.
//
// Device buffers are for q = shGetQueued rounds: rounds r+1..r+q-1 on the
// devices, and round r, whose answers are being placed while round r+q's
// keys are written where r's keys were (the answers lie elsewhere in the
// buffers). A round's plan (shard ids, layout) is its own, of q+1: r's is
// read while r+q's is written and the others are on the devices.
type shGetBatch[K comparable, V any] struct {
	s                 *shardedMap[K, V]
	keys              []K
	vals              []V
	found             []bool
	round, rounds, nd int
	all               []int // every shard
	q                 int
	sets              [][]*mapGetJob[K, V]
	plans             []shGetRound[K, V]
	// ctx: the steps show as regions in an execution trace (go tool trace).
	ctx context.Context
	// fixed: rounds go to the one-pass split. After a round that
	// overflowed the one-pass split's regions, the rest of the batch (keys
	// that do not spread) goes to the two-pass split.
	fixed bool
}

// shGetRound is the plan of one round of a getBatchDirect.
type shGetRound[K comparable, V any] struct {
	jobs    []*mapGetJob[K, V]
	sid     *[]uint8
	pl      *shPlan
	kd      [][]K
	vd      [][]V
	fd      [][]bool
	lo, n   int
	flights []shFlight // started and not yet waited for
}

func (s *shardedMap[K, V]) newGetBatch(keys []K, vals []V, found []bool) *shGetBatch[K, V] {
	round := min(len(keys), mapGPUChunk)
	rounds := (len(keys) + round - 1) / round
	nd := len(s.shards)
	all := make([]int, nd)
	for d := range all {
		all[d] = d
	}
	q := shGetQueued
	return &shGetBatch[K, V]{
		s: s, keys: keys, vals: vals, found: found,
		round: round, rounds: rounds, nd: nd, all: all, q: q,
		sets:  make([][]*mapGetJob[K, V], min(rounds, q)),
		plans: make([]shGetRound[K, V], min(rounds, q+1)),
		ctx:   context.Background(),
		fixed: true,
	}
}

// release closes the jobs and returns the plans' shard ids. It runs also
// after an error or a panic on this goroutine (a WithHasher function's,
// say): closing a job waits for its run in progress, so no buffer goes
// back while a device uses it.
func (g *shGetBatch[K, V]) release() {
	for _, jobs := range g.sets {
		for _, j := range jobs {
			if j != nil {
				j.close()
			}
		}
	}
	for _, rp := range g.plans {
		if rp.sid != nil {
			g.s.sidPool.Put(rp.sid)
		}
	}
}

// begin makes every set's jobs on every shard and the rounds' plans. It
// reports false where a shard takes no kernels.
func (g *shGetBatch[K, V]) begin() (bool, error) {
	s, round := g.s, g.round
	for i := range g.sets {
		jobs := make([]*mapGetJob[K, V], g.nd)
		g.sets[i] = jobs
		err := shRun(g.all, func(d int) error {
			m := s.shards[d]
			if m.pending.Load() {
				m.flushForRead()
			}
			hmode, _ := m.gpuMode()
			j, err := m.gpuGetBegin(m.t, hmode, round)
			jobs[d] = j
			return err
		})
		if errors.Is(err, kern.ErrNoKernels) {
			return false, nil
		}
		if err != nil {
			return true, err
		}
	}
	for i := range g.plans {
		rp := &g.plans[i]
		rp.sid = s.getSid(round)
		rp.kd, rp.vd, rp.fd = make([][]K, g.nd), make([][]V, g.nd), make([][]bool, g.nd)
	}
	return true, nil
}

// run has the devices probe the batch's rounds, q queued at a time: while
// the CPU places round r and splits round r+q, the devices hold rounds
// r+1..r+q-1 and start the next the moment one is done (the rounds use
// separate buffers, so nothing orders them).
func (g *shGetBatch[K, V]) run() error {
	rounds, q := g.rounds, g.q
	for r := range min(rounds, q) {
		sn, sf, sfin := g.split(r)
		g.cpu("govram.GetBatch.split", 0, nil, nil, sn, sf, sfin)
		if err := g.launch(r); err != nil {
			return err
		}
	}
	for r := range rounds {
		if err := g.wait(r); err != nil {
			return err
		}
		pn, pf, pfin := g.place(r)
		var (
			sn   int
			sf   func(int)
			sfin func()
		)
		if r+q < rounds {
			sn, sf, sfin = g.split(r + q)
		}
		g.cpu("govram.GetBatch.place+split", pn, pf, pfin, sn, sf, sfin)
		if r+q < rounds {
			if err := g.launch(r + q); err != nil {
				return err
			}
		}
	}
	return nil
}

// split starts round r's split, which finds its shards and writes its
// keys into its set's upload buffers: it returns the pieces of a one-pass
// split and the function that runs one (none where that split does not
// apply), and finish, to call once every piece has run.
func (g *shGetBatch[K, V]) split(r int) (int, func(p int), func()) {
	rp := &g.plans[r%len(g.plans)]
	rp.jobs = g.sets[r%len(g.sets)]
	rp.lo = r * g.round
	rp.n = min(g.round, len(g.keys)-rp.lo)
	ks := g.keys[rp.lo : rp.lo+rp.n]
	twoPass := func() { g.twoPass(rp, ks) }
	if !g.fixed {
		return 0, nil, twoPass
	}
	pl, piece, overflowed := g.s.splitFixedParts(ks, *rp.sid, g.round, rp.jobs)
	if pl == nil {
		g.fixed = false
		return 0, nil, twoPass
	}
	finish := func() {
		if overflowed() {
			g.fixed = false
			twoPass()
			return
		}
		rp.pl = pl
		for d := range g.nd {
			a, b := pl.run(d)
			rp.vd[d], rp.fd[d] = rp.jobs[d].vals(b-a), rp.jobs[d].found(b-a)
		}
	}
	return len(pl.plo) - 1, piece, finish
}

// twoPass splits round rp's keys ks in two passes: shards found and
// counted, then the keys written into the jobs' upload buffers.
func (g *shGetBatch[K, V]) twoPass(rp *shGetRound[K, V], ks []K) {
	rp.pl = shPlanRanges(rp.n, g.nd, *rp.sid, g.s.shardFill(ks))
	for _, d := range rp.pl.active() {
		a, b := rp.pl.run(d)
		rp.kd[d], rp.vd[d], rp.fd[d] = rp.jobs[d].keys(b-a), rp.jobs[d].vals(b-a), rp.jobs[d].found(b-a)
	}
	shScatter(rp.pl, ks, rp.kd)
}

// place returns the pieces that put round r's answers in batch order and
// the function that runs one, or finish, which puts them all.
func (g *shGetBatch[K, V]) place(r int) (int, func(p int), func()) {
	rp := &g.plans[r%len(g.plans)]
	var f []bool
	if g.found != nil {
		f = g.found[rp.lo : rp.lo+rp.n]
	}
	v := g.vals[rp.lo : rp.lo+rp.n]
	if unsafe.Sizeof(*new(V)) != 8 {
		return 0, nil, func() { shGatherAnswers(rp.pl, rp.vd, v, rp.fd, f) }
	}
	n, piece := shGather8Parts(rp.pl, rp.vd, v, rp.fd, f)
	return n, piece, func() {}
}

// cpu runs a place and a split (either may be absent: zero pieces, nil
// finish) as one job on par's kept workers, whose threads spin between
// jobs, where goroutines started for each pass wait for idle cores to
// wake. BenchmarkShardedMapGetBatchSteps measures a round of 2^21 keys:
// the split and the place each ran faster on kept workers than on
// goroutines of their own, and both at once took little longer than the
// split alone.
func (g *shGetBatch[K, V]) cpu(name string, pn int, pf func(int), pfin func(), sn int, sf func(int), sfin func()) {
	defer trace.StartRegion(g.ctx, name).End()
	par.Run(pn+sn, func(i int) {
		if i < pn {
			pf(i)
		} else {
			sf(i - pn)
		}
	})
	if pfin != nil {
		pfin()
	}
	if sfin != nil {
		sfin()
	}
}

// launch has every device probe round r's keys: each device's commands
// are submitted from this goroutine, so that no core taken by the CPU's
// passes holds a device back (a goroutine per device waited for a free
// core before its submit, while the passes kept every core busy).
func (g *shGetBatch[K, V]) launch(r int) error {
	defer trace.StartRegion(g.ctx, "govram.GetBatch.launch").End()
	rp := &g.plans[r%len(g.plans)]
	rp.flights = rp.flights[:0]
	for _, d := range rp.pl.active() {
		a, b := rp.pl.run(d)
		f, err := rp.jobs[d].start(b-a, g.found != nil)
		if err != nil {
			return fmt.Errorf("shard %d: %w", d, err)
		}
		rp.flights = append(rp.flights, shFlight{d, f})
	}
	return nil
}

// wait waits for round r's runs on the devices.
func (g *shGetBatch[K, V]) wait(r int) error {
	defer trace.StartRegion(g.ctx, "govram.GetBatch.wait").End()
	rp := &g.plans[r%len(g.plans)]
	var errs []error
	for _, f := range rp.flights {
		if err := f.f.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", f.d, err))
		}
	}
	rp.flights = rp.flights[:0]
	return errors.Join(errs...)
}

// shGetQueued is how many rounds of a pool Map's GetBatch are queued on
// the devices at a time (at least 2: one on the devices while the CPU
// places another). Each costs a set of round buffers per device.
var shGetQueued = 2

// shFlight is a shard's run in progress.
type shFlight struct {
	d int
	f kern.Flight
}

// splitFixedParts splits a round of 8-byte keys in one pass (route.Route8),
// a piece at a time (splitFixed in the tests does it whole): each core
// writes its keys of each shard into a region of its own of that shard's
// upload buffer, so no core waits for a count of the others; the regions
// are of fixed size, so the devices take the whole buffer in one copy. It
// returns the plan (nil where the one-pass split does not apply), the
// function that splits
// piece p, and overflowed, which reports, once every piece has run,
// whether a piece overflowed a region (the plan is then void).
func (s *shardedMap[K, V]) splitFixedParts(ks []K, sid []uint8, capacity int, jobs []*mapGetJob[K, V]) (*shPlan, func(p int), func() bool) {
	if s.hk != mapHash8 || unsafe.Sizeof(*new(K)) != 8 || len(ks) < shPieceMin {
		return nil, nil, nil
	}
	nd := len(s.shards)
	pieces, room := shFixedLayout(len(ks), nd)
	if pieces*room > capacity {
		return nil, nil, nil
	}
	pl := shPlanFixed(len(ks), nd, pieces, room, sid)
	dst := make([]unsafe.Pointer, nd)
	for d := range nd {
		dst[d] = unsafe.Pointer(unsafe.SliceData(jobs[d].keys(pieces * room)))
	}
	k8 := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(ks))), len(ks))
	seed := s.seed
	var full atomic.Bool
	piece := func(p int) {
		var cur, limit [shMaxShards]int
		for d := range nd {
			cur[d], limit[d] = p*room, (p+1)*room
		}
		lo, hi := pl.plo[p], pl.plo[p+1]
		if !route.Route8(k8[lo:hi], pl.sid[lo:hi], seed, dst, cur[:nd], limit[:nd]) {
			full.Store(true)
		}
	}
	return pl, piece, full.Load
}

// getSid returns shard-id scratch of n bytes from the map's pool.
func (s *shardedMap[K, V]) getSid(n int) *[]uint8 {
	p, _ := s.sidPool.Get().(*[]uint8)
	if p == nil {
		p = new([]uint8)
	}
	if cap(*p) < n {
		*p = make([]uint8, n)
	}
	*p = (*p)[:n]
	return p
}
