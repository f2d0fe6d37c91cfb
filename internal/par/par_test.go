package par

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/govram/govram/internal/waithook"
)

// check runs a job of parts and verifies each part ran exactly once
// before Run returned.
func check(t *testing.T, parts int) {
	t.Helper()
	hits := make([]atomic.Int32, max(parts, 1))
	Run(parts, func(i int) {
		if i < 0 || i >= parts {
			t.Errorf("part %d of %d", i, parts)
			return
		}
		hits[i].Add(1)
	})
	for i := range parts {
		if n := hits[i].Load(); n != 1 {
			t.Fatalf("parts=%d: part %d ran %d times", parts, i, n)
		}
	}
}

func TestRun(t *testing.T) {
	for _, parts := range []int{0, 1, 2, 3, 7, 16, 100} {
		check(t, parts)
	}
}

// TestRunAfterPark: workers that parked after spinning are woken by the
// next job.
func TestRunAfterPark(t *testing.T) {
	for range 3 {
		check(t, 8)
		time.Sleep(3 * spinFor)
	}
}

// TestRunConcurrent: several callers at once, and Run called from inside a
// part; every part of every job runs once.
func TestRunConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 200 {
				parts := 1 + (g*7+k)%13
				if k%5 == 0 {
					var inner atomic.Int32
					Run(parts, func(int) {
						Run(3, func(int) { inner.Add(1) })
					})
					if n := inner.Load(); n != int32(3*parts) {
						t.Errorf("nested: %d calls, want %d", n, 3*parts)
					}
					continue
				}
				check(t, parts)
			}
		}()
	}
	wg.Wait()
}

// TestRunReleases: a finished job no longer holds its function (and what
// the function holds).
func TestRunReleases(t *testing.T) {
	Run(4, func(int) {})
	if cur.Load() != nil {
		t.Fatal("the finished job is still posted")
	}
}

// TestTryRun: with the workers free every part runs once; while another
// job holds them TryRun runs nothing and says so.
func TestTryRun(t *testing.T) {
	startOnce.Do(start)
	if len(workers) == 0 {
		t.Skip("no kept workers: the package started with one P")
	}
	for _, parts := range []int{1, 2, 5, 16} {
		hits := make([]atomic.Int32, parts)
		if !TryRun(parts, func(i int) { hits[i].Add(1) }) {
			t.Fatalf("parts=%d: refused with the workers free", parts)
		}
		for i := range hits {
			if n := hits[i].Load(); n != 1 {
				t.Fatalf("parts=%d: part %d ran %d times", parts, i, n)
			}
		}
	}
	release, started := make(chan struct{}), make(chan struct{}, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(2, func(int) {
			started <- struct{}{}
			<-release
		})
	}()
	<-started // the job holds the workers until release
	var ran atomic.Int32
	if TryRun(3, func(int) { ran.Add(1) }) {
		t.Fatal("TryRun ran while another job held the workers")
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("a refused TryRun ran %d parts", n)
	}
	close(release)
	<-done
	if !TryRun(2, func(int) { ran.Add(1) }) || ran.Load() != 2 {
		t.Fatalf("after the job: TryRun ran %d parts", ran.Load())
	}
}

// TestKeptJobNoAllocs: posting a job to the kept workers allocates
// nothing (a scan posts one per window it reads in parts).
func TestKeptJobNoAllocs(t *testing.T) {
	startOnce.Do(start)
	if len(workers) == 0 {
		t.Skip("no kept workers: the package started with one P")
	}
	var sum atomic.Int64
	f := func(i int) { sum.Add(int64(i)) }
	if n := testing.AllocsPerRun(200, func() { TryRun(4, f) }); n != 0 {
		t.Errorf("TryRun: %v allocations a call", n)
	}
	if n := testing.AllocsPerRun(200, func() { Run(4, f) }); n != 0 {
		t.Errorf("Run: %v allocations a call", n)
	}
	if sum.Load() == 0 {
		t.Fatal("no part ran")
	}
}

// goid is the calling goroutine's id, to tell inline calls from others.
func goid() string {
	var b [64]byte
	s := string(b[:runtime.Stack(b[:], false)])
	return strings.Fields(s)[1]
}

