package lines

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"unsafe"

	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/par"
)

// StoreLog collects stores of whole records of type T to one region of
// mapped memory and writes them out sorted by address. It is the
// write-only counterpart of Batcher, built for throughput: a Put appends
// to a log (no lookup, no merging), and Flush sorts the log by line with
// a two- or three-pass radix sort and writes every record in address
// order. Scattered stores to VRAM cost several times as much as the same
// stores sorted (docs/physics.md), and a 64-byte record that fills its
// line goes out as one non-temporal store.
//
// Records must not straddle lines (use layout.Record). Stores to the
// same record land in Put order. A StoreLog never reads the region, so
// pending stores are invisible to readers until Flush. Not safe for
// concurrent use.
type StoreLog[T any] struct {
	base    unsafe.Pointer
	size    uintptr
	keys    []uint64 // offset<<seqBits | seq, seq being the index in data
	data    []T
	tmp     []uint64
	seqBits uint
	sortLo  uint     // lowest key bit the sort orders by
	sortBit uint     // how many bits it orders by, from sortLo up
	tmp2    []uint64 // the parallel flush's second buffer
	pos     []int32  // the parallel flush's bucket cursors
	start   []int32  // and where each bucket begins

	// Background writes (SetAsync): a full log swaps its arrays with the
	// spare ones and writes those on other goroutines while Puts go on.
	async  *sync.WaitGroup // the owner's count of writes in flight
	bg     sync.WaitGroup  // this log's write in flight
	spareK []uint64
	spareD []T
}

// topBits bounds the parallel flush's buckets: 4096 counters.
const topBits = 12

// windowBits: records of a whole line are sorted only down to windows of
// 1<<windowBits lines (4 MiB) and keep their Put order inside one. The
// order of full-line stores matters only to the TLB: random lines inside a
// few MiB cost as little as sorted ones, a fraction of what random lines
// over 1 GiB cost (docs/physics.md), so a 1 GiB segment needs one radix
// pass of 8 bits instead of two of 12 (each pass costing about as much
// per store as the sorted write itself: BenchmarkStoreLog measures the
// flush).
// Smaller records are sorted by line, so those sharing a line meet in the
// write-combining buffer.
const windowBits = 16

// NewStoreLog makes a log of at most maxEntries stores into [base,
// base+size). base must be 64-byte aligned.
func NewStoreLog[T any](base unsafe.Pointer, size uintptr, maxEntries int) (*StoreLog[T], error) {
	if uintptr(base)&lineMask != 0 {
		return nil, fmt.Errorf("layout: NewStoreLog: base %p: %w", base, ErrAlign)
	}
	if maxEntries <= 0 || maxEntries > MaxMaxLines {
		return nil, fmt.Errorf("layout: NewStoreLog: %d entries (want 1..%d)", maxEntries, MaxMaxLines)
	}
	var zero T
	if unsafe.Sizeof(zero) > LineSize {
		return nil, fmt.Errorf("layout: NewStoreLog: records of %d bytes exceed a line", unsafe.Sizeof(zero))
	}
	l := &StoreLog[T]{base: base, size: size}
	l.seqBits = uint(bits.Len(uint(maxEntries)))
	offBits := uint(bits.Len64(uint64(size)))
	if offBits+l.seqBits > 64 {
		return nil, fmt.Errorf("layout: NewStoreLog: region of %d bytes too large for %d entries", size, maxEntries)
	}
	lineBits := max(int(offBits)-6, 1)
	l.sortLo = l.seqBits + 6 // the line number's lowest bit
	if unsafe.Sizeof(zero) == LineSize {
		lineBits -= windowBits
		l.sortLo += windowBits
	}
	if lineBits > 0 {
		l.sortBit = uint(lineBits)
	}
	l.keys = make([]uint64, 0, maxEntries)
	l.data = make([]T, 0, maxEntries)
	l.tmp = make([]uint64, maxEntries)
	return l, nil
}

// Base returns the region's start.
func (l *StoreLog[T]) Base() unsafe.Pointer { return l.base }

// Pending returns the number of stores not yet written.
func (l *StoreLog[T]) Pending() int { return len(l.keys) }

// Put records a store of v at offset off (which must keep the record
// inside the region and inside one line). A full log flushes first.
func (l *StoreLog[T]) Put(off uintptr, v T) error {
	n := len(l.keys)
	if off >= l.size || l.size-off < unsafe.Sizeof(v) || n == cap(l.keys) {
		return l.putSlow(off, v)
	}
	// Small enough to inline: the store is one append to each array.
	l.keys = l.keys[:n+1]
	l.keys[n] = uint64(off)<<l.seqBits | uint64(n)
	l.data = l.data[:n+1]
	l.data[n] = v
	return nil
}

func (l *StoreLog[T]) putSlow(off uintptr, v T) error {
	if off >= l.size || l.size-off < unsafe.Sizeof(v) {
		return fmt.Errorf("layout: StoreLog.Put at %d: %w", off, ErrRange)
	}
	if l.async != nil {
		l.flushBackground()
	} else {
		l.Flush()
	}
	l.keys = append(l.keys, uint64(off)<<l.seqBits)
	l.data = append(l.data, v)
	return nil
}

// SetAsync makes a full log write itself in the background: Put swaps the
// full arrays for spare ones (the log's host memory doubles) and goes on
// while other goroutines sort and write the batch, so recording and
// writing overlap. wg counts each background write until it is done: the
// owner of the region waits on it before the region is unmapped or moved.
// Flush and Discard wait for it too. A nil wg makes Put flush in place
// again.
func (l *StoreLog[T]) SetAsync(wg *sync.WaitGroup) {
	l.bg.Wait()
	l.async = wg
}

