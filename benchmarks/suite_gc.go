package main

// The gc suite: what keeping the data costs the rest of the program. Each
// container is built as in its own suite; the report's memory table gives
// its Go heap, resident memory and device memory per entry, and two cases
// measure the garbage collector with the container live.

import (
	"runtime"
)

func gcSuite() *suite {
	return &suite{
		Name: "gc",
		About: "The cost of holding the data for the rest of the program, with each container built as in its " +
			"own suite: the Go heap it adds (which the collector must scan), the process's resident memory " +
			"(/proc/self/statm) and device memory, per entry (the memory table), and the collector's work " +
			"with the container live (runtime/metrics). Containers holding pointers (string keys, " +
			"google/btree's nodes) make every GC cycle longer; govram's live off the heap.",
		Ops: []opDoc{
			{"full-gc", "one forced collection (runtime.GC) with the container live: its cost grows with the live heap's pointers"},
			{"churn", "allocate a 256-byte object (the program's own garbage), keeping the last 1024: metrics give the collector's share of CPU (gc-cpu-%) and its pauses"},
		},
		Groups: func(e *env, n int) []*group {
			wrap := func(ims ...*impl) []*impl {
				for i, im := range ims {
					ims[i] = gcImpl(im)
				}
				return ims
			}
			return []*group{
				{Suite: "gc", Name: "gc-map", Size: n, Baselines: []string{"go map"},
					Impls: wrap(mapGovram(e, n), mapGo(e, n))},
				{Suite: "gc", Name: "gc-map-string", Size: n, Baselines: []string{"go map", "fastcache"},
					Impls: wrap(smapGovram(e, n), smapGo(e, n), smapFastcache(e, n))},
				{Suite: "gc", Name: "gc-btree", Size: n, Baselines: []string{"google/btree"},
					Impls: wrap(btGovram(e, n), btGoogle(e, n))},
				{Suite: "gc", Name: "gc-slice", Size: n, Baselines: []string{"[]uint64"},
					Impls: wrap(sliceGovram(e, n), sliceHeap(n))},
			}
		},
	}
}

// gcImpl turns an implementation of another suite into one whose cases
// measure the collector; its data stays live through the old operations,
// which the new ones keep reachable.
func gcImpl(im *impl) *impl {
	setup := im.Setup
	return &impl{
		Name: im.Name, Role: im.Role, Ops: []string{"full-gc", "churn"}, Need: im.Need,
		Setup: func() (*fixture, error) {
			fx, err := setup()
			if err != nil {
				return nil, err
			}
			held := fx.ops
			fx.ops = nil
			fx.add("full-gc", func(b *B) error {
				for range b.N {
					runtime.GC()
				}
				runtime.KeepAlive(held)
				return nil
			})
			fx.add("churn", func(b *B) error {
				var keep [1024][]byte
				g0 := gcNow()
				for i := range b.N {
					keep[i&1023] = make([]byte, 256)
				}
				b.StopTimer()
				d := gcSince(g0, gcNow())
				runtime.KeepAlive(keep)
				runtime.KeepAlive(held)
				b.ReportMetric(100*d.cpuFraction, "gc-cpu-%")
				b.ReportMetric(float64(d.cycles), "gc-cycles")
				b.ReportMetric(d.pauseMax*1e6, "pause-max-µs")
				return nil
			})
			return fx, nil
		},
	}
}
