// Package par splits a job over a few goroutines that are kept between
// jobs and spin briefly for the next one.
//
// Bulk copies to and from mapped VRAM are split over cores because one
// core's stores reach only part of the link (see vmem's copy.go). Starting a
// goroutine per part costs little, but waking the idle threads that run
// them, and waking the caller when the last part is done, costs tens of
// microseconds on a virtual machine: as much as copying a 1 MiB batch.
// Workers that spin for a while after each job take the next part within a
// microsecond, and the caller, which copies parts too, waits by spinning.
// Workers that find no job for spinFor park and cost nothing.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govram/govram/internal/waithook"
)

// spinFor is how long an idle worker, and a caller waiting for the last
// parts, spin before parking or yielding.
const spinFor = 50 * time.Microsecond

type job struct {
	f     func(i int)
	parts int64
	next  atomic.Int64 // next part to claim
	done  atomic.Int64 // parts finished
}

// run claims and runs parts until none is left, and reports whether it
// ran any.
func (j *job) run() (ran bool) {
	for {
		i := j.next.Add(1) - 1
		if i >= j.parts {
			return ran
		}
		j.f(int(i))
		j.done.Add(1)
		ran = true
	}
}

type worker struct {
	sleeping atomic.Bool
	wake     chan struct{} // one token per wake-up of a sleeping worker
}

var (
	mu        sync.Mutex // one job at a time; a second caller runs its parts on new goroutines
	startOnce sync.Once
	workers   []*worker
	gen       atomic.Uint64       // bumped when a job is posted
	cur       atomic.Pointer[job] // the latest job
)

// maxWorkers bounds the kept workers. Callers bound their own parts: bulk
// copies take at most 16 (the link takes no more), a sharded batch's
// routing passes one per core.
const maxWorkers = 127

func start() {
	n := min(runtime.GOMAXPROCS(0)-1, maxWorkers)
	workers = make([]*worker, n)
	for i := range workers {
		w := &worker{wake: make(chan struct{}, 1)}
		workers[i] = w
		go w.loop()
	}
}

func (w *worker) loop() {
	seen := gen.Load()
	for {
		t0 := time.Now()
		for spins := 0; ; spins++ {
			if g := gen.Load(); g != seen {
				seen = g
				// Only a worker that got a part spins on: workers that
				// find the job taken park after spinFor, so a stream of
				// small jobs keeps as many cores busy as it has parts.
				if j := cur.Load(); j != nil && j.run() {
					t0, spins = time.Now(), 0
				}
				continue
			}
			if spins&255 == 255 && time.Since(t0) > spinFor {
				break
			}
		}
		w.sleeping.Store(true)
		if gen.Load() != seen && w.sleeping.CompareAndSwap(true, false) {
			continue // a job came before the flag was seen: no token is on its way
		}
		<-w.wake
	}
}

// Run calls f(i) for every i in [0, parts), on the calling goroutine and the
// kept workers, and returns when every call has returned. f must not
// panic. Calls of Run from several goroutines at once, or from inside f, are
// served too (the later ones on goroutines of their own).
func Run(parts int, f func(i int)) {
	if parts <= 1 {
		if parts == 1 {
			f(0)
		}
		return
	}
	startOnce.Do(start)
	if len(workers) == 0 || !mu.TryLock() {
		spawn(parts, f)
		return
	}
	j := &job{f: f, parts: int64(parts)}
	cur.Store(j)
	gen.Add(1)
	// Wake sleepers until parts-1 workers are awake; spinning ones count.
	woken := 0
	for _, w := range workers {
		if woken >= parts-1 {
			break
		}
		if w.sleeping.Load() && w.sleeping.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
		}
		woken++
	}
	waithook.Run()
	j.run()
	t0 := time.Now()
	for spins := 0; j.done.Load() < j.parts; spins++ {
		if spins&255 == 255 && time.Since(t0) > spinFor {
			runtime.Gosched()
		}
	}
	cur.CompareAndSwap(j, nil) // let go of f and what it holds
	mu.Unlock()
}

// spawn is Run on goroutines of their own. The caller only waits: a part
// it ran itself would hold back the goroutine started last, which waits in
// the caller's run-next slot, where other threads take it only after a
// delay.
func spawn(parts int, f func(i int)) {
	var wg sync.WaitGroup
	wg.Add(parts)
	for i := range parts {
		go func() {
			defer wg.Done()
			f(i)
		}()
	}
	waithook.Run()
	wg.Wait()
	runtime.KeepAlive(f) // what f reaches stays reachable while the goroutines run it
}
