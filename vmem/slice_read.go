package vmem

import (
	"errors"
	"runtime"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/internal/recs"
)

// Get returns element i. It panics if i is out of range, like a slice, and
// once the device is lost (with an error matching ErrDeviceLost, see
// CopyTo for the form that returns it), except on the host backend's first
// segment, which is plain memory that stays readable.
func (s *Slice[T]) Get(i int) T {
	// Small enough to inline: on host memory a Get is then one load in the
	// caller's loop, and loads of successive Gets overlap. A loss check
	// here would exceed the inlining budget (a random Get on the host
	// then cost over twice as much: BenchmarkSliceGet8's heap rows
	// against govram); the host backend has no device to lose.
	if uint(i) < uint(len(s.fast)) {
		return s.fast[i]
	}
	return s.get(i)
}

func (s *Slice[T]) get(i int) T {
	if s.sh != nil {
		// Here rather than in Get, which must stay small enough to inline:
		// a Slice on a pool has no fast path, so every Get comes here.
		return s.sh.Get(i)
	}
	s.readCheck("Get")
	v, err := s.load(i)
	if err != nil {
		s.err.set(err)
		if errors.Is(err, ErrDeviceLost) {
			s.readLost("Get")
		}
	}
	return v
}

// at is Get without the loss check, for getMany's workers (a panic there
// would not reach the caller): a failed read is kept for Err.
func (s *Slice[T]) at(i int) T {
	if uint(i) < uint(len(s.fast)) {
		return s.fast[i]
	}
	v, err := s.load(i)
	s.err.set(err)
	return v
}

// load reads element i; only private segments can fail.
func (s *Slice[T]) load(i int) (T, error) {
	if uint(i) < s.wcN {
		return loadWCSmall[T](unsafe.Add(s.base0, uintptr(i)*unsafe.Sizeof(*(*T)(nil)))), nil
	}
	if uint(i) >= uint(s.n) {
		s.outOfRange(i)
	}
	sg := &s.segs[i>>s.shift]
	j := i & (1<<s.shift - 1)
	switch sg.Kind {
	case access.Direct:
		return *(*T)(unsafe.Add(sg.Base, s.off(j))), nil
	case access.WC:
		if s.size <= recs.LineSize {
			return loadWCSmall[T](unsafe.Add(sg.Base, s.off(j))), nil
		}
		return loadWC[T](unsafe.Add(sg.Base, s.off(j)), s.size), nil
	}
	var v T
	err := sg.Read(bytesOf(&v), uint64(s.off(j)))
	return v, err
}

// loadWCSmall reads a T of at most 64 bytes at p, which lies inside one
// line (layout.Record guarantees it). Words come back in registers where
// the record fits in one aligned 16-byte chunk: staging a whole line
// through a stack buffer would make the CPU wait on that buffer and stop
// successive reads from overlapping.
func loadWCSmall[T any](p unsafe.Pointer) T {
	size := unsafe.Sizeof(*(*T)(nil))
	a := uintptr(p)
	switch {
	case size <= 8 && a&7+size <= 8:
		w := lineio.LoadWord(unsafe.Add(p, -int(a&7))) >> ((a & 7) * 8)
		return *(*T)(unsafe.Pointer(&w))
	case size <= 16 && a&15+size <= 16:
		var pair [2]uint64
		pair[0], pair[1] = lineio.LoadPair(unsafe.Add(p, -int(a&15)))
		return *(*T)(unsafe.Add(unsafe.Pointer(&pair), a&15))
	}
	var line [8]uint64 // word-aligned, so the record read from it is aligned
	lineio.LoadContaining((*[64]byte)(unsafe.Pointer(&line)), p)
	return *(*T)(unsafe.Add(unsafe.Pointer(&line), a&63))
}

// loadWC reads a T at p in write-combining memory with streaming loads only.
func loadWC[T any](p unsafe.Pointer, size uintptr) T {
	if size <= recs.LineSize {
		// The record lies within one line (layout.Record guarantees it):
		// one streaming load of that line, then pick the record out. The
		// buffer is word-aligned, and so is the record's offset in it.
		var line [8]uint64
		lineio.Load((*[64]byte)(unsafe.Pointer(&line)), unsafe.Pointer(uintptr(p)&^63))
		return *(*T)(unsafe.Add(unsafe.Pointer(&line), uintptr(p)&63))
	}
	var v T
	lineio.Copy(unsafe.Pointer(&v), p, size)
	return v
}

// CopyTo copies len(dst) elements starting at element at into dst. Large
// copies run by DMA (docs/physics.md has its speed).
func (s *Slice[T]) CopyTo(dst []T, at int) error {
	if s.sh != nil {
		return s.sh.CopyTo(dst, at)
	}
	if err := s.checkSpan("CopyTo", at, len(dst)); err != nil {
		return err
	}
	return s.pieces(at, len(dst), func(sg *segment, j, from, k int) error {
		part := dst[from : from+k]
		if s.dense(j) {
			return s.dev.readBlock(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(part))), uintptr(k)*s.size), sg.blk, uint64(s.off(j)))
		}
		bp := stagePool.Get().(*[]byte)
		defer stagePool.Put(bp)
		buf := *bp
		// Whole lines covering the range, read in pieces and unpacked.
		per := len(buf) / int(s.group) * s.perLine
		for len(part) > 0 {
			g0 := j / s.perLine
			m := min(len(part), per-(j%s.perLine))
			g1 := (j + m + s.perLine - 1) / s.perLine
			img := buf[:uintptr(g1-g0)*s.group]
			if err := s.dev.readBlock(img, sg.blk, uint64(uintptr(g0)*s.group)); err != nil {
				return err
			}
			base := uintptr(g0) * s.group
			for e := 0; e < m; e++ {
				part[e] = *(*T)(unsafe.Pointer(&img[s.off(j+e)-base]))
			}
			j, part = j+m, part[m:]
		}
		return nil
	})
}

