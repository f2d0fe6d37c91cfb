package par

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
