package held

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// fakeDev hands out numbered blocks and records which are live.
type fakeDev struct {
	mu   sync.Mutex
	next int
	live map[int]bool
}

func (d *fakeDev) Alloc(tier string, size, align uint64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next++
	d.live[d.next] = true
	return d.next, nil
}

func (d *fakeDev) Free(b int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.live[b] {
		panic("double free")
	}
	delete(d.live, b)
	return nil
}

func (d *fakeDev) nLive() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.live)
}

func TestSet(t *testing.T) {
	d := &fakeDev{live: map[int]bool{}}
	s := New[int, string](d)
	a, _ := s.Alloc("t", 64)
	b, _ := s.Alloc("t", 64)
	c, _ := d.Alloc("t", 64, 64) // allocated elsewhere, then handed over
	s.Add(c)
	if s.Len() != 3 {
		t.Fatalf("Len %d, want 3", s.Len())
	}
	if err := s.Free(a); err != nil || d.live[a] || s.Len() != 2 {
		t.Fatalf("Free: %v, live %v, Len %d", err, d.live[a], s.Len())
	}
	s.Forget(b) // handed on: the Set must not free it
	p, err := s.MapHost(4096)
	if err != nil {
		t.Fatal(err)
	}
	*(*byte)(p) = 1
	q, err := s.MapHost(8192)
	if err != nil {
		t.Fatal(err)
	}
	s.UnmapHost(q)
	s.UnmapHost(q) // unknown now: ignored
	s.FreeAll()
	if !d.live[b] || d.live[c] || d.nLive() != 1 {
		t.Fatalf("after FreeAll: live %v", d.live)
	}
	if len(s.host) != 0 || s.Len() != 0 {
		t.Fatalf("after FreeAll: %d host mappings, %d blocks", len(s.host), s.Len())
	}
	s.FreeAll() // idempotent
	s.Exactly(b)
	s.FreeAll()
	if d.nLive() != 0 {
		t.Fatalf("Exactly(b) then FreeAll left %v", d.live)
	}
}

func TestAttachFreesUnreachable(t *testing.T) {
	d := &fakeDev{live: map[int]bool{}}
	func() {
		type container struct{ s *Set[int, string] }
		c := &container{s: New[int, string](d)}
		c.s.Alloc("t", 64)
		c.s.MapHost(4096)
		Attach(c, c.s)
	}()
	for i := 0; i < 100 && d.nLive() != 0; i++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if d.nLive() != 0 {
		t.Fatal("the backstop did not free the blocks of an unreachable container")
	}
}
