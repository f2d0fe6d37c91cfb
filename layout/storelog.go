package layout

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"unsafe"

	"github.com/govram/govram/internal/lineio"
)

// StoreLog collects stores of whole records of type T to one region of
// mapped memory and writes them out sorted by address. It is the
// write-only counterpart of Batcher, built for throughput: a Put appends
// to a log (no lookup, no merging), and Flush sorts the log by line with
// a two- or three-pass radix sort and writes every record in address
// order. Scattered stores to VRAM cost 35-72 ns each; the same stores
// sorted cost 5-11 ns (docs/physics.md), and a 64-byte record that fills its
// line goes out as one non-temporal store.
//
// Records must not straddle lines (use Record's layout). Stores to the
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
	lineLo  uint // lowest key bit that belongs to the line number
	passes  int
}

// logDigit is the radix sort's digit: 4096 counters fit in L1.
const logDigit = 12

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
	l.lineLo = l.seqBits + 6
	lineBits := max(int(offBits)-6, 1)
	l.passes = (lineBits + logDigit - 1) / logDigit
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
	if off >= l.size || l.size-off < unsafe.Sizeof(v) {
		return fmt.Errorf("layout: StoreLog.Put at %d: %w", off, ErrRange)
	}
	if len(l.keys) == cap(l.keys) {
		l.Flush()
	}
	l.keys = append(l.keys, uint64(off)<<l.seqBits|uint64(len(l.data)))
	l.data = append(l.data, v)
	return nil
}

// Discard drops every pending store.
func (l *StoreLog[T]) Discard() {
	l.keys, l.data = l.keys[:0], l.data[:0]
}

// Flush writes every pending store in address order and fences.
func (l *StoreLog[T]) Flush() {
	n := len(l.keys)
	if n == 0 {
		return
	}
	keys := l.sort()
	if w := storeLogWorkers(n); w > 1 {
		// Large batches are written by several goroutines over disjoint
		// address ranges: their reads of the logged records (scattered in
		// host memory) overlap, and several cores' non-temporal stores
		// reach the link's limit (33 GB/s against 22 for one).
		var wg sync.WaitGroup
		per := (n + w - 1) / w
		for lo := 0; lo < n; {
			hi := min(lo+per, n)
			// Stores to one record stay in one goroutine, in Put order.
			for hi < n && keys[hi]>>l.lineLo == keys[hi-1]>>l.lineLo {
				hi++
			}
			part := keys[lo:hi]
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.write(part)
				lineio.Fence() // a fence orders only its own core's stores
			}()
			lo = hi
		}
		wg.Wait()
	} else {
		l.write(keys)
	}
	lineio.Fence()
	l.keys, l.data = l.keys[:0], l.data[:0]
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

// write stores the records of keys, in order.
func (l *StoreLog[T]) write(keys []uint64) {
	var zero T
	size := unsafe.Sizeof(zero)
	mask := uint64(1)<<l.seqBits - 1
	for _, k := range keys {
		off := uintptr(k >> l.seqBits)
		v := &l.data[k&mask]
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

// sort orders the keys by line number with an LSD radix sort on the line
// bits only; it is stable, so stores to one line keep their Put order.
func (l *StoreLog[T]) sort() []uint64 {
	src, dst := l.keys, l.tmp[:len(l.keys)]
	var count [1 << logDigit]int
	for p := 0; p < l.passes; p++ {
		shift := l.lineLo + uint(p*logDigit)
		clear(count[:])
		for _, k := range src {
			count[(k>>shift)&(1<<logDigit-1)]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, k := range src {
			d := (k >> shift) & (1<<logDigit - 1)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	return src
}
