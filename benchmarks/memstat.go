package main

// Memory and garbage-collector figures: the Go heap and GC work from
// runtime/metrics, the process's resident memory from /proc/self/statm,
// device memory from the vmem tiers.

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/govram/govram/vmem"
)

// memSnap is the memory in use at one moment.
type memSnap struct {
	heap     int64 // bytes of live heap objects (after a GC: reachable ones)
	rss      int64 // resident set of the process
	device   int64 // mapped + private tiers in use
	hostTier int64 // govram's host tier in use
}

func memNow(dev *vmem.Device) memSnap {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	m := memSnap{heap: int64(metricUint(s[0])), rss: rssBytes()}
	if dev != nil {
		m.device = int64(dev.Info().Tiers[vmem.Mapped].InUse + dev.Info().Tiers[vmem.Private].InUse)
		m.hostTier = int64(dev.Info().Tiers[vmem.Host].InUse)
	}
	return m
}

// quiesce collects garbage and returns free memory to the operating
// system, so that heap and RSS differences count live data only.
func quiesce() { debug.FreeOSMemory() }

// builtMem measures memory once a fixture's data is built; dev may be nil
// for implementations without device memory.
func builtMem(dev *vmem.Device) *memSnap {
	quiesce()
	m := memNow(dev)
	return &m
}

// rssBytes reads the resident set size from /proc/self/statm (0 where
// there is no /proc).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// gcSnap is the garbage collector's cumulative work at one moment.
type gcSnap struct {
	gcCPU, allCPU float64 // seconds
	cycles        uint64
	pauses        *metrics.Float64Histogram
}

var gcSampleNames = []string{
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
	"/gc/cycles/total:gc-cycles",
	"/sched/pauses/total/gc:seconds",
}

func gcNow() gcSnap {
	s := make([]metrics.Sample, len(gcSampleNames))
	for i, n := range gcSampleNames {
		s[i].Name = n
	}
	metrics.Read(s)
	var g gcSnap
	if s[0].Value.Kind() == metrics.KindFloat64 {
		g.gcCPU = s[0].Value.Float64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64 {
		g.allCPU = s[1].Value.Float64()
	}
	g.cycles = metricUint(s[2])
	if s[3].Value.Kind() == metrics.KindFloat64Histogram {
		h := s[3].Value.Float64Histogram()
		g.pauses = &metrics.Float64Histogram{Counts: append([]uint64(nil), h.Counts...), Buckets: h.Buckets}
	}
	return g
}

// gcDelta is the GC work between two snapshots.
type gcDelta struct {
	cpuFraction float64 // GC CPU / all CPU (the runtime's estimate)
	gcCPU       float64 // seconds
	cycles      uint64
	pauseMax    float64 // seconds: upper bound of the highest bucket hit
	pauseP99    float64
	pauses      uint64
}

func gcSince(a, b gcSnap) gcDelta {
	d := gcDelta{gcCPU: b.gcCPU - a.gcCPU, cycles: b.cycles - a.cycles}
	if all := b.allCPU - a.allCPU; all > 0 {
		d.cpuFraction = d.gcCPU / all
	}
	if a.pauses == nil || b.pauses == nil || len(a.pauses.Counts) != len(b.pauses.Counts) {
		return d
	}
	counts := make([]uint64, len(b.pauses.Counts))
	for i := range counts {
		counts[i] = b.pauses.Counts[i] - a.pauses.Counts[i]
		d.pauses += counts[i]
	}
	upper := func(i int) float64 {
		u := b.pauses.Buckets[i+1]
		if math.IsInf(u, 1) {
			u = b.pauses.Buckets[i]
		}
		return u
	}
	var seen uint64
	for i, c := range counts {
		if c == 0 {
			continue
		}
		seen += c
		if d.pauseP99 == 0 && float64(seen) >= 0.99*float64(d.pauses) {
			d.pauseP99 = upper(i)
		}
		d.pauseMax = upper(i)
	}
	return d
}
