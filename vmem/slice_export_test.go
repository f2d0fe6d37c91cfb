package vmem

// Grow and Fill give vmem's tests the Slice's internal growth and fill
// (NewSlice's WithCapacity and Resize are the API's ways to reserve room;
// CopyFrom and SetBatch to store).
func (s *Slice[T]) Grow(n int) error { return s.grow(n) }

func (s *Slice[T]) Fill(v T) error { return s.fill(v) }
