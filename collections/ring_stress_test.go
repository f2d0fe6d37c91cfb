package collections

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// ringStressElem is 12 bytes, so elements straddle lines; Chk detects a
// torn or misplaced read.
type ringStressElem struct {
	Seq uint64
	Chk uint32
}

func ringStressMake(seq uint64) ringStressElem {
	return ringStressElem{Seq: seq, Chk: uint32(seq*0x9E3779B97F4A7C15>>32) ^ 0xA5A5A5A5}
}

func (e ringStressElem) ok() bool { return e == ringStressMake(e.Seq) }

// TestRingConcurrent runs one producer (Push and PushBatch) against one
// consumer (Pop, PopBatch, Peek, All) and a third goroutine calling Len,
// without locks, on every backend and policy. With ringErrorWhenFull the
// consumer must see every element exactly once, in order; with
// ringOverwriteOldest it must see whole elements in increasing order, ending
// with the last one pushed. Run it with -race.
func TestRingConcurrent(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		n := uint64(60000)
		if testing.Short() || d.Info().Backend == vmem.BackendVulkan {
			n = 15000
		}
		for _, capacity := range []int{5, 64, 1000} {
			for _, policy := range []ringPolicy{ringErrorWhenFull, ringOverwriteOldest} {
				for tiny, opts := range [][]RingOption{nil, ringTinyOpts()} {
					name := fmt.Sprintf("cap%d/%v/tiny=%d", capacity, policy, tiny)
					t.Run(name, func(t *testing.T) {
						if tiny == 1 {
							// Yield while holding an announcement, so that the
							// producer often wants the slot being read.
							ringHookStaged = runtime.Gosched
							defer func() { ringHookStaged = nil }()
						}
						r, err := NewRing[ringStressElem](d, capacity, append(opts, withPolicy(policy))...)
						if err != nil {
							t.Fatal(err)
						}
						defer r.Close()
						ringStress(t, r, n, uint64(capacity)+uint64(tiny))
					})
				}
			}
		}
	})
}

func ringStress(t *testing.T, r *Ring[ringStressElem], n, seed uint64) {
	var wg sync.WaitGroup
	var done atomic.Bool
	errc := make(chan error, 3)
	wg.Add(2)
	go func() { // producer
		defer wg.Done()
		ringStressProduce(r, n, seed, &done, errc)
	}()
	go func() { // Len from a third goroutine
		defer wg.Done()
		for !done.Load() {
			if l := r.Len(); l < 0 || l > int(r.capacity) {
				errc <- fmt.Errorf("Len %d outside [0, %d]", l, int(r.capacity))
				return
			}
			runtime.Gosched()
		}
	}()
	// The consumer runs here.
	defer func() {
		done.Store(true)
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Error(err)
		}
	}()
	overwrite := r.overwrite
	rng := rand.New(rand.NewPCG(seed, 2))
	var next uint64 // the next element expected
	got := func(e ringStressElem, what string) bool {
		switch {
		case !e.ok():
			t.Errorf("%s: torn element %+v", what, e)
		case !overwrite && e.Seq != next, overwrite && e.Seq < next:
			t.Errorf("%s: element %d, expected %d", what, e.Seq, next)
		default:
			next = e.Seq + 1
			return true
		}
		return false
	}
	dst := make([]ringStressElem, 100)
	idle := 0
	for next < n {
		select {
		case err := <-errc:
			t.Fatal(err)
		default:
		}
		progress := false
		switch k := rng.IntN(20); {
		case k < 10:
			if e, ok := r.Pop(); ok {
				if !got(e, "Pop") {
					return
				}
				progress = true
			}
		case k < 16:
			m, err := r.PopBatch(dst[:1+rng.IntN(len(dst))])
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range dst[:m] {
				if !got(e, "PopBatch") {
					return
				}
			}
			progress = m > 0
		case k < 19:
			if e, ok := r.Peek(); ok {
				if !e.ok() || (!overwrite && e.Seq != next) || e.Seq < next {
					t.Fatalf("Peek: %+v, expected %d", e, next)
				}
			}
		default:
			prev := next
			for i, e := range r.All() {
				if !e.ok() || e.Seq < prev || (!overwrite && e.Seq != next+uint64(i)) {
					t.Fatalf("All[%d]: %+v after %d", i, e, prev)
				}
				prev = e.Seq + 1
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
		}
		if progress {
			idle = 0
		} else if idle++; idle > 3 {
			runtime.Gosched()
		}
	}
	if e, ok := r.Pop(); ok {
		t.Fatalf("element %+v after the last", e)
	}
}

