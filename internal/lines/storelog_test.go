package lines

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/recs"
)

func storeLogCase[T any](t *testing.T, region, maxEntries, ops int, seed uint64) {
	mem := mapRegion(t, region)
	model := make([]byte, region)
	l, err := NewStoreLog[T](unsafe.Pointer(&mem[0]), uintptr(region), maxEntries)
	if err != nil {
		t.Fatal(err)
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	r := recs.For(unsafe.Sizeof(zero), unsafe.Alignof(zero))
	slots := region / LineSize * r.PerLine
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := 0; i < ops; i++ {
		switch rng.IntN(20) {
		case 0:
			l.Flush()
			if !bytes.Equal(mem, model) {
				t.Fatalf("op %d: memory differs from the model after Flush", i)
			}
		case 1:
			// Discard loses exactly the pending stores.
			if l.Pending() == 0 {
				continue
			}
			l.Discard()
			copy(model, mem)
		default:
			slot := rng.IntN(slots)
			// Cluster half the stores so lines get several records.
			if rng.IntN(2) == 0 {
				slot = rng.IntN(min(slots, 64))
			}
			off := r.Offset(slot)
			var v T
			b := unsafe.Slice((*byte)(unsafe.Pointer(&v)), size)
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			if err := l.Put(off, v); err != nil {
				t.Fatal(err)
			}
			copy(model[off:], b)
		}
	}
	l.Flush()
	if !bytes.Equal(mem, model) {
		t.Fatal("memory differs from the model at the end")
	}
	if err := l.Put(uintptr(region), zero); !errors.Is(err, ErrRange) {
		t.Fatalf("Put past the end: %v", err)
	}
}

func TestStoreLog(t *testing.T) {
	t.Run("1", func(t *testing.T) { storeLogCase[uint8](t, 1<<16, 100, 5000, 1) })
	t.Run("8", func(t *testing.T) { storeLogCase[uint64](t, 1<<20, 1000, 20000, 2) })
	t.Run("12", func(t *testing.T) { storeLogCase[[3]uint32](t, 1<<20, 333, 20000, 3) })
	t.Run("24", func(t *testing.T) { storeLogCase[[3]uint64](t, 1<<18, 50, 20000, 4) })
	t.Run("64", func(t *testing.T) { storeLogCase[[8]uint64](t, 1<<22, 4096, 30000, 5) })
	t.Run("64/bigregion", func(t *testing.T) { storeLogCase[[8]uint64](t, 1<<25, 1<<12, 3000, 6) })
	if _, err := NewStoreLog[[9]uint64](nil, 64, 4); err == nil {
		t.Fatal("records over a line accepted")
	}
}

func BenchmarkStoreLog(b *testing.B) {
	const region = 256 << 20
	mem := mapForever(b, region)
	for i := range mem {
		mem[i] = 1
	}
	idx := make([]uintptr, 1<<20)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range idx {
		idx[i] = uintptr(rng.IntN(region/64)) * 64
	}
	for _, entries := range []int{1 << 14, 1 << 16, 1 << 18} {
		b.Run(sizeLabel(entries), func(b *testing.B) {
			l, err := NewStoreLog[[8]uint64](unsafe.Pointer(&mem[0]), region, entries)
			if err != nil {
				b.Fatal(err)
			}
			v := [8]uint64{1}
			for i := 0; i < b.N; i++ {
				v[0] = uint64(i)
				l.Put(idx[i&(len(idx)-1)], v)
			}
			l.Flush()
		})
	}
}

func sizeLabel(n int) string {
	switch {
	case n >= 1<<20:
		return string(rune('0'+n>>20)) + "M"
	}
	return itoa(n>>10) + "K"
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// TestStoreLogParallel flushes batches large enough to be written by
// several goroutines, with many stores to a few hot records so that stores
// to one record straddle the split points: the last one must still win.
// Whole-line records over 64 MiB take the windowed order (several windows,
// several goroutines); 8-byte ones the full sort.
//
// async: full logs are written in the background while Puts go on (each
// round Puts just over two logs' worth, the last handed over just before
// Flush), and the count of background writes reaches zero once Flush
// returns.
func TestStoreLogParallel(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprint("8/async=", async), func(t *testing.T) { storeLogParallel[uint64](t, 1<<22, async) })
		t.Run(fmt.Sprint("64/async=", async), func(t *testing.T) { storeLogParallel[[8]uint64](t, 1<<26, async) })
	}
}

func storeLogParallel[T any](t *testing.T, region int, async bool) {
	mem := mapRegion(t, region)
	model := make([]byte, region)
	const entries = 1 << 17
	l, err := NewStoreLog[T](unsafe.Pointer(&mem[0]), uintptr(region), entries)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	puts := entries
	if async {
		l.SetAsync(&wg)
		puts = entries*2 + 1 // the last background write starts just before Flush
	}
	if storeLogWorkers(entries) < 2 {
		t.Logf("GOMAXPROCS %d: one writer", runtime.GOMAXPROCS(0))
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	rng := rand.New(rand.NewPCG(9, 9))
	for round := 0; round < 3; round++ {
		for i := 0; i < puts-round; i++ {
			slot := rng.IntN(region / size)
			switch rng.IntN(8) {
			case 0:
				slot = rng.IntN(16) // hot records at the start of the first window
			case 1:
				// hot records at the end of a window, where parts split
				slot = (rng.IntN(region>>(windowBits+6))+1)<<(windowBits+6)/size - 1 - rng.IntN(2)
			}
			var v T
			b := unsafe.Slice((*byte)(unsafe.Pointer(&v)), size)
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			if err := l.Put(uintptr(slot*size), v); err != nil {
				t.Fatal(err)
			}
			copy(model[slot*size:], b)
		}
		l.Flush()
		if !bytes.Equal(mem, model) {
			t.Fatalf("round %d: memory differs from the model", round)
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		<-done // hangs if a background write were still counted
	}
}
