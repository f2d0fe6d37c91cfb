package collections

// Batches over shards: a Map or a BTree on a pool splits a batch of keys
// by shard, run every shard's batch at once (one goroutine per device, so
// each GPU probes its part while the others probe theirs), and put the
// results back in the batch's order.
//
// The split is a stable counting sort done in place-sized pieces: the
// batch is cut into one contiguous piece per core; each core records the
// shard of every key of its piece (one byte a key) and counts them; a
// prefix sum over (shard, piece) says where each piece's keys of each shard
// go, so every shard's keys end up contiguous and in batch order (a key
// given twice keeps its order, which PutBatch's "the later value wins"
// needs). Results come back by replaying the same pass: each core walks
// its piece again with one cursor per shard, so both the grouped reads and
// the batch-order writes are sequential streams. No index array is kept:
// a key costs one byte of scratch besides the grouped copies. For 8-byte
// keys and values the passes run internal/route's loops, eight keys a
// step in AVX-512 where the CPU has it (faster than the plain loops:
// internal/route's BenchmarkScatterGather compares them).

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/internal/route"
)

// shPieceMin is the fewest keys worth a goroutine of their own; a batch
// is cut into at most shMaxPieces pieces (0: GOMAXPROCS). Variables so
// that tests can cut small batches into many uneven pieces.
var (
	shPieceMin  = 1 << 14
	shMaxPieces = 0
)

// shPieces returns the pieces of a batch of n keys.
func shPieces(n int) int {
	most := shMaxPieces
	if most <= 0 {
		most = runtime.GOMAXPROCS(0)
	}
	return max(min(most, n/shPieceMin), 1)
}

// shMaxShards bounds the shards of a batch: a key's shard is one byte.
const shMaxShards = 256

// shPlan is a batch of n keys grouped by shard: shard d's keys are the
// grouped positions [base[d], base[d+1]).
type shPlan struct {
	nd   int
	sid  []uint8 // shard of each key of the batch
	plo  []int   // piece p covers keys [plo[p], plo[p+1])
	off  []int   // off[p*nd+d]: first grouped position of piece p's keys of shard d
	base []int
}

// shPlanBatch groups n keys over nd shards; shardOf(i) is key i's shard. sid
// is scratch of at least n bytes (nil: allocate).
func shPlanBatch(n, nd int, sid []uint8, shardOf func(i int) int) *shPlan {
	return shPlanRanges(n, nd, sid, func(lo, hi int, sid []uint8, cnt *[shMaxShards]int) {
		for i := lo; i < hi; i++ {
			d := shardOf(i)
			sid[i] = uint8(d)
			cnt[d]++
		}
	})
}

// shPlanRanges is shPlanBatch with the shards found a piece at a time:
// fill sets sid[i] for i in [lo, hi) and counts them in cnt (a call per
// piece, not per key, so the caller's loop can be specialised).
func shPlanRanges(n, nd int, sid []uint8, fill func(lo, hi int, sid []uint8, cnt *[shMaxShards]int)) *shPlan {
	pieces := shPieces(n)
	if cap(sid) < n {
		sid = make([]uint8, n)
	}
	pl := &shPlan{nd: nd, sid: sid[:n], plo: make([]int, pieces+1), off: make([]int, pieces*nd), base: make([]int, nd+1)}
	for p := range pieces + 1 {
		pl.plo[p] = n * p / pieces
	}
	cnt := make([]int, pieces*nd)
	par.Go(pieces, func(p int) {
		// Counters on the goroutine's own stack: counters of neighbouring
		// pieces in one shared array sit in one cache line, which every
		// core's increments would pull back and forth.
		var c [shMaxShards]int
		fill(pl.plo[p], pl.plo[p+1], pl.sid, &c)
		copy(cnt[p*nd:p*nd+nd], c[:nd])
	})
	at := 0
	for d := range nd {
		pl.base[d] = at
		for p := range pieces {
			pl.off[p*nd+d] = at
			at += cnt[p*nd+d]
		}
	}
	pl.base[nd] = at
	return pl
}

// shFixedLayout returns the pieces of a batch of n keys over nd shards
// and the slots each piece gets in each shard's buffer for a one-pass
// split (route.Route8): the mean share plus six standard deviations and
// 64 slots, so that keys spread by a hash about never overflow a region.
func shFixedLayout(n, nd int) (pieces, room int) {
	pieces = shPieces(n)
	mean := float64((n+pieces-1)/pieces) / float64(nd)
	room = (int(mean+6*math.Sqrt(mean)) + 64 + 7) &^ 7
	return pieces, room
}