// ringStressProduce is ringStress's producer: it pushes elements 0 to n-1,
// one at a time or in batches, until done; it sends its errors on errc.
func ringStressProduce(r *Ring[ringStressElem], n, seed uint64, done *atomic.Bool, errc chan<- error) {
	rng := rand.New(rand.NewPCG(seed, 1))
	buf := make([]ringStressElem, 80)
	for seq := uint64(0); seq < n; {
		if done.Load() {
			return // the consumer gave up
		}
		if rng.IntN(4) == 0 {
			k := min(uint64(1+rng.IntN(len(buf))), n-seq)
			for i := range buf[:k] {
				buf[i] = ringStressMake(seq + uint64(i))
			}
			for pushed := 0; pushed < int(k); {
				m, err := r.PushBatch(buf[pushed:k])
				pushed += m
				if err != nil && !errors.Is(err, ErrFull) {
					errc <- err
					return
				}
				if err != nil {
					if done.Load() {
						return
					}
					runtime.Gosched()
				}
			}
			seq += k
			continue
		}
		for {
			err := r.Push(ringStressMake(seq))
			if err == nil {
				break
			}
			if !errors.Is(err, ErrFull) {
				errc <- err
				return
			}
			if done.Load() {
				return
			}
			runtime.Gosched()
		}
		seq++
	}
	// Publish the last pushes: the consumer waits for the last element.
	if err := r.Flush(); err != nil {
		errc <- err
	}
}

// TestRingLockedMPMC shows the contract for more than one producer or
// consumer: a lock per side. Three producers share one mutex, two consumers
// another; every element arrives exactly once, and each producer's elements
// arrive in the order it pushed them.
func TestRingLockedMPMC(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		const producers, consumers, per = 3, 2, 4000
		r, err := NewRing[ringStressElem](d, 100, ringWithStageLines(2))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var pmu, cmu sync.Mutex
		var wg sync.WaitGroup
		var stop atomic.Bool
		for p := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					e := ringStressMake(uint64(p)<<32 | uint64(i))
					for {
						pmu.Lock()
						err := r.Push(e)
						pmu.Unlock()
						if err == nil {
							break
						}
						if stop.Load() {
							return // a consumer failed
						}
						runtime.Gosched()
					}
				}
				pmu.Lock()
				r.Flush() // the consumers wait for every element
				pmu.Unlock()
			}()
		}
		var got atomic.Int64
		next := make([]uint64, producers) // guarded by cmu
		errc := make(chan error, consumers)
		for range consumers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				dst := make([]ringStressElem, 7)
				for got.Load() < producers*per {
					cmu.Lock()
					n, err := r.PopBatch(dst)
					for _, e := range dst[:n] {
						p, i := e.Seq>>32, e.Seq&(1<<32-1)
						if !e.ok() || p >= producers || i != next[p] {
							err = fmt.Errorf("element %+v out of order", e)
							break
						}
						next[p]++
					}
					cmu.Unlock()
					if err != nil {
						errc <- err
						stop.Store(true)
						got.Store(producers * per)
						return
					}
					got.Add(int64(n))
					if n == 0 {
						runtime.Gosched()
					}
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		if r.Len() != 0 {
			t.Fatalf("Len %d after all were popped", r.Len())
		}
	})
}
