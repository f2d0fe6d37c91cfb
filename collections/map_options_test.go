package collections

import (
	"math/bits"

	"github.com/govram/govram/internal/par"
)

// Options and helpers that only tests and benchmarks use.

// mapWithSegmentBuckets caps a segment at n buckets (rounded down to a
// power of two), so that tests cover segment boundaries.
func mapWithSegmentBuckets(n uint64) MapOption {
	return mapOpt(func(c *mapConfig) { c.segBuckets = 1 << (bits.Len64(max(n, 1)) - 1) })
}

// mapWithBatchLines sets the store batch (tests use tiny ones, so that
// batches fill and flush in the middle of operations).
func mapWithBatchLines(n int) MapOption { return mapOpt(func(c *mapConfig) { c.batchLines = n }) }

// mapWithDirectPuts makes every Put store at once (map_wb.go): tests
// compare both ways, benchmarks measure both.
func mapWithDirectPuts() MapOption { return mapOpt(func(c *mapConfig) { c.noWB = true }) }

// splitFixed splits a round of 8-byte keys in one pass (route.Route8):
// each core writes its keys of each shard into a region of its own of
// that shard's upload buffer, so no core waits for a count of the others.
// The regions are of fixed size, so the devices take the whole buffer in
// one copy and probe the unused slots too (their answers are never read);
// that costs a few percent more transfer and saves a pass over the keys
// on the CPU. It returns nil, having decided nothing, for other keys, for
// rounds too small, or when some core's keys of one shard overflow their
// region (keys that hash unevenly: the two-pass split then does it).
func (s *shardedMap[K, V]) splitFixed(ks []K, sid []uint8, capacity int, jobs []*mapGetJob[K, V]) *shPlan {
	pl, piece, overflowed := s.splitFixedParts(ks, sid, capacity, jobs)
	if pl == nil {
		return nil
	}
	par.Go(len(pl.plo)-1, piece)
	if overflowed() {
		return nil
	}
	return pl
}