// shPlanFixed is the plan of a batch split in one pass into regions of
// room slots: piece p's keys of shard d sit at the start of slots
// [p·room, (p+1)·room) of shard d's buffer, the rest of the region unused
// (the shard ids say how many: no counts are kept). Shard d's run is the
// whole pieces·room slots.
func shPlanFixed(n, nd, pieces, room int, sid []uint8) *shPlan {
	pl := &shPlan{nd: nd, sid: sid[:n], plo: make([]int, pieces+1), off: make([]int, pieces*nd), base: make([]int, nd+1)}
	for p := range pieces + 1 {
		pl.plo[p] = n * p / pieces
	}
	for d := range nd + 1 {
		pl.base[d] = d * pieces * room
	}
	for p := range pieces {
		for d := range nd {
			pl.off[p*nd+d] = pl.base[d] + p*room
		}
	}
	return pl
}

// active lists the shards with keys in the batch.
func (pl *shPlan) active() []int {
	var ds []int
	for d := range pl.nd {
		if pl.base[d+1] > pl.base[d] {
			ds = append(ds, d)
		}
	}
	return ds
}

// run returns shard d's grouped range.
func (pl *shPlan) run(d int) (lo, hi int) { return pl.base[d], pl.base[d+1] }

// shGroup copies src (in batch order) into dst grouped by shard.
func shGroup[T any](pl *shPlan, src, dst []T) { shScatter(pl, src, shSplit(pl, dst)) }

// shUngroupAnswers puts grouped answers back in batch order in one pass:
// vals from gvals and, when found is not nil, found from gfound.
func shUngroupAnswers[V any](pl *shPlan, gvals, vals []V, gfound, found []bool) {
	var fd [][]bool
	if found != nil {
		fd, found = shSplit(pl, gfound), found[:len(vals)]
	}
	shGatherAnswers(pl, shSplit(pl, gvals), vals, fd, found)
}

// shSplit cuts a grouped array into each shard's run.
func shSplit[T any](pl *shPlan, a []T) [][]T {
	runs := make([][]T, pl.nd)
	for d := range runs {
		runs[d] = a[pl.base[d]:pl.base[d+1]]
	}
	return runs
}

// cursors returns piece p's first position in each shard's own slice.
func (pl *shPlan) cursors(p int) (cur [shMaxShards]int) {
	for d := range pl.nd {
		cur[d] = pl.off[p*pl.nd+d] - pl.base[d]
	}
	return cur
}

// shScatter copies src (in batch order) into per-shard slices: shard d's
// keys, in batch order, fill dsts[d] (len run(d)). A pool Map uses it to
// write keys straight into each device's upload buffer; 8-byte keys go
// through route.Place8 (vector loops).
func shScatter[T any](pl *shPlan, src []T, dsts [][]T) {
	if unsafe.Sizeof(*new(T)) == 8 {
		ks := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(src))), len(src))
		ds := make([]unsafe.Pointer, pl.nd)
		for d := range ds {
			ds[d] = unsafe.Pointer(unsafe.SliceData(dsts[d]))
		}
		par.Go(len(pl.plo)-1, func(p int) {
			cur := pl.cursors(p)
			lo, hi := pl.plo[p], pl.plo[p+1]
			route.Place8(ks[lo:hi], pl.sid[lo:hi], ds, cur[:pl.nd])
		})
		return
	}
	par.Go(len(pl.plo)-1, func(p int) {
		cur := pl.cursors(p)
		for i := pl.plo[p]; i < pl.plo[p+1]; i++ {
			d := pl.sid[i]
			dsts[d][cur[d]] = src[i]
			cur[d]++
		}
	})
}

// shGatherFrom puts answers back in batch order: dst[i] gets key i's
// result from its shard's slice (grouped in the order of the plan).
func shGatherFrom[T any](pl *shPlan, srcs [][]T, dst []T) {
	par.Go(len(pl.plo)-1, func(p int) {
		cur := pl.cursors(p)
		for i := pl.plo[p]; i < pl.plo[p+1]; i++ {
			d := pl.sid[i]
			dst[i] = srcs[d][cur[d]]
			cur[d]++
		}
	})
}

