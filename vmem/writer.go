package vmem

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/lines"
	"github.com/govram/govram/internal/recs"
)

// defaultWriterLines is the batch a sliceWriter collects per segment before
// it writes: 65536 stores. Larger batches sort into denser runs of
// addresses; smaller ones stay in the CPU's caches.
const defaultWriterLines = 1 << 16

// SetBatch stores src[k] at element indices[k]; len(src) must equal
// len(indices), and every index must be below Len: otherwise it returns
// an error matching ErrRange and stores nothing. Where an index repeats,
// the last store wins. It is Set for many elements at once, batched as
// stores to VRAM need: on mapped VRAM the stores are logged in host
// memory, sorted by address and written a whole line at a time, several
// times faster than as many Sets scattered over a large Slice
// (docs/layout.md; BenchmarkSliceSet). SetBatch is a write: it follows
// the Slice's rule for writers.
func (s *Slice[T]) SetBatch(indices []int, src []T) error {
	var err error
	if s.sh != nil {
		err = s.sh.usable()
	} else {
		err = s.usable()
	}
	if err != nil {
		return err
	}
	if len(src) != len(indices) {
		return fmt.Errorf("vmem: Slice.SetBatch: %d indices for %d elements of src: %w", len(indices), len(src), ErrRange)
	}
	n := s.Len()
	for _, i := range indices {
		if uint(i) >= uint(n) {
			return fmt.Errorf("vmem: Slice.SetBatch: index %d out of range [0, %d): %w", i, n, ErrRange)
		}
	}
	if len(indices) == 0 {
		return nil
	}
	w := s.writer(min(len(indices), defaultWriterLines))
	for k, i := range indices {
		w.Set(i, src[k])
	}
	return w.Flush()
}

// sliceWriter batches Sets (SetBatch's engine): stores to mapped VRAM are appended to a log in
// host memory (lines.StoreLog). A full batch is handed to other
// goroutines while Sets go on (the log's memory doubles): ordered by
// address (whole-line records by 4 MiB window) and written by several
// goroutines, each a range of addresses, a whole-line record with one
// non-temporal store (ordered stores cost several times less than the
// same stores scattered over 1 GiB: docs/layout.md). Records
// over a line go through a lines.Batcher. Until Flush, a pending store may or
// may not be visible to readers (on the host backend it is written at
// once); after Flush it is. Do not change the same elements by other means
// while they are pending, and Flush before growing the Slice (Append, Grow,
// Resize): a writer whose segment moved reports an error at Flush. A
// sliceWriter is for one goroutine and follows the Slice's rule for writers.
// On a pool it keeps one such batch per device and Flush writes every
// device's at once.
type sliceWriter[T any] struct {
	pw    *poolSliceWriter[T] // on a pool: Set and Flush forward to it
	s     *Slice[T]
	lines int
	logs  []*lines.StoreLog[T] // per segment, made on first use (records of a line or less)
	bat   []*lines.Batcher     // per segment, for records over a line
	err   error

	// The log of the segment last stored to, for Set's fast path.
	cur    *lines.StoreLog[T]
	curSeg int
}

// writer returns a batch writer with room for lines pending lines per
// segment (0: 65536 stores).
func (s *Slice[T]) writer(lines int) *sliceWriter[T] {
	if s.sh != nil {
		return &sliceWriter[T]{pw: s.sh.writer(lines)}
	}
	if lines <= 0 {
		lines = defaultWriterLines
	}
	return &sliceWriter[T]{s: s, lines: lines}
}

// Set records a store of v at i; it panics if i is out of range.
func (w *sliceWriter[T]) Set(i int, v T) {
	if w.pw != nil {
		w.pw.Set(i, v)
		return
	}
	s := w.s
	if uint(i) >= uint(s.n) {
		s.outOfRange(i)
	}
	seg := i >> s.shift
	sg := &s.segs[seg]
	j := i & (1<<s.shift - 1)
	if l := w.cur; l != nil && seg == w.curSeg && l.Base() == sg.Base {
		if err := l.Put(s.off(j), v); err != nil && w.err == nil {
			w.err = err
		}
		return
	}
	w.set(seg, sg, j, v)
}