// flushBackground hands the full arrays to a background write, after the
// previous one is done.
func (l *StoreLog[T]) flushBackground() {
	l.bg.Wait()
	if l.spareK == nil {
		l.spareK = make([]uint64, 0, cap(l.keys))
		l.spareD = make([]T, 0, cap(l.data))
	}
	keys, data := l.keys, l.data
	l.keys, l.data = l.spareK[:0], l.spareD[:0]
	l.spareK, l.spareD = keys, data
	l.bg.Add(1)
	l.async.Add(1)
	wg := l.async
	go func() {
		defer wg.Done()
		defer l.bg.Done()
		l.writeOut(keys, data)
	}()
}

// Discard drops every pending store (not one already handed to a
// background write, which it waits for).
func (l *StoreLog[T]) Discard() {
	l.bg.Wait()
	l.keys, l.data = l.keys[:0], l.data[:0]
}

// Flush writes every pending store in address order and fences, after any
// background write.
func (l *StoreLog[T]) Flush() {
	l.bg.Wait()
	if len(l.keys) == 0 {
		return
	}
	l.writeOut(l.keys, l.data)
	l.keys, l.data = l.keys[:0], l.data[:0]
}

// writeOut sorts and writes one batch and fences. One runs at a time (it
// uses the log's sort buffers).
func (l *StoreLog[T]) writeOut(keys []uint64, data []T) {
	if w := storeLogWorkers(len(keys)); w > 1 && l.sortBit > 0 {
		l.flushParallel(w, keys, data)
	} else {
		var count [1 << radixBits]uint32
		l.write(radixSort(keys, l.tmp[:len(keys)], count[:], l.sortLo, l.sortBit), data)
	}
	lineio.Fence()
}

// flushParallel sorts and writes a large batch on w goroutines, each
// owning a range of addresses. One pass here counts the stores per bucket
// (the top bits the sort orders by) and cuts the buckets into ranges of
// about n/w stores; each goroutine then picks its stores out of the log in
// Put order, sorts them by the remaining bits and writes them. Several
// cores' non-temporal stores reach the link's limit, which one core's do
// not (docs/physics.md), their page walks and reads of the logged records
// overlap, and the sort runs in parallel too (one goroutine's sort cost as
// much as the writes: BenchmarkStoreLog).
func (l *StoreLog[T]) flushParallel(w int, keys []uint64, data []T) {
	n := len(keys)
	hb := min(l.sortBit, topBits)
	shift := l.sortLo + l.sortBit - hb
	low := l.sortBit - hb
	nb := 1 << hb
	mask := uint64(nb - 1)
	if l.pos == nil {
		l.pos = make([]int32, 1<<topBits)
		l.start = make([]int32, 1<<topBits+1)
		l.tmp2 = make([]uint64, len(l.tmp))
	}
	pos, start := l.pos[:nb], l.start[:nb+1]
	clear(pos)
	for _, k := range keys {
		pos[(k>>shift)&mask]++
	}
	var sum int32
	for b, c := range pos {
		start[b] = sum
		pos[b] = sum
		sum += c
	}
	start[nb] = sum
	tmp, tmp2 := l.tmp[:n], l.tmp2[:n]
	// A range ends at the first bucket boundary at least n/w stores on (so
	// at most w ranges): buckets hold whole lines, so stores to one record
	// stay in one goroutine, in Put order.
	var ranges [16][2]int
	nr := 0
	per := int32((n + w - 1) / w)
	for b0 := 0; b0 < nb; {
		b1 := b0 + 1
		for b1 < nb && start[b1]-start[b0] < per {
			b1++
		}
		if start[b0] < start[b1] {
			ranges[nr] = [2]int{b0, b1}
			nr++
		}
		b0 = b1
	}
	par.Run(nr, func(r int) {
		b0, b1 := uint64(ranges[r][0]), uint64(ranges[r][1])
		lo, hi := start[b0], start[b1]
		for _, k := range keys {
			if b := (k >> shift) & mask; b-b0 < b1-b0 {
				tmp[pos[b]] = k
				pos[b]++
			}
		}
		var count [1 << radixBits]uint32
		part := radixSort(tmp[lo:hi], tmp2[lo:hi], count[:], l.sortLo, low)
		l.write(part, data)
		lineio.Fence() // a fence orders only its own core's stores
	})
}

// storeLogMin is the batch below which one goroutine writes the log:
// starting goroutines costs microseconds, the writes of 16K lines about
// 100.
const storeLogMin = 16 << 10

func storeLogWorkers(n int) int {
	if n < storeLogMin {
		return 1
	}
	return min(runtime.GOMAXPROCS(0), 8, n/(storeLogMin/2))
}

// write stores the records of keys (from data), in order.
func (l *StoreLog[T]) write(keys []uint64, data []T) {
	var zero T
	size := unsafe.Sizeof(zero)
	mask := uint64(1)<<l.seqBits - 1
	for _, k := range keys {
		off := uintptr(k >> l.seqBits)
		v := &data[k&mask]
		dst := unsafe.Add(l.base, off)
		if size == LineSize {
			// A record that is a whole line: one non-temporal store.
			lineio.Store(dst, (*[LineSize]byte)(unsafe.Pointer(v)))
		} else {
			// Stores only, never a read of the target; consecutive records
			// of a line combine in the write-combining buffer.
			*(*T)(dst) = *v
		}
	}
}