// shGather2From is shGatherFrom for two result arrays at once (values
// and found flags): one pass over the shard ids instead of two.
func shGather2From[T, U any](pl *shPlan, srcs [][]T, dst []T, srcs2 [][]U, dst2 []U) {
	par.Go(len(pl.plo)-1, func(p int) {
		cur := pl.cursors(p)
		for i := pl.plo[p]; i < pl.plo[p+1]; i++ {
			d := pl.sid[i]
			dst[i] = srcs[d][cur[d]]
			dst2[i] = srcs2[d][cur[d]]
			cur[d]++
		}
	})
}

// shGatherAnswers puts a batch's answers back in batch order: vals[i] from
// its shard's vd, and found[i] from fd when found is not nil. 8-byte
// values go through route.Gather8 (vector loops), the rest through
// shGatherFrom and shGather2From.
func shGatherAnswers[V any](pl *shPlan, vd [][]V, vals []V, fd [][]bool, found []bool) {
	if unsafe.Sizeof(*new(V)) != 8 {
		if found != nil {
			shGather2From(pl, vd, vals, fd, found)
		} else {
			shGatherFrom(pl, vd, vals)
		}
		return
	}
	par.Go(shGather8Parts(pl, vd, vals, fd, found))
}

// shGather8Parts is shGatherAnswers for 8-byte values, a piece of the plan
// at a time: it returns the pieces and the function that puts piece p's
// answers back, for the caller to run as it likes.
func shGather8Parts[V any](pl *shPlan, vd [][]V, vals []V, fd [][]bool, found []bool) (int, func(p int)) {
	src := make([]unsafe.Pointer, pl.nd)
	var fsrc []unsafe.Pointer
	if found != nil {
		fsrc = make([]unsafe.Pointer, pl.nd)
	}
	for d := range pl.nd {
		// A shard with no keys in the batch may have no buffer: Gather8
		// never reads it.
		src[d] = unsafe.Pointer(unsafe.SliceData(vd[d]))
		if found != nil {
			fsrc[d] = unsafe.Pointer(unsafe.SliceData(fd[d]))
		}
	}
	out := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(vals))), len(vals))
	return len(pl.plo) - 1, func(p int) {
		cur := pl.cursors(p)
		lo, hi := pl.plo[p], pl.plo[p+1]
		var f []bool
		if found != nil {
			f = found[lo:hi]
		}
		route.Gather8(pl.sid[lo:hi], src, cur[:pl.nd], out[lo:hi], fsrc, f)
	}
}

// shShard is what a Map or a BTree on a pool asks of every shard for
// their counts and errors.
type shShard interface {
	comparable
	Len() int
	Err() error
}

// shLens returns each shard's length (zeros once the container is closed).
func shLens[S shShard](shards []S, closed bool) []int {
	ls := make([]int, len(shards))
	if !closed {
		for d, sh := range shards {
			ls[d] = sh.Len()
		}
	}
	return ls
}

// shLen returns the shards' total length (0 once closed).
func shLen[S shShard](shards []S, closed bool) int {
	n := 0
	for _, l := range shLens(shards, closed) {
		n += l
	}
	return n
}

// shErr returns the first shard's error; shards not made yet (a
// constructor that failed half way) have none.
func shErr[S shShard](shards []S) error {
	var none S
	for _, sh := range shards {
		if sh != none {
			if err := sh.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// shRun runs f for every shard in ds, one goroutine each when there are
// several, and joins the errors, each naming its shard.
func shRun(ds []int, f func(d int) error) error {
	errs := make([]error, len(ds))
	par.Go(len(ds), func(k int) {
		if err := f(ds[k]); err != nil {
			errs[k] = fmt.Errorf("shard %d: %w", ds[k], err)
		}
	})
	return errors.Join(errs...)
}

// shScratch holds a batch's grouped copies, reused across batches (a
// batch of ten million keys would otherwise allocate and zero hundreds of
// megabytes per call).
type shScratch[K, V any] struct {
	sid   []uint8
	keys  []K
	vals  []V
	found []bool
}

func (sc *shScratch[K, V]) size(n int) {
	if cap(sc.keys) < n {
		sc.sid = make([]uint8, n)
		sc.keys = make([]K, n)
		sc.vals = make([]V, n)
		sc.found = make([]bool, n)
	}
	sc.sid, sc.keys, sc.vals, sc.found = sc.sid[:n], sc.keys[:n], sc.vals[:n], sc.found[:n]
}

// release drops references (string keys and values point into the Go
// heap) before the scratch goes back to its pool.
func (sc *shScratch[K, V]) release(p *sync.Pool, strs bool) {
	if strs {
		clear(sc.keys[:cap(sc.keys)])
		clear(sc.vals[:cap(sc.vals)])
	}
	p.Put(sc)
}
