package vmem

// Grow gives vmem's tests the Slice's internal growth (NewSlice's
// WithCapacity and Resize are the API's ways to reserve room).
func (s *Slice[T]) Grow(n int) error { return s.grow(n) }
