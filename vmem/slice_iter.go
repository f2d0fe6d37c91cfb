package vmem

import (
	"errors"
	"iter"
	"runtime"
	"unsafe"
)

// chunkBytes is how much All and Chunks read per DMA: large enough that
// the DMA's fixed round trip costs little against the transfer
// (docs/physics.md).
const chunkBytes = 16 << 20

// Chunks returns the elements in order as consecutive runs: yield gets the
// index of each run's first element and the run, which is valid only until
// yield returns. Runs are read by DMA in large pieces, the next one while
// yield works on the current one, so this is the fast way to scan a Slice.
// The Slice must not change length while Chunks or All runs.
func (s *Slice[T]) Chunks() iter.Seq2[int, []T] {
	return func(yield func(int, []T) bool) {
		if s.sh != nil {
			s.sh.chunks(yield)
			return
		}
		s.chunks(yield)
	}
}

// chunks is Chunks on one device (also each part of a Slice on a pool).
func (s *Slice[T]) chunks(yield func(int, []T) bool) {
	if s.closed {
		return
	}
	s.readCheck("Chunks")
	if s.n == 0 {
		return
	}
	// yield may read a run in place (host memory): s stays reachable
	// until the scan ends, so that its backstop frees nothing.
	defer runtime.KeepAlive(s)
	per := max(chunkBytes/int(max(s.size, 1)), 1)
	if s.dev.vk == nil {
		// Host memory: the segments are Go-array shaped; hand them out.
		for at := 0; at < s.n; {
			sg := &s.segs[at>>s.shift]
			j := at & (1<<s.shift - 1)
			k := min(s.n-at, sg.cap-j, per)
			run := unsafe.Slice((*T)(unsafe.Add(sg.Base, s.off(j))), k)
			if !yield(at, run) {
				return
			}
			at += k
		}
		return
	}
	// Runs land in pinned host memory when the layout is dense, so the
	// DMA needs no staging copy. Two runs alternate: the DMA of the next
	// one runs while yield works on this one, so a scan moves at the
	// link's speed rather than at half of it.
	k := min(per, s.n)
	var bufs [2][]T
	for i := range bufs {
		if s.dense(0) && s.size > 0 {
			if b, err := s.dev.alloc(Host, uint64(k)*uint64(s.size), 0, false); err == nil {
				defer s.dev.freeBlock(b)
				bufs[i] = unsafe.Slice((*T)(b.Ptr()), k)
			}
		}
		if len(bufs[i]) == 0 {
			bufs[i] = make([]T, k)
		}
	}
	readAhead(s.n, k, bufs, s.CopyTo, s.iterFail("Chunks"), yield)
}

// iterFail is where an iteration's read error goes: kept for Err, and a
// lost device ends the iteration by a panic (readLost) rather than as if
// the elements had run out.
func (s *Slice[T]) iterFail(op string) func(error) {
	return func(err error) {
		s.err.set(err)
		if errors.Is(err, ErrDeviceLost) {
			s.readLost(op)
		}
	}
}

// readAhead yields [0, n) in runs of k elements read by copyTo into the two
// buffers in turn (see runReader); an error stops it and goes to fail.
func readAhead[T any](n, k int, bufs [2][]T, copyTo func(dst []T, at int) error, fail func(error), yield func(int, []T) bool) {
	r := runReader[T]{n: n, k: k, bufs: bufs, copyTo: copyTo}
	defer r.stop()
	for {
		run, at, err := r.run()
		if err != nil {
			fail(err)
			return
		}
		if run == nil || !yield(at, run) {
			return
		}
	}
}

// runReader reads [0, n) in runs of k elements by copyTo into two buffers
// in turn (made on first use where nil): each run returned, the next is
// already being read, so a scan moves at the link's speed rather than at
// half of it. A run is valid until the next call of run; stop waits for a
// read in flight when the caller ends early.
type runReader[T any] struct {
	n, k, at, i int
	bufs        [2][]T
	copyTo      func(dst []T, at int) error
	next        chan error // the read of the run at at, in flight
	started     bool
}

