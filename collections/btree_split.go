package collections

import (
	"math/bits"
	"os"
	"runtime"
	"strconv"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/par"
)

// A scan's device reads split over cores.
//
// One core streams about 0.3 GB/s from mapped VRAM (docs/physics.md: a
// handful of lines in flight at a time), so a window whose leaves all miss
// costs a round trip plus about 0.2 µs a line: a Range of 100 uint64 pairs
// reads about 33 lines, some 8 µs, where google/btree takes 2-4 µs.
// Sixteen cores stream 3.5 GB/s, and the lines of different leaves do not
// depend on one another: a streamed window of at least btSplitMinLines
// lines is cut into up to btScanParts runs of whole leaves, read at once
// by the scan's goroutine and par's kept workers (par.TryRun). On an H200
// a lone goroutine's Range(100) of Zipf 1.1 starts took 4.5-5.0 µs in four
// parts in three processes, 3.2-7.9 µs on one core; of uniform starts
// 7.3-8.7 µs against 6.5-13.1 (docs/btree.md). Scans of many goroutines
// at once already keep the link busy, and the workers' cores are theirs:
// a window is cut only while at most btSplitReaders windows of the tree
// are being read. When the workers are busy with another job the scan
// reads its leaves itself. VMEM_SCAN_PARTS=k sets the parts (1: never
// cut); the default is four where GOMAXPROCS is at least eight, otherwise
// none.

const envScanParts = "VMEM_SCAN_PARTS"

// btScanParts is the most parts a window's device reads are cut into (1:
// not cut). Tests and benchmarks set it.
var btScanParts = scanPartsFrom(os.Getenv(envScanParts), btProcs)

// btProcs is GOMAXPROCS when the package started, as par's kept workers
// are counted.
var btProcs = runtime.GOMAXPROCS(0)

// btSplitMinLines: a window of fewer lines is read by its scan alone (a
// part of a line or two would cost its hand-off and gain nothing).
const btSplitMinLines = 16

// btSplitAuto is the default parts where GOMAXPROCS is at least
// btSplitAutoProcs (BenchmarkLineRuns on an H200: runs of 32 lines read in
// 4 parts took 3.3 µs, in 2 4.1, in 8 4.1, in one 5.4).
const (
	btSplitAuto      = 4
	btSplitAutoProcs = 8
)

// scanPartsFrom parses VMEM_SCAN_PARTS for procs cores: a count from 1 to
// 16 (1: off); unset or not a count, the default.
func scanPartsFrom(env string, procs int) int {
	k, err := strconv.Atoi(env)
	if err != nil || k < 1 {
		if procs >= btSplitAutoProcs {
			return btSplitAuto
		}
		return 1
	}
	return min(k, 16)
}

// btSplitReaders is how many windows of one tree may be in reading, this
// one included, for this one to be cut: half the cores shared by k parts
// each, at least one.
func btSplitReaders(k int) int32 { return int32(max(1, btProcs/(2*k))) }

// splitWorth reports whether a window of n leaves and lines live lines on
// mapped VRAM is read in parts, reading the number of the tree's windows
// in reading, this one's included.
func splitWorth(e *btExtent, n, lines int, reading int32) bool {
	k := btScanParts
	return k >= 2 && n >= 2 && lines >= btSplitMinLines && e.Kind == access.WC && reading <= btSplitReaders(k)
}

// streamSplit streams the live lines of the window's leaves whose bit is
// set in pick (bit i: s.win[i]; at most 64 leaves) into their places in
// the scan's buffer, in up to btScanParts runs of leaves read at once. It
// reports false, having read nothing, if the kept workers are taken.
func (t *BTree[K, V]) streamSplit(e *btExtent, s *btScan, pick uint64) bool {
	sp := s.sp
	if sp == nil {
		// Made once for the scan state (which serves this tree only), so
		// that a window read in parts allocates nothing.
		sp = &btSplit{}
		g := &t.g
		sp.part = func(p int) {
			for _, i := range sp.idx[p*sp.n/sp.k : (p+1)*sp.n/sp.k] {
				w := s.win[i]
				t.streamLeaf(sp.e, w, btBytes(s.leaf(g, w.id), g.leafSize))
			}
		}
		s.sp = sp
	}
	sp.n, sp.e = 0, e
	for m := pick; m != 0; m &= m - 1 {
		sp.idx[sp.n] = uint8(bits.TrailingZeros64(m))
		sp.n++
	}
	sp.k = min(btScanParts, sp.n)
	ok := par.TryRun(sp.k, sp.part)
	sp.e = nil
	if ok && btSplitHook != nil {
		btSplitHook()
	}
	return ok
}

// btSplit is a scan state's reading of a window in parts: the leaves
// (indexes into the window) cut into k runs, and par's part function.
type btSplit struct {
	idx  [64]uint8
	n, k int
	e    *btExtent
	part func(p int)
}

// btSplitHook, when set (tests), is called after each window read in
// parts.
var btSplitHook func()

// btWinMask is the mask of a window's first n leaves (n <= 64).
func btWinMask(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<n - 1
}
