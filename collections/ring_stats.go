package collections

// RingStats describes a ring's contents and memory.
type RingStats struct {
	Len    int    // elements queued
	Cap    int    // elements the ring holds
	Pushed uint64 // elements pushed since NewRing or the last Clear, dropped ones included
	// DeviceBytes is the ring's memory in device memory (host memory on
	// the host backend), whole lines; HostBytes its staging ring in host
	// memory.
	DeviceBytes uint64
	HostBytes   uint64
}

// Stats returns the ring's length, capacity, pushes and memory. It may
// run beside the producer and the consumer; Len and Pushed are then a
// moment's view. After Close every figure is 0.
func (r *Ring[T]) Stats() RingStats {
	if r.closed {
		return RingStats{}
	}
	st := RingStats{Len: r.Len(), Cap: int(r.capacity), Pushed: r.tail.Load(),
		HostBytes: uint64(len(r.stage)) * 8}
	for _, sg := range r.segs {
		st.DeviceBytes += sg.blk.Size()
	}
	return st
}
