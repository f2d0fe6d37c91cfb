package strarena

import (
	"unsafe"
)

// hostMapper maps and unmaps host memory for the stacks: the arena's
// owner (internal/held), so that its backstop frees them with the blocks.
type hostMapper interface {
	MapHost(n uint64) (unsafe.Pointer, error)
	UnmapHost(p unsafe.Pointer)
}

// stack is a growable array of offsets in anonymous memory outside the Go
// heap: a free list whose size follows the number of freed strings must not
// make the Go heap (and the collector's work) grow with it.
type stack struct {
	p      unsafe.Pointer
	n, cap int
}

// push appends v; it reports false when the memory for a larger stack
// cannot be had (the caller then drops the block).
func (s *stack) push(mem hostMapper, v uint64) bool {
	if s.n == s.cap {
		nc := max(512, 2*s.cap)
		np, err := mem.MapHost(uint64(nc) * 8)
		if err != nil {
			return false
		}
		n := s.n
		if n > 0 {
			copy(unsafe.Slice((*uint64)(np), n), s.items())
		}
		s.release(mem) // zeroes n
		s.p, s.n, s.cap = np, n, nc
	}
	*(*uint64)(unsafe.Add(s.p, s.n*8)) = v
	s.n++
	return true
}

func (s *stack) pop() (uint64, bool) {
	if s.n == 0 {
		return 0, false
	}
	s.n--
	return *(*uint64)(unsafe.Add(s.p, s.n*8)), true
}

// items views the stack's contents; valid until the next push.
func (s *stack) items() []uint64 {
	if s.n == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(s.p), s.n)
}

// release unmaps the stack's memory (mem nil: its owner already did).
func (s *stack) release(mem hostMapper) {
	if s.p != nil && mem != nil {
		mem.UnmapHost(s.p)
	}
	s.p, s.n, s.cap = nil, 0, 0
}