// TestGo: every part runs once, a single part on the caller's goroutine,
// several on goroutines of their own.
func TestGo(t *testing.T) {
	me := goid()
	for _, parts := range []int{0, 1, 2, 5, 33} {
		hits := make([]atomic.Int32, max(parts, 1))
		var inline atomic.Int32
		Go(parts, func(i int) {
			hits[i].Add(1)
			if goid() == me {
				inline.Add(1)
			}
		})
		for i := range parts {
			if n := hits[i].Load(); n != 1 {
				t.Fatalf("parts=%d: part %d ran %d times", parts, i, n)
			}
		}
		if want := int32(min(parts, 1)); parts > 1 && inline.Load() != 0 || parts <= 1 && inline.Load() != want {
			t.Fatalf("parts=%d: %d parts ran on the caller", parts, inline.Load())
		}
	}
}

// cover checks that the ranges f got cover [0, n) once each, in parts of
// at least minPart (but for the last) and at most maxParts of them.
func cover(t *testing.T, name string, n, minPart, maxParts int, got [][2]int) {
	t.Helper()
	slices.SortFunc(got, func(a, b [2]int) int { return a[0] - b[0] })
	at := 0
	for i, r := range got {
		if r[0] != at || r[1] <= r[0] && n > 0 || r[1] > n {
			t.Fatalf("%s n=%d minPart=%d: ranges %v do not tile [0, n)", name, n, minPart, got)
		}
		if i < len(got)-1 && r[1]-r[0] < minPart {
			t.Fatalf("%s n=%d minPart=%d: part %v under minPart", name, n, minPart, r)
		}
		at = r[1]
	}
	if at != n || len(got) > max(maxParts, 1) {
		t.Fatalf("%s n=%d minPart=%d: %d ranges %v (at most %d)", name, n, minPart, len(got), got, maxParts)
	}
}

// TestRanges: the parts tile [0, n) with no overlap, at most GOMAXPROCS of
// at least minPart; a split of one part runs on the caller's goroutine.
func TestRanges(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	me := goid()
	for _, n := range []int{0, 1, 7, 100, 1000, 4096, 100003} {
		for _, minPart := range []int{0, 1, 3, 64, 1000, 1 << 20} {
			var mu sync.Mutex
			var got [][2]int
			inline := false
			Ranges(n, minPart, func(lo, hi int) {
				mu.Lock()
				got = append(got, [2]int{lo, hi})
				inline = inline || goid() == me
				mu.Unlock()
			})
			cover(t, "Ranges", n, minPart, procs, got)
			if w := min(procs, n/max(minPart, 1)); (w <= 1) != inline {
				t.Fatalf("n=%d minPart=%d: %d parts, inline %v", n, minPart, len(got), inline)
			}
		}
	}
}

// TestRangesSplit: with GOMAXPROCS cores, a range large enough is split
// into that many parts, each within one of the others.
func TestRangesSplit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var parts atomic.Int32
	Ranges(4000, 1000, func(lo, hi int) {
		parts.Add(1)
		if hi-lo != 1000 {
			t.Errorf("part [%d, %d)", lo, hi)
		}
	})
	if parts.Load() != 4 {
		t.Fatalf("%d parts, want 4", parts.Load())
	}
}

// TestLines: parts are whole lines but for the end, tile [0, n), at most
// maxParts and GOMAXPROCS of at least minPart; one part runs inline.
func TestLines(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	me := goid()
	for _, n := range []uint64{0, 1, 63, 64, 1000, 4096, 1 << 20, 1<<20 + 17} {
		for _, minPart := range []uint64{0, 1, 64, 1000, 1 << 16} {
			for _, maxParts := range []int{0, 1, 2, 4, 16} {
				var mu sync.Mutex
				var got [][2]int
				inline := false
				Lines(n, minPart, maxParts, func(off, size uint64) {
					if off%64 != 0 {
						t.Errorf("part at %d", off)
					}
					mu.Lock()
					got = append(got, [2]int{int(off), int(off + size)})
					inline = inline || goid() == me
					mu.Unlock()
				})
				cover(t, "Lines", int(n), int(minPart), min(maxParts, 8), got)
				if len(got) == 1 && !inline {
					t.Fatalf("n=%d minPart=%d maxParts=%d: one part, not inline", n, minPart, maxParts)
				}
			}
		}
	}
}

