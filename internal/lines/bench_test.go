package lines

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/lineio"
)

const bigRegion = 1 << 30

var (
	bigOnce sync.Once
	bigMem  []byte
	bigIdx  []uint64 // random line numbers in bigMem
)

// big returns a 1 GiB off-heap region with every page already faulted in
// (a first touch costs far more than the stores measured) and a fixed
// sequence of random line numbers over it.
func big(b *testing.B) ([]byte, []uint64) {
	bigOnce.Do(func() {
		bigMem = mapForever(b, bigRegion)
		for i := 0; i < len(bigMem); i += 4096 {
			bigMem[i] = 1
		}
		r := rand.New(rand.NewPCG(1, 2))
		bigIdx = make([]uint64, 1<<20)
		for i := range bigIdx {
			bigIdx[i] = r.Uint64N(bigRegion / LineSize)
		}
	})
	return bigMem, bigIdx
}

// BenchmarkRandomStore writes random lines of a 1 GiB region; ns/op is
// per line. naive-* store straight to memory in random order; batcher-*
// go through a Batcher (merge, sort, NT store or dirty bytes, one fence
// per flush), flushing every maxLines lines.
func BenchmarkRandomStore(b *testing.B) {
	mem, idx := big(b)
	base := unsafe.Pointer(&mem[0])
	var line [LineSize]byte
	b.Run("naive-plain8", func(b *testing.B) {
		i := 0
		for b.Loop() {
			*(*uint64)(lineAt(base, idx[i&(len(idx)-1)])) = uint64(i)
			i++
		}
	})
	b.Run("naive-nt64", func(b *testing.B) {
		i := 0
		for b.Loop() {
			lineio.Store(lineAt(base, idx[i&(len(idx)-1)]), &line)
			i++
		}
		lineio.Fence()
	})
	b.Run("presorted-nt64", func(b *testing.B) {
		// The bound for sorting: the same stores already in order.
		sorted := slices.Clone(idx[:8192])
		slices.Sort(sorted)
		i := 0
		for b.Loop() {
			lineio.Store(lineAt(base, sorted[i&8191]), &line)
			i++
		}
		lineio.Fence()
	})
	for _, maxLines := range []int{1024, 8192, 65536} {
		for _, sorted := range []bool{true, false} {
			order := "sorted"
			if !sorted {
				order = "unsorted"
			}
			b.Run(fmt.Sprintf("batcher-line/%s/max=%d", order, maxLines), func(b *testing.B) {
				bt, err := NewBatcher(base, bigRegion, maxLines)
				if err != nil {
					b.Fatal(err)
				}
				bt.unsorted = !sorted
				i := 0
				for b.Loop() {
					_ = bt.Put(uintptr(idx[i&(len(idx)-1)])*LineSize, line[:])
					i++
				}
				bt.Flush()
			})
		}
		b.Run(fmt.Sprintf("batcher-uint64/sorted/max=%d", maxLines), func(b *testing.B) {
			bt, _ := NewBatcher(base, bigRegion, maxLines)
			i := 0
			for b.Loop() {
				_ = bt.PutUint64(uintptr(idx[i&(len(idx)-1)])*LineSize+uintptr(i&7)*8, uint64(i))
				i++
			}
			bt.Flush()
		})
	}
}

// BenchmarkRandomLoad reads 8 bytes of a random line of the 1 GiB region:
// a plain Go load against Batcher.Get (one streaming line load).
func BenchmarkRandomLoad(b *testing.B) {
	mem, idx := big(b)
	base := unsafe.Pointer(&mem[0])
	var sink uint64
	b.Run("plain8", func(b *testing.B) {
		i := 0
		for b.Loop() {
			sink += *(*uint64)(lineAt(base, idx[i&(len(idx)-1)]))
			i++
		}
	})
	b.Run("batcher-get8", func(b *testing.B) {
		bt, _ := NewBatcher(base, bigRegion, 0)
		i := 0
		for b.Loop() {
			v, _ := bt.GetUint64(uintptr(idx[i&(len(idx)-1)]) * LineSize)
			sink += v
			i++
		}
	})
	_ = sink
}

// BenchmarkFlushOrder measures Flush's bucket sort alone, per line, for
// batches spread over the 1 GiB region (32768 lines and more are dense
// enough to be sorted).
func BenchmarkFlushOrder(b *testing.B) {
	_, idx := big(b)
	for _, n := range []int{8192, 32768, 262144} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			bt, _ := NewBatcher(unsafe.Pointer(&struct{ _ [64]byte }{}), 64, n)
			copy(bt.line, idx[:n])
			bt.n = n
			for b.Loop() {
				bt.flushOrder()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/line")
		})
	}
}
