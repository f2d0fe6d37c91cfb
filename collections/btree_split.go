package collections

import (
	"math/bits"
	"os"
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
// depend on one another: with VMEM_SCAN_PARTS=k (2 to 16), a streamed
// window of at least btSplitMinLines lines is cut into up to k runs of
// whole leaves, read at once by the scan's goroutine and par's kept
// workers (par.TryRun). When the workers are busy with another job the
// scan reads its leaves itself, as without the setting. Off by default:
// whether the cores the workers take pay for themselves has to be
// measured on a GPU (vmem's BenchmarkLineRuns, collections'
// BenchmarkBTreeTier with VMEM_BENCH_SCAN_PARTS).

const envScanParts = "VMEM_SCAN_PARTS"

// btScanParts is the most parts a window's device reads are cut into (1:
// not cut). Tests and benchmarks set it.
var btScanParts = scanPartsFrom(os.Getenv(envScanParts))

// btSplitMinLines: a window of fewer lines is read by its scan alone (a
// part of a line or two would cost its hand-off and gain nothing).
const btSplitMinLines = 16

// scanPartsFrom parses VMEM_SCAN_PARTS: 1 (off) unless it is a count from 2
// to 16.
func scanPartsFrom(env string) int {
	k, err := strconv.Atoi(env)
	if err != nil || k < 2 {
		return 1
	}
	return min(k, 16)
}

// splitWorth reports whether a window of n leaves and lines live lines on
// mapped VRAM is read in parts.
func splitWorth(e *btExtent, n, lines int) bool {
	return btScanParts >= 2 && n >= 2 && lines >= btSplitMinLines && e.Kind == access.WC
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
