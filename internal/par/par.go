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
//
// The package has every shape of fan-out govram uses:
//
//   - Run: parts on the caller and the kept workers, for short CPU passes
//     (bulk copies, a sharded batch's routing) where waking threads costs
//     as much as the work.
//   - Go: a goroutine per part, the caller only waiting, for parts that
//     block (a device's DMA or kernels) or that call Run themselves.
//   - Ranges: [0, n) in contiguous parts, at most GOMAXPROCS, on Go.
//   - Lines and Copy: [0, n) bytes in parts of whole 64-byte lines, at
//     most a given number, on Run.
//
// Each runs a single part on the calling goroutine, with no goroutine or
// worker involved. A panic in any part is raised again on the calling
// goroutine, with the first panic's value, once every part has returned:
// it reaches the caller as if the part had run there (a WithHasher
// function's panic reaches the caller of the container's method, and the
// caller's deferred cleanup runs), instead of ending the program from a
// goroutine the caller never sees.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

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
	fault fault
}

// run claims and runs parts until none is left, and reports whether it
// ran any.
func (j *job) run() (ran bool) {
	for {
		i := j.next.Add(1) - 1
		if i >= j.parts {
			return ran
		}
		j.call(int(i))
		ran = true
	}
}

// call runs part i and counts it done, also when it panics (the panic is
// kept for the caller, and the worker goes on).
func (j *job) call(i int) {
	defer j.done.Add(1)
	defer j.fault.catch()
	j.f(i)
}

// fault keeps the first panic of a job's parts.
type fault struct {
	once sync.Once
	set  bool
	val  any
}

// catch, deferred, recovers a panic and keeps it if it is the first.
func (p *fault) catch() {
	if r := recover(); r != nil {
		p.once.Do(func() { p.set, p.val = true, r })
	}
}

// raise panics with the kept panic, if any. Every part has returned by
// then, which orders the write of the value before this read.
func (p *fault) raise() {
	if p.set {
		panic(p.val)
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
	// kept is the job of the kept workers, reused under mu, so that posting
	// one allocates nothing. A worker that loaded cur stays counted in
	// inJob until it leaves the job's run: the next job waits for none to
	// be left before it resets the fields they read.
	kept  job
	inJob atomic.Int64
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
				inJob.Add(1)
				if j := cur.Load(); j != nil && j.run() {
					t0, spins = time.Now(), 0
				}
				inJob.Add(-1)
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
// kept workers, and returns when every call has returned; a panic in any
// call is raised again then. Calls of Run from several goroutines at once,
// or from inside f, are served too (the later ones on goroutines of their
// own, as Go runs them).
func Run(parts int, f func(i int)) {
	if parts <= 1 {
		if parts == 1 {
			f(0)
		}
		return
	}
	if !runKept(parts, f) {
		Go(parts, f)
	}
}

// TryRun is Run where the kept workers are free: otherwise (another job
// holds them, or there are none) it runs nothing and returns false, and
// the caller does the work itself. It suits short parts that a goroutine
// each would cost more than they save: the device reads of one scan.
func TryRun(parts int, f func(i int)) bool {
	if parts <= 1 {
		if parts == 1 {
			f(0)
		}
		return true
	}
	return runKept(parts, f)
}

// runKept runs a job of parts >= 2 on the caller and the kept workers, or
// returns false at once if they are taken or there are none.
func runKept(parts int, f func(i int)) bool {
	startOnce.Do(start)
	if len(workers) == 0 || !mu.TryLock() {
		return false
	}
	for spins := 0; inJob.Load() != 0; spins++ {
		// A worker is leaving the last job's run (every part of it is
		// done: only its claim of none is left). If it was preempted
		// there, let it run.
		if spins&255 == 255 {
			runtime.Gosched()
		}
	}
	j := &kept
	j.f, j.parts, j.fault = f, int64(parts), fault{}
	j.next.Store(0)
	j.done.Store(0)
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
	cur.CompareAndSwap(j, nil)
	j.f = nil // let go of f and what it holds
	set, val := j.fault.set, j.fault.val
	j.fault.val = nil
	mu.Unlock()
	if set {
		panic(val)
	}
	return true
}

// Go calls f(i) for every i in [0, parts), each on a goroutine of its own
// when there are several, and returns when every call has returned; a
// panic in any call is raised again then. It suits parts that block (on a
// device) or that call Run, which would hold or miss the kept workers.
// The caller only waits: a part it ran itself would hold back the
// goroutine started last, which waits in the caller's run-next slot, where
// other threads take it only after a delay.
func Go(parts int, f func(i int)) {
	if parts <= 1 {
		if parts == 1 {
			f(0)
		}
		return
	}
	var (
		wg    sync.WaitGroup
		fault fault
	)
	wg.Add(parts)
	for i := range parts {
		go func() {
			defer wg.Done()
			defer fault.catch()
			f(i)
		}()
	}
	waithook.Run()
	wg.Wait()
	runtime.KeepAlive(f) // what f reaches stays reachable while the goroutines run it
	fault.raise()
}

// Ranges calls f(lo, hi) over [0, n) split into contiguous parts of at
// least minPart (the last may be shorter), at most GOMAXPROCS of them, one
// goroutine each (see Go). When the split leaves one part, f(0, n) runs on
// the calling goroutine.
func Ranges(n, minPart int, f func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), n/max(minPart, 1))
	if w <= 1 {
		f(0, n)
		return
	}
	per := (n + w - 1) / w
	Go((n+per-1)/per, func(x int) { f(x*per, min((x+1)*per, n)) })
}

// lineSize is the unit of Lines' parts: a cache line, so that no two parts'
// stores share a line (write-combining buffers and streaming stores work
// on whole lines).
const lineSize = 64

// Lines calls f(off, size) over [0, n) bytes split into parts that are
// whole 64-byte lines (but for the end of the last), of at least minPart
// bytes, at most maxParts and GOMAXPROCS of them, on the kept workers (see
// Run). When the split leaves one part, f(0, n) runs on the calling
// goroutine.
func Lines(n, minPart uint64, maxParts int, f func(off, size uint64)) {
	w := min(uint64(runtime.GOMAXPROCS(0)), uint64(max(maxParts, 0)), n/max(minPart, 1))
	if w <= 1 {
		f(0, n)
		return
	}
	part := ((n+w-1)/w + lineSize - 1) &^ (lineSize - 1)
	Run(int((n+part-1)/part), func(i int) {
		off := uint64(i) * part
		f(off, min(part, n-off))
	})
}

// Copy copies n bytes from src to dst by store, split as Lines splits
// them: store(dst+off, src+off, size) for each part. store fences its own
// stores where they need it (a fence orders only its own core's).
func Copy(dst, src unsafe.Pointer, n, minPart uint64, maxParts int, store func(dst, src unsafe.Pointer, n uint64)) {
	Lines(n, minPart, maxParts, func(off, size uint64) {
		// Both stay within the n bytes the caller passed.
		store(unsafe.Add(dst, off), unsafe.Add(src, off), size)
	})
}
