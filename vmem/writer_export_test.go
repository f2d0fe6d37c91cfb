package vmem

// SliceWriter and Writer give vmem's tests and benchmarks the streaming
// batch writer behind SetBatch, with its batch size and pending stores.
type SliceWriter[T any] = sliceWriter[T]

func (s *Slice[T]) Writer(lines int) *SliceWriter[T] { return s.writer(lines) }
