package vmem

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/lineio"
)

// Set stores v at i. It panics if i is out of range.
func (s *Slice[T]) Set(i int, v T) {
	// Small enough to inline, as Get: on host memory a Set is one store in
	// the caller's loop.
	if uint(i) < uint(len(s.fast)) {
		s.fast[i] = v
		return
	}
	s.setChecked(i, v)
}

func (s *Slice[T]) setChecked(i int, v T) {
	if s.sh != nil {
		// As in get: a Slice on a pool has no fast path.
		s.sh.Set(i, v)
		return
	}
	if uint(i) >= uint(s.n) {
		s.outOfRange(i)
	}
	s.set(i, v)
}

func (s *Slice[T]) set(i int, v T) {
	sg := &s.segs[i>>s.shift]
	j := i & (1<<s.shift - 1)
	switch sg.Kind {
	case access.Direct:
		*(*T)(unsafe.Add(sg.Base, s.off(j))) = v
	case access.WC:
		// Stores never read their target, so a plain store is right for
		// write-combining memory; the fence makes it visible to the next
		// streaming load.
		*(*T)(unsafe.Add(sg.Base, s.off(j))) = v
		lineio.Fence()
	default:
		s.err.set(sg.Write(uint64(s.off(j)), bytesOf(&v)))
	}
}

// Append adds vs at the end, growing the Slice as needed. On error the
// Slice is unchanged.
func (s *Slice[T]) Append(vs ...T) error {
	if len(vs) == 1 && len(s.fast) == s.n && s.n < cap(s.fast) && s.dev.Err() == nil {
		// One element into the host memory of the first segment, with
		// room: a store, as Go's append makes (s.fast is nil once closed).
		s.fast = s.fast[:s.n+1]
		s.fast[s.n] = vs[0]
		s.n++
		return nil
	}
	if s.sh != nil {
		return s.synced(s.sh.Append(vs...))
	}
	if len(vs) > math.MaxInt-s.n {
		return fmt.Errorf("vmem: Slice.Append of %d: %w", len(vs), ErrTooLarge)
	}
	if err := s.reserve(s.n + len(vs)); err != nil {
		return err
	}
	at := s.n
	s.setLen(at + len(vs))
	// A few elements are stored one by one, except into private segments,
	// where a single store has no error result to report a failed DMA.
	if len(vs) > 16 || (len(vs) > 0 && (s.segs[at>>s.shift].Kind == access.DMA || s.segs[(at+len(vs)-1)>>s.shift].Kind == access.DMA)) {
		if err := s.CopyFrom(vs, at); err != nil {
			s.setLen(at)
			return err
		}
		return nil
	}
	for k, v := range vs {
		s.set(at+k, v)
	}
	return nil
}

// CopyFrom copies src into the Slice starting at element at (which must
// leave room: at+len(src) <= Len). Mapped segments are written with
// non-temporal full-line stores, private ones by DMA.
func (s *Slice[T]) CopyFrom(src []T, at int) error {
	if s.sh != nil {
		return s.sh.CopyFrom(src, at)
	}
	if err := s.checkSpan("CopyFrom", at, len(src)); err != nil {
		return err
	}
	return s.pieces(at, len(src), func(sg *segment, j, from, k int) error {
		part := src[from : from+k]
		if s.dense(j) {
			return s.dev.writeBlock(sg.blk, uint64(s.off(j)), unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(part))), uintptr(k)*s.size))
		}
		// Ragged groups at either end go element by element so their
		// neighbours are not rewritten; whole groups go packed.
		for len(part) > 0 && j%s.perLine != 0 {
			s.setSeg(sg, j, part[0])
			j, part = j+1, part[1:]
		}
		bp := stagePool.Get().(*[]byte)
		defer stagePool.Put(bp)
		buf := *bp
		per := len(buf) / int(s.group) * s.perLine
		for len(part) >= s.perLine {
			m := min(len(part)/s.perLine*s.perLine, per)
			img := buf[:uintptr(m/s.perLine)*s.group]
			clear(img)
			for e := 0; e < m; e++ {
				o := uintptr(e/s.perLine)*s.group + uintptr(e%s.perLine)*s.stride
				*(*T)(unsafe.Pointer(&img[o])) = part[e]
			}
			if err := s.dev.writeBlock(sg.blk, uint64(s.off(j)), img); err != nil {
				return err
			}
			j, part = j+m, part[m:]
		}
		for _, v := range part {
			s.setSeg(sg, j, v)
			j++
		}
		return s.err.get()
	})
}

func (s *Slice[T]) setSeg(sg *segment, j int, v T) {
	switch sg.Kind {
	case access.Direct, access.WC:
		*(*T)(unsafe.Add(sg.Base, s.off(j))) = v
		lineio.Fence()
	default:
		s.err.set(sg.Write(uint64(s.off(j)), bytesOf(&v)))
	}
}

// Fill sets every element to v.
func (s *Slice[T]) Fill(v T) error {
	if s.sh != nil {
		return s.sh.Fill(v)
	}
	if err := s.usable(); err != nil {
		return err
	}
	return s.fillRange(0, s.n, v)
}

func (s *Slice[T]) fillRange(lo, hi int, v T) error {
	if hi <= lo {
		return nil
	}
	if gpu, err := s.fillKernel(lo, hi, v); gpu {
		return err // large ranges on a GPU (slice_gpu.go)
	}
	chunk := min(hi-lo, 1<<20/int(max(s.size, 1))+s.perLine)
	pat := make([]T, chunk)
	for i := range pat {
		pat[i] = v
	}
	for at := lo; at < hi; at += chunk {
		if err := s.CopyFrom(pat[:min(chunk, hi-at)], at); err != nil {
			return err
		}
	}
	return nil
}
