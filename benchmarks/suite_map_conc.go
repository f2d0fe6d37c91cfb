package main

// The map suite's concurrency axis: lookups from g goroutines at once, as
// the goroutines of a server make them, each with keys of its own: Get one
// at a time (operation get-hit) and GetBatch of 64, 4096 and 10^6 keys
// (batch-64, batch-4096, batch-1e6), reported as the implementation
// govram/g<g>. One operation is one key: ns/op is the aggregate time per
// key of all goroutines together, and Mkeys/s the aggregate rate.

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/govram/govram/collections"
)

const (
	defaultGoroutines = "1,16,256"
	shortGoroutines   = "1,4"
	// concMaxKeys bounds goroutines x batch: every goroutine has its own
	// answer buffers (9 bytes a key).
	concMaxKeys = 1 << 25
)

// concBatches are the GetBatch sizes of the axis; -short leaves out 10^6.
func concBatches(short bool) []int {
	if short {
		return []int{64, 4096}
	}
	return []int{64, 4096, 1_000_000}
}

func parseGoroutines(s string) ([]int, error) {
	gs, err := parseSizes(s)
	if err != nil {
		return nil, fmt.Errorf("-goroutines: %v", err)
	}
	for _, g := range gs {
		if g < 1 || g > 1<<16 {
			return nil, fmt.Errorf("-goroutines %d: want 1 to 65536", g)
		}
	}
	return gs, nil
}

// concOpNames lists the axis's operations, in the order they run.
func concOpNames(e *env) []string {
	var ops []string
	for _, g := range e.cfg.goroutines {
		v := "#g" + strconv.Itoa(g)
		ops = append(ops, "get-hit"+v)
		for _, n := range concBatches(e.short) {
			ops = append(ops, "batch-"+sizeName(n)+v)
		}
	}
	return ops
}

// concOps adds the axis's operations of a uint64 Map whose present keys
// include hit.
func concOps(e *env, fx *fixture, m *collections.Map[uint64, uint64], hit []uint64) {
	for _, g := range e.cfg.goroutines {
		v := "#g" + strconv.Itoa(g)
		fx.add("get-hit"+v, concLookups(m, hit, g, 1))
		for _, n := range concBatches(e.short) {
			fx.add("batch-"+sizeName(n)+v, concLookups(m, hit, g, n))
		}
	}
}

// concLookups answers b.N keys (rounded up to whole calls) in calls of
// batch keys (Get when batch is 1) spread over g goroutines, which take
// the next call from a shared counter; every lookup must hit.
func concLookups(m *collections.Map[uint64, uint64], hit []uint64, g, batch int) benchFunc {
	return func(b *B) error {
		if g*batch > concMaxKeys {
			return skipf("%d goroutines x %d keys is over %d keys of answer buffers", g, batch, concMaxKeys)
		}
		b.StopTimer()
		plen := len(hit)
		// Keys of any call are a contiguous window: the probes, repeated.
		keys := make([]uint64, plen+batch)
		for i := range keys {
			keys[i] = hit[i%plen]
		}
		type buf struct {
			vs     []uint64
			found  []bool
			missed int
			err    error
		}
		bufs := make([]buf, g)
		if batch > 1 {
			for w := range bufs {
				bufs[w].vs, bufs[w].found = make([]uint64, batch), make([]bool, batch)
			}
		}
		// Whole calls: the last one is not cut short, so every call is the
		// size being measured (b.N grows to many calls).
		calls := (b.N + batch - 1) / batch
		var next atomic.Int64
		var wg sync.WaitGroup
		b.StartTimer()
		for w := range bufs {
			wg.Go(func() {
				x := &bufs[w]
				for {
					c := int(next.Add(1)) - 1
					if c >= calls {
						return
					}
					lo, n := c*batch%plen, batch
					if batch == 1 {
						if _, ok := m.Get(keys[lo]); !ok {
							x.missed++
						}
						continue
					}
					if err := m.GetBatch(keys[lo:lo+n], x.vs[:n], x.found[:n]); err != nil {
						x.err = err
						return
					}
					for _, ok := range x.found[:n] {
						if !ok {
							x.missed++
						}
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		missed := 0
		for _, x := range bufs {
			if x.err != nil {
				return x.err
			}
			missed += x.missed
		}
		b.ReportMetric(float64(calls*batch)/b.Elapsed().Seconds()/1e6, "Mkeys/s")
		return checkHits(missed, calls*batch)
	}
}
