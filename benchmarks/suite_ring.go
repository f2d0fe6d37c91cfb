package main

// The ring suite: collections.Ring[uint64] against a buffered Go channel
// and the naive path (a ring buffer in mapped memory, plain loads and
// stores). The ring's capacity is the size; it starts half full.

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/govram/govram/collections"
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
)

// ringBatch is the run PushBatch and PopBatch move at a time.
const ringBatch = 4096

func ringSuite() *suite {
	return &suite{
		Name: "ring",
		About: "collections.Ring[uint64] against a buffered chan uint64 (the baseline) and the naive path " +
			"(a ring buffer in one mapped block, plain loads and stores). Capacity is the size; the ring " +
			"starts half full. One operation is one element.",
		Ops: []opDoc{
			{"push-pop", "push one element and pop one, one goroutine (an operation is the pair)"},
			{"batch", "push a run of 4096 elements and pop them (PushBatch/PopBatch into a vmem.Host block; chan: a loop; naive: copy())"},
			{"spsc", "one goroutine pushes, another pops, spinning (with runtime.Gosched) when full or empty"},
		},
		Groups: func(e *env, n int) []*group {
			return []*group{{Suite: "ring", Name: "ring", Size: n, Baselines: []string{"chan"},
				Impls: []*impl{ringGovram(e, n), ringNaive(e, n), ringChan(n)}}}
		},
	}
}

func ringGovram(e *env, n int) *impl {
	return &impl{
		Name: "govram", Role: RoleGovram, Ops: []string{"push-pop", "batch", "spsc"},
		Need: func() (uint64, uint64) { return 8 * ringBatch * 2, uint64(n) * 8 },
		Setup: func() (*fixture, error) {
			if n < 2 {
				return nil, skipf("a ring of %d elements is too small", n)
			}
			var cl closer
			r, err := collections.NewRing[uint64](e.dev, n)
			if err != nil {
				return nil, err
			}
			cl.add(r.Close)
			m := min(ringBatch, n/2)
			src := make([]uint64, m)
			for i := range src {
				src[i] = uint64(i)
			}
			for left := n / 2; left > 0; {
				k, err := r.PushBatch(src[:min(m, left)])
				if err != nil {
					return cl.fail(err)
				}
				left -= k
			}
			mem := builtMem(e.dev)
			dst := make([]uint64, m)
			if blk, err := kern.Of(e.dev).Alloc(block.Host, uint64(m)*8, 0); err == nil {
				cl.add(func() error { return kern.Of(e.dev).Free(blk) })
				dst = blockU64s(blk)[:m]
			}
			fx := &fixture{entries: n, close: cl.close, mem: mem}
			fx.add("push-pop", func(b *B) error {
				for i := range b.N {
					if err := r.Push(uint64(i)); err != nil {
						return err
					}
					v, ok := r.Pop()
					if !ok {
						return errorf("pop from a non-empty ring found nothing")
					}
					sink += v
				}
				return nil
			})
			fx.add("batch", func(b *B) error {
				b.SetBytes(8)
				for left := b.N; left > 0; {
					k := min(m, left)
					if _, err := r.PushBatch(src[:k]); err != nil {
						return err
					}
					got, err := r.PopBatch(dst[:k])
					if err != nil {
						return err
					}
					if got != k {
						return errorf("PopBatch returned %d of %d", got, k)
					}
					left -= k
				}
				return nil
			})
			fx.add("spsc", spscOp(
				func(v uint64) (bool, error) {
					err := r.Push(v)
					if errors.Is(err, collections.ErrFull) {
						return false, nil
					}
					return err == nil, err
				},
				func() (uint64, bool) { return r.Pop() }))
			return fx, nil
		},
	}
}

// spscOp moves b.N elements from a producer goroutine to the calling one.
// push reports false when the ring is full; pop false when it is empty.
// Either side stops the other on an error or a panic.
func spscOp(push func(uint64) (bool, error), pop func() (uint64, bool)) benchFunc {
	return func(b *B) error {
		var stop atomic.Bool
		var perr error
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					perr = errorf("producer: %w: %v", errPanic, p)
					stop.Store(true)
				}
			}()
			for i := 0; i < b.N && !stop.Load(); {
				ok, err := push(uint64(i))
				switch {
				case err != nil:
					perr = err
					stop.Store(true)
					return
				case ok:
					i++
				default:
					runtime.Gosched()
				}
			}
		}()
		defer func() {
			stop.Store(true)
			wg.Wait()
		}()
		for got := 0; got < b.N; {
			if v, ok := pop(); ok {
				sink += v
				got++
				continue
			}
			if stop.Load() {
				break
			}
			runtime.Gosched()
		}
		stop.Store(true)
		wg.Wait()
		return perr
	}
}

func ringChan(n int) *impl {
	return &impl{
		Name: "chan", Role: RoleBaseline, Ops: []string{"push-pop", "batch", "spsc"},
		Need: func() (uint64, uint64) { return uint64(n) * 8, 0 },
		Setup: func() (*fixture, error) {
			if n < 2 {
				return nil, skipf("a ring of %d elements is too small", n)
			}
			ch := make(chan uint64, n)
			for i := range n / 2 {
				ch <- uint64(i)
			}
			m := min(ringBatch, n/2)
			fx := &fixture{entries: n}
			fx.add("push-pop", func(b *B) error {
				for i := range b.N {
					ch <- uint64(i)
					sink += <-ch
				}
				return nil
			})
			fx.add("batch", func(b *B) error {
				b.SetBytes(8)
				for left := b.N; left > 0; {
					k := min(m, left)
					for i := range k {
						ch <- uint64(i)
					}
					for range k {
						sink += <-ch
					}
					left -= k
				}
				return nil
			})
			// Blocking sends and receives: how Go programs use a channel.
			fx.add("spsc", spscOp(
				func(v uint64) (bool, error) { ch <- v; return true, nil },
				func() (uint64, bool) { return <-ch, true }))
			return fx, nil
		},
	}
}

func ringNaive(e *env, n int) *impl {
	return &impl{
		Name: "naive", Role: RoleNaive, Ops: []string{"push-pop", "batch"},
		Need: func() (uint64, uint64) { return 8 * ringBatch * 2, uint64(n) * 8 },
		Setup: func() (*fixture, error) {
			if n < 2 {
				return nil, skipf("a ring of %d elements is too small", n)
			}
			blk, u, err := mappedU64s(e.dev, n)
			if err != nil {
				return nil, err
			}
			head, tail := 0, n/2 // positions in u
			m := min(ringBatch, n/2)
			src, dst := make([]uint64, m), make([]uint64, m)
			fx := &fixture{entries: n, close: func() error { return kern.Of(e.dev).Free(blk) }}
			fx.add("push-pop", func(b *B) error {
				for i := range b.N {
					u[tail] = uint64(i)
					if tail++; tail == n {
						tail = 0
					}
					sink += u[head]
					if head++; head == n {
						head = 0
					}
				}
				return nil
			})
			fx.add("batch", func(b *B) error {
				b.SetBytes(8)
				for left := b.N; left > 0; {
					k := min(m, left)
					c := copy(u[tail:], src[:k])
					copy(u, src[c:k])
					tail = (tail + k) % n
					c = copy(dst[:k], u[head:])
					copy(dst[c:k], u)
					head = (head + k) % n
					sink += dst[0]
					left -= k
				}
				return nil
			})
			return fx, nil
		},
	}
}