// run returns the next run and the index of its first element (nil at
// the end) and starts reading the one after it.
func (r *runReader[T]) run() ([]T, int, error) {
	if !r.started {
		r.started = true
		if r.n > 0 {
			r.next = r.fetch(0, 0)
		}
	}
	if r.next == nil {
		return nil, 0, nil
	}
	err := <-r.next
	r.next = nil
	if err != nil {
		return nil, 0, err
	}
	at, i := r.at, r.i
	run := r.bufs[i][:min(r.k, r.n-at)]
	r.at, r.i = at+r.k, i^1
	if r.at < r.n {
		r.next = r.fetch(r.i, r.at)
	}
	return run, at, nil
}

// fetch starts reading the run at at into buffer i.
func (r *runReader[T]) fetch(i, at int) chan error {
	if r.bufs[i] == nil {
		r.bufs[i] = make([]T, r.k)
	}
	run := r.bufs[i][:min(r.k, r.n-at)]
	done := make(chan error, 1)
	go func() { done <- r.copyTo(run, at) }()
	return done
}

// stop waits for a read in flight.
func (r *runReader[T]) stop() {
	if r.next != nil {
		<-r.next
		r.next = nil
	}
}

// All returns every element with its index, in order (read in bulk, see
// Chunks). An error stops the iteration and is reported by Err; a lost
// device panics instead (see Get), CopyTo being the form that returns it.
func (s *Slice[T]) All() iter.Seq2[int, T] {
	// Small enough for the compiler to inline into the caller's loop, with
	// the loop body: the elements of each run are then read by a plain
	// loop, where a sequence built on Chunks called the body through a
	// function value for every element (several times slower on the
	// host: BenchmarkSliceBulk's All rows).
	return func(yield func(int, T) bool) {
		var dma bool
		if s.sh != nil {
			// A pool's runs go through the loops below too: handing yield
			// to a function of the pool would make the compiler keep the
			// caller's loop variables in memory, on one device as well.
			dma = s.sh.allStart()
		} else {
			if s.dev.isLost() && !s.closed {
				s.readLost("All")
			}
			dma = s.dev.vk != nil
		}
		if dma {
			if s.closed || s.n == 0 {
				return
			}
			r := runReader[T]{n: s.n, k: s.allRun(), copyTo: s.CopyTo}
			for {
				run, at, err := r.run()
				if err != nil {
					s.allFail(err)
					return
				}
				if run == nil {
					return
				}
				for k, v := range run {
					if !yield(at+k, v) {
						r.stop()
						return
					}
				}
			}
		}
		for at := 0; ; {
			run := s.hostRun(at)
			if len(run) == 0 {
				return
			}
			for k, v := range run {
				if !yield(at+k, v) {
					return
				}
			}
			at += len(run)
		}
	}
}

// allFail is iterFail for All, whose closure must stay small enough to
// inline.
//
//go:noinline
func (s *Slice[T]) allFail(err error) { s.iterFail("All")(err) }

// allRunBytes is how much All reads per DMA on a GPU: into buffers of the
// Go heap (a panic in the loop body leaves nothing to free), so smaller
// than Chunks' pinned runs; 4 MiB still costs the round trip little.
const allRunBytes = 4 << 20

// allRun is the elements All reads at a time by DMA.
func (s *Slice[T]) allRun() int {
	if s.sh != nil {
		return s.sh.allRun()
	}
	return min(max(allRunBytes/int(max(s.size, 1)), 1), s.n)
}

// hostRun returns, on the host backend, the run of elements from index at
// to the end of its segment or chunkBytes, in place, or nil at the end.
func (s *Slice[T]) hostRun(at int) []T {
	if s.sh != nil {
		return s.sh.hostRun(at)
	}
	if s.closed || at >= s.n {
		return nil
	}
	sg := &s.segs[at>>s.shift]
	j := at & (1<<s.shift - 1)
	k := min(s.n-at, sg.cap-j, max(chunkBytes/int(max(s.size, 1)), 1))
	return unsafe.Slice((*T)(unsafe.Add(sg.Base, s.off(j))), k)
}