// getManyBatch is how many lines getMany loads per call into lineio.
const getManyBatch = 64

// getMany reads the elements at idx into dst (len(dst) >= len(idx)): the
// CPU path of GetBatch. On
// mapped VRAM the lines of many elements are loaded with their streaming
// loads interleaved, so their latencies overlap: the way to read many
// scattered elements. A large batch is spread over goroutines (one core's
// streaming loads keep only a few lines in flight; the link serves about
// three times more from several cores). A Slice with segments in private
// VRAM is read by a kernel that gathers the batch in one round trip; a
// device error is then kept for Err. It panics on an index out of range,
// when dst is shorter than idx and once the device is lost; GetBatch
// checks all of these first and returns them as errors.
func (s *Slice[T]) getMany(idx []int, dst []T) {
	if s.sh != nil {
		s.sh.getMany(idx, dst)
		return
	}
	if len(dst) < len(idx) {
		panic("vmem: Slice.GetBatch: dst shorter than idx")
	}
	s.readCheck("GetBatch")
	s.getManyAny(idx, dst)
	// A loss met on the way (by a worker, or the kernel) ends the call as
	// one met before it.
	s.readCheck("GetBatch")
}

// getManyAny is getMany without the loss checks, which a pool Slice makes
// for all its parts at once; errors are kept for Err.
func (s *Slice[T]) getManyAny(idx []int, dst []T) {
	if !s.kernAllMapped() && len(idx) >= getManyKernelMin && s.getManyKernel(idx, dst) {
		return
	}
	w := min(runtime.GOMAXPROCS(0), getManyWorkers, len(idx)/getManyPerWorker)
	if w <= 1 || s.dev.vk == nil || !s.kernAllMapped() {
		s.getManyLines(idx, dst)
		return
	}
	// Indices are checked here, where a panic reaches the caller.
	for _, i := range idx {
		if uint(i) >= uint(s.n) {
			s.outOfRange(i)
		}
	}
	per := (len(idx) + w - 1) / w
	par.Go((len(idx)+per-1)/per, func(p int) {
		lo, hi := p*per, min((p+1)*per, len(idx))
		s.getManyLines(idx[lo:hi], dst[lo:hi])
	})
	runtime.KeepAlive(s)
}

// getManyKernelMin is the batch from which getMany reads a Slice with
// private segments by the gather kernel, one round trip for the batch,
// instead of one DMA round trip per element of those segments.
const getManyKernelMin = 16

// getManyKernel is GetMany by the gather kernel. It reports false where
// kernels cannot run (the caller then reads element by element); an error
// of the device is kept for Err, as Get keeps it.
func (s *Slice[T]) getManyKernel(idx []int, dst []T) bool {
	k := s.dev.kern()
	if k == nil || s.size == 0 {
		return false
	}
	for _, i := range idx {
		if uint(i) >= uint(s.n) {
			s.outOfRange(i)
		}
	}
	err := s.kernGatherGPU(k, idx, dst[:len(idx)])
	if errors.Is(err, errKernUnavailable) {
		return false
	}
	s.err.set(err)
	return true
}

// getMany spreads a batch over up to getManyWorkers goroutines, each with
// at least getManyPerWorker elements.
const (
	getManyWorkers   = 16
	getManyPerWorker = 512
)

func (s *Slice[T]) getManyLines(idx []int, dst []T) {
	if s.size > recs.LineSize || s.dev.vk == nil {
		for k, i := range idx {
			dst[k] = s.at(i)
		}
		return
	}
	var srcs [getManyBatch]unsafe.Pointer
	var lines [getManyBatch * 8]uint64
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&lines[0])), len(lines)*8)
	for len(idx) > 0 {
		m := 0
		var pos [getManyBatch]uintptr
		for ; m < len(idx) && m < getManyBatch; m++ {
			i := idx[m]
			if uint(i) >= uint(s.n) {
				s.outOfRange(i)
			}
			sg := &s.segs[i>>s.shift]
			if sg.Kind != access.WC {
				break
			}
			p := unsafe.Add(sg.Base, s.off(i&(1<<s.shift-1)))
			srcs[m] = unsafe.Pointer(uintptr(p) &^ 63)
			pos[m] = uintptr(p) & 63
		}
		if m == 0 {
			// A private segment: one element the slow way.
			dst[0] = s.at(idx[0])
			idx, dst = idx[1:], dst[1:]
			continue
		}
		lineio.Gather(buf[:m*64], srcs[:m])
		for k := 0; k < m; k++ {
			dst[k] = *(*T)(unsafe.Pointer(&buf[k*64+int(pos[k])]))
		}
		idx, dst = idx[m:], dst[m:]
	}
}
