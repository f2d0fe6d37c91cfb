package vmem

// SliceStats describes a Slice's memory.
type SliceStats struct {
	Len      int // elements
	Cap      int // elements held without allocating
	Segments int // blocks the elements live in
	// TierBytes is the memory of the segments in each tier (Mapped,
	// Private, Host): device bytes on a GPU, host memory on the host
	// backend.
	TierBytes [3]uint64
	// Shards holds each device's figures, in the pool's order, for a Slice
	// on a pool (the fields above add them up); nil on one device.
	Shards []SliceStats
}

// Stats returns the Slice's length, capacity and memory by tier. It is a
// read: it may run beside other readers. After Close every figure is 0.
func (s *Slice[T]) Stats() SliceStats {
	if s.sh != nil {
		var st SliceStats
		if s.sh.closed {
			return st
		}
		for _, p := range s.sh.parts {
			ps := p.Stats()
			st.Cap += ps.Cap
			st.Segments += ps.Segments
			for t := range st.TierBytes {
				st.TierBytes[t] += ps.TierBytes[t]
			}
			st.Shards = append(st.Shards, ps)
		}
		st.Len = s.sh.n
		return st
	}
	st := SliceStats{Len: s.n}
	if s.closed {
		return SliceStats{}
	}
	for _, sg := range s.segs {
		st.Cap += sg.cap
		st.Segments++
		st.TierBytes[sg.blk.Tier()] += sg.blk.Size()
	}
	return st
}
