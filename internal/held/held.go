// Package held is the one owner of a container's memory: the device blocks
// it allocated and the host mappings it made (hot tiers, gauges). A
// container frees everything through its Set at Close; if it is garbage
// collected without Close, the backstop that Attach registers does the
// same. Blocks whose ownership moves (a table replaced by growth, a block
// handed to another container) are forgotten first.
package held

import (
	"runtime"
	"sync"
	"unsafe"

	"github.com/govram/govram/internal/hostmem"
)

// Device allocates and frees blocks of tier T: a device's plumbing
// (kern.Device).
type Device[B, T any] interface {
	Alloc(t T, size, align uint64) (B, error)
	Free(b B) error
}

// Set is the memory a container holds. Its methods may run concurrently
// with each other (the backstop runs on a goroutine of its own); what the
// container does with the memory is its own affair.
type Set[B comparable, T any] struct {
	mu   sync.Mutex
	dev  Device[B, T]
	blks map[B]struct{}
	host map[unsafe.Pointer]uint64 // base -> bytes (hostmem.Map)
}

// New returns an empty Set whose blocks dev allocates and frees.
func New[B comparable, T any](dev Device[B, T]) *Set[B, T] {
	return &Set[B, T]{dev: dev, blks: map[B]struct{}{}, host: map[unsafe.Pointer]uint64{}}
}

// Attach registers s's backstop: when c becomes unreachable, s is freed.
// s must not keep c reachable.
func Attach[C any, B comparable, T any](c *C, s *Set[B, T]) {
	runtime.AddCleanup(c, (*Set[B, T]).FreeAll, s)
}

// Alloc allocates a block (size bytes, 64-byte aligned) and tracks it.
func (s *Set[B, T]) Alloc(t T, size uint64) (B, error) {
	b, err := s.dev.Alloc(t, size, 64)
	if err != nil {
		return b, err
	}
	s.Add(b)
	return b, nil
}

// Add tracks blocks the container allocated.
func (s *Set[B, T]) Add(bs ...B) {
	s.mu.Lock()
	for _, b := range bs {
		s.blks[b] = struct{}{}
	}
	s.mu.Unlock()
}

// Forget stops tracking blocks: the caller frees them or hands them on.
func (s *Set[B, T]) Forget(bs ...B) {
	s.mu.Lock()
	for _, b := range bs {
		delete(s.blks, b)
	}
	s.mu.Unlock()
}

// Exactly makes the Set track bs and no other block (a container that
// recomputes its blocks after a change of shape).
func (s *Set[B, T]) Exactly(bs ...B) {
	s.mu.Lock()
	clear(s.blks)
	for _, b := range bs {
		s.blks[b] = struct{}{}
	}
	s.mu.Unlock()
}

// Free forgets b and frees it.
func (s *Set[B, T]) Free(b B) error {
	s.Forget(b)
	return s.dev.Free(b)
}

// Len returns the number of blocks tracked.
func (s *Set[B, T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.blks)
}

// MapHost maps n bytes of zeroed host memory (hostmem.Map) that the Set
// unmaps at FreeAll unless UnmapHost does first.
func (s *Set[B, T]) MapHost(n uint64) (unsafe.Pointer, error) {
	p, err := hostmem.Map(n)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.host[p] = n
	s.mu.Unlock()
	return p, nil
}

// UnmapHost unmaps host memory from MapHost; other pointers are ignored.
func (s *Set[B, T]) UnmapHost(p unsafe.Pointer) {
	s.mu.Lock()
	n, ok := s.host[p]
	delete(s.host, p)
	s.mu.Unlock()
	if ok {
		hostmem.Unmap(p, n)
	}
}

// FreeAll frees every block tracked and unmaps every host mapping. The Set
// stays usable (empty); calls after the first free nothing more.
func (s *Set[B, T]) FreeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for b := range s.blks {
		s.dev.Free(b)
	}
	clear(s.blks)
	for p, n := range s.host {
		hostmem.Unmap(p, n)
	}
	clear(s.host)
}