// TestCopy: every byte arrives, each part through store.
func TestCopy(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, n := range []int{0, 1, 100, 4096, 1<<16 + 5} {
		src := make([]byte, n+1)
		for i := range src {
			src[i] = byte(i*7 + 1)
		}
		dst := make([]byte, n+1)
		var calls atomic.Int32
		Copy(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), uint64(n), 1024, 16,
			func(d, s unsafe.Pointer, k uint64) {
				calls.Add(1)
				copy(unsafe.Slice((*byte)(d), k), unsafe.Slice((*byte)(s), k))
			})
		if string(dst[:n]) != string(src[:n]) || dst[n] != 0 {
			t.Fatalf("n=%d: copy differs", n)
		}
		if want := int32(min(4, max(n/1024, 1))); calls.Load() != want {
			t.Fatalf("n=%d: %d parts, want %d", n, calls.Load(), want)
		}
	}
}

// TestPanic: a panic in one part reaches the caller, with its value, after
// every part has returned, for each form, from workers and from the
// caller's own part; the kept workers serve the next job.
func TestPanic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	forms := map[string]func(parts int, f func(int)){
		"Run": Run,
		"Go":  Go,
		"Ranges": func(parts int, f func(int)) {
			Ranges(parts, 1, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					f(i)
				}
			})
		},
		"Lines": func(parts int, f func(int)) {
			Lines(uint64(parts)*64, 64, parts, func(off, size uint64) {
				for i := off / 64; i < (off+size)/64; i++ {
					f(int(i))
				}
			})
		},
	}
	for name, form := range forms {
		for _, bad := range []int{0, 3} {
			const parts = 4
			var ran [parts]atomic.Bool
			var late atomic.Bool
			func() {
				defer func() {
					if r := recover(); r != "boom" {
						t.Fatalf("%s: recovered %v, want boom", name, r)
					}
					for i := range ran {
						if !ran[i].Load() {
							t.Fatalf("%s: part %d had not run when the panic arrived", name, i)
						}
					}
					late.Store(true)
				}()
				form(parts, func(i int) {
					if i == bad {
						ran[i].Store(true)
						panic("boom")
					}
					time.Sleep(time.Millisecond)
					if late.Load() {
						t.Errorf("%s: part %d ran after the panic reached the caller", name, i)
					}
					ran[i].Store(true)
				})
				t.Fatalf("%s: no panic", name)
			}()
			check(t, 8)
		}
	}
}

// TestPanicConcurrent: callers at once, some of whose jobs panic; each
// gets its own panic and no other's.
func TestPanicConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for k := range 100 {
				want := g*1000 + k
				got := func() (r any) {
					defer func() { r = recover() }()
					form := Run
					if k%2 == 1 {
						form = Go
					}
					form(1+k%5, func(i int) {
						if i == k%(1+k%5) && k%3 == 0 {
							panic(want)
						}
					})
					return nil
				}()
				if k%3 == 0 && got != want || k%3 != 0 && got != nil {
					t.Errorf("caller %d job %d: recovered %v", g, k, got)
				}
			}
		})
	}
	wg.Wait()
	check(t, 8)
}

// TestGoKeepsF: what the parts' function reaches stays reachable until Go
// returns, even when the goroutines are done before the caller waits.
// Without it a container used only through f could be collected at the
// wait, which vmemtest.KeptAlive reports as a use after free.
func TestGoKeepsF(t *testing.T) {
	type box struct{ v [64]byte }
	b := new(box)
	w := weak.Make(b)
	var lost atomic.Bool
	restore := waithook.Set(func() {
		time.Sleep(5 * time.Millisecond) // the goroutines finish first
		runtime.GC()
		if w.Value() == nil {
			lost.Store(true)
		}
	})
	defer restore()
	var sum atomic.Int64
	Go(4, func(i int) { sum.Add(int64(b.v[i]) + 1) })
	if sum.Load() != 4 {
		t.Fatalf("sum %d, want 4", sum.Load())
	}
	if lost.Load() {
		t.Fatal("f's captured value was collected while Go waited")
	}
}