func (w *sliceWriter[T]) set(seg int, sg *segment, j int, v T) {
	s := w.s
	switch sg.Kind {
	case access.Direct:
		*(*T)(unsafe.Add(sg.Base, s.off(j))) = v
		return
	case access.DMA:
		s.set(seg<<s.shift|j, v)
		return
	}
	if s.size <= recs.LineSize {
		w.logSet(seg, sg, s.off(j), v)
		return
	}
	for len(w.bat) <= seg {
		w.bat = append(w.bat, nil)
	}
	b := w.bat[seg]
	if b != nil && b.Base() != sg.Base {
		w.stale(b)
		b = nil
	}
	if b == nil {
		nb, err := lines.NewBatcher(sg.Base, uintptr(sg.blk.Size()), w.lines)
		if err != nil {
			if w.err == nil {
				w.err = err
			}
			return
		}
		w.bat[seg], b = nb, nb
	}
	if err := lines.PutValue(b, s.off(j), v); err != nil && w.err == nil {
		w.err = err
	}
}

// logSet appends a store to the segment's log: no lookup per store, the
// sorting happens once per batch at flush.
func (w *sliceWriter[T]) logSet(seg int, sg *segment, off uintptr, v T) {
	for len(w.logs) <= seg {
		w.logs = append(w.logs, nil)
	}
	l := w.logs[seg]
	if l != nil && l.Base() != sg.Base {
		if l.Pending() > 0 && w.err == nil {
			w.err = errWriterStale
		}
		l.Discard()
		l = nil
	}
	if l == nil {
		nl, err := lines.NewStoreLog[T](sg.Base, uintptr(sg.blk.Size()), w.lines)
		if err != nil {
			if w.err == nil {
				w.err = err
			}
			return
		}
		// Full batches are written in the background while Sets go on;
		// the Slice waits for them before a segment moves or is freed.
		nl.SetAsync(&w.s.inflight)
		w.logs[seg], l = nl, nl
	}
	w.cur, w.curSeg = l, seg
	if err := l.Put(off, v); err != nil && w.err == nil {
		w.err = err
	}
}

// stale drops a batcher whose segment moved (the Slice grew) and reports
// the stores it still held.
func (w *sliceWriter[T]) stale(b *lines.Batcher) {
	if b.Pending() > 0 && w.err == nil {
		w.err = errWriterStale
	}
	b.Discard()
}

var errWriterStale = errors.New("vmem: the Slice grew while a sliceWriter held stores; Flush before Append, Grow or Resize")

// Flush writes every pending store. After the Slice's Close it drops them
// and returns ErrClosed; after device loss, ErrDeviceLost.
func (w *sliceWriter[T]) Flush() error {
	if w.pw != nil {
		return w.pw.Flush()
	}
	s := w.s
	if err := s.usable(); err != nil {
		for _, l := range w.logs {
			if l != nil {
				l.Discard()
			}
		}
		for _, b := range w.bat {
			if b != nil {
				b.Discard()
			}
		}
		w.logs, w.bat, w.err, w.cur = nil, nil, nil, nil
		return err
	}
	for seg, l := range w.logs {
		if l == nil {
			continue
		}
		if seg >= len(s.segs) || s.segs[seg].Base != l.Base() {
			if l.Pending() > 0 && w.err == nil {
				w.err = errWriterStale
			}
			l.Discard()
			w.logs[seg] = nil
			w.cur = nil
			continue
		}
		l.Flush()
	}
	for seg, b := range w.bat {
		if b == nil {
			continue
		}
		if seg >= len(s.segs) || s.segs[seg].Base != b.Base() {
			w.stale(b)
			w.bat[seg] = nil
			continue
		}
		b.Flush()
	}
	if err := w.err; err != nil {
		w.err = nil
		return err
	}
	return w.s.err.get()
}
