package vmem

// Slice snapshots: Save writes the elements as the body of a snapfmt
// snapshot (the bytes of a Go array of T, whatever the device layout),
// LoadSlice reads one back into a new Slice.
//
// Both move the data by DMA between the Slice's segments and pinned
// host-tier staging (the ~50 GB/s path), and keep the CPU's work (the
// CRC-32C of each block, the caller's reader or writer) running while the
// next stage moves: Save's DMA goroutine fills one stage while the caller's
// goroutine checksums (on several cores) and writes the other; LoadSlice
// reads the next stage from the stream while the last one is verified and
// written to the device. Blocks are 16 MiB of whole elements: one block's
// DMA is long enough for the link (31-36 GB/s at 16 MiB on an H200), and
// its checksum splits over cores (snapfmt.Checksum).

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"sync"
	"unsafe"

	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/layout"
)

const (
	// sliceSnapBlock is the target block payload.
	sliceSnapBlock = 16 << 20
	// sliceSnapStage is how much one DMA moves: two blocks, 32 MiB (about
	// 40 GB/s on an H200). Two stages of pinned memory are allocated per
	// call, so they stay modest.
	sliceSnapStage = 2 * sliceSnapBlock
)

// sliceSnapBlockBytes is the block size for elements of size bytes: the
// most whole elements that fit in sliceSnapBlock (one, for huge elements).
func sliceSnapBlockBytes(size uintptr) (uint32, error) {
	if size == 0 {
		return sliceSnapBlock, nil
	}
	if size > snapfmt.MaxBlockSize {
		return 0, fmt.Errorf("vmem: snapshot of %d-byte elements (at most %d): %w", size, snapfmt.MaxBlockSize, ErrTooLarge)
	}
	return uint32(max(sliceSnapBlock/size, 1) * size), nil
}

func sliceSnapFingerprint[T any]() uint64 {
	return snapfmt.Fingerprint(snapfmt.KindSlice, reflect.TypeFor[T]())
}

func snapErr(err error) error { return snapfmt.Wrap(err, ErrCorrupt, ErrTypeMismatch) }

// Save writes the Slice's elements to w as a snapshot (see
// docs/snapshots.md): a header naming T's layout, the elements in blocks of
// 16 MiB each with a CRC-32C, and a trailer. LoadSlice reads it back.
//
// The elements are read by DMA into pinned staging while earlier blocks are
// checksummed and written, so Save runs at the speed of the slower of the
// link and w. Save only reads: like CopyTo it may run alongside other
// readers, but not alongside a change to the Slice.
func (s *Slice[T]) Save(w io.Writer) error {
	if s.closed {
		return ErrClosed
	}
	bs, err := sliceSnapBlockBytes(s.size)
	if err != nil {
		return err
	}
	sw, err := snapfmt.NewWriter(w, snapfmt.Header{
		Kind:        snapfmt.KindSlice,
		BlockSize:   bs,
		Fingerprint: sliceSnapFingerprint[T](),
		Count:       uint64(s.n),
		Aux:         [3]uint64{uint64(s.size)},
	})
	if err != nil {
		return fmt.Errorf("vmem: Slice.Save: %w", err)
	}
	if s.n > 0 && s.size > 0 {
		per := int(uintptr(bs) / s.size)
		if s.dev.vk == nil {
			err = s.saveDirect(sw, per)
		} else {
			err = s.saveStaged(sw, per)
		}
		if err != nil {
			return fmt.Errorf("vmem: Slice.Save: %w", err)
		}
	}
	if err := sw.Close(); err != nil {
		return fmt.Errorf("vmem: Slice.Save: %w", err)
	}
	return nil
}

// saveDirect writes host-backend segments straight from their memory: no
// copy at all, only the checksums.
func (s *Slice[T]) saveDirect(sw *snapfmt.Writer, per int) error {
	var parts [][]byte
	for at := 0; at < s.n; at += per {
		k := min(per, s.n-at)
		parts = parts[:0]
		crc, length := uint32(0), 0
		err := s.pieces(at, k, func(sg *segment, j, _, kk int) error {
			p := unsafe.Slice((*byte)(unsafe.Add(sg.base, s.off(j))), uintptr(kk)*s.size)
			c := snapfmt.Checksum(p)
			if length == 0 {
				crc = c
			} else {
				crc = snapfmt.Combine(crc, c, int64(len(p)))
			}
			length += len(p)
			parts = append(parts, p)
			return nil
		})
		if err != nil {
			return err
		}
		if err := sw.WriteBlock(crc, parts...); err != nil {
			return err
		}
	}
	return nil
}

// sliceStage is a staging buffer of the DMA pipeline.
type sliceStage[T any] struct {
	buf   []T
	blk   Block // zero when buf is on the Go heap
	at, k int
	err   error
}

// newStages returns count staging buffers of n elements in pinned host
// memory, or on the Go heap when pinned memory is short (slower: the DMA
// then goes through the device's own staging).
func (s *Slice[T]) newStages(count, n int) []*sliceStage[T] {
	st := make([]*sliceStage[T], count)
	for i := range st {
		st[i] = &sliceStage[T]{}
		if b, err := s.dev.Alloc(Host, uint64(n)*uint64(s.size), 0); err == nil {
			st[i].blk, st[i].buf = b, unsafe.Slice((*T)(b.Ptr()), n)
		} else {
			st[i].buf = make([]T, n)
		}
	}
	return st
}

func (s *Slice[T]) freeStages(st []*sliceStage[T]) {
	for _, x := range st {
		if !x.blk.IsZero() {
			s.dev.Free(x.blk)
		}
	}
}

func (s *Slice[T]) stageBytes(x *sliceStage[T], k int) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x.buf))), uintptr(k)*s.size)
}

// saveStaged reads stages by DMA on one goroutine while this one
// checksums and writes the stage before.
func (s *Slice[T]) saveStaged(sw *snapfmt.Writer, per int) error {
	stageN := min(s.n, max(sliceSnapStage/int(s.size)/per, 1)*per)
	st := s.newStages(2, stageN)
	defer s.freeStages(st)
	free := make(chan *sliceStage[T], len(st))
	full := make(chan *sliceStage[T], len(st))
	quit := make(chan struct{})
	for _, x := range st {
		free <- x
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(full)
		for at := 0; at < s.n; at += stageN {
			var x *sliceStage[T]
			select {
			case x = <-free:
			case <-quit:
				return
			}
			x.at, x.k = at, min(stageN, s.n-at)
			x.err = s.CopyTo(x.buf[:x.k], at)
			full <- x
			if x.err != nil {
				return
			}
		}
	}()
	defer wg.Wait()
	defer close(quit)
	bs := per * int(s.size)
	var crcs []uint32
	for x := range full {
		if x.err != nil {
			return x.err
		}
		data := s.stageBytes(x, x.k)
		nb := (len(data) + bs - 1) / bs
		crcs = append(crcs[:0], make([]uint32, nb)...)
		// The blocks of a stage are checksummed at once, each on several
		// goroutines when large.
		var cw sync.WaitGroup
		for i := range nb {
			cw.Add(1)
			go func() {
				defer cw.Done()
				crcs[i] = snapfmt.Checksum(data[i*bs : min((i+1)*bs, len(data))])
			}()
		}
		cw.Wait()
		for i := range nb {
			if err := sw.WriteBlock(crcs[i], data[i*bs:min((i+1)*bs, len(data))]); err != nil {
				return err
			}
		}
		free <- x
	}
	return nil
}

// sliceSnapMaxBytes is the most memory a snapshot may ask a device for: the
// larger of the VRAM tiers' heaps (or limits), which share the device.
func (d *Device) sliceSnapMaxBytes() uint64 {
	var most uint64
	for _, t := range []Tier{Mapped, Private} {
		ts := &d.tiers[t]
		if !ts.available {
			continue
		}
		c := ts.capacity
		if ts.limit > 0 && ts.limit < c {
			c = ts.limit
		}
		most = max(most, c)
	}
	return most
}

// LoadSlice reads a snapshot written by Slice.Save into a new Slice on dev
// (opts as for NewSlice). It checks everything before believing it: the
// header's checksum, that the snapshot holds a Slice of T's layout
// (ErrTypeMismatch otherwise), that the element count fits the device,
// every block's CRC-32C and the trailer; a damaged or truncated stream
// gives an error matching ErrCorrupt. Device memory is taken one segment at
// a time as blocks arrive, so a forged count costs at most one segment
// beyond the data the stream holds. On any error the new Slice is freed.
//
// Blocks are read into pinned staging and go to the device by DMA while
// the next ones are read. When r is a Nexter (bytes.Buffer is one), blocks
// are taken from r's memory without a copy; a bytes.Buffer over the memory
// of a vmem.Host block is the fastest source there is.
func LoadSlice[T any](dev *Device, r io.Reader, opts ...SliceOption) (*Slice[T], error) {
	if err := layout.Check[T](); err != nil {
		return nil, fmt.Errorf("vmem: LoadSlice: %w", err)
	}
	s, err := loadSlice[T](dev, r, opts)
	if err != nil {
		return nil, fmt.Errorf("vmem: LoadSlice: %w", snapErr(err))
	}
	return s, nil
}

func loadSlice[T any](dev *Device, r io.Reader, opts []SliceOption) (*Slice[T], error) {
	sr, err := snapfmt.NewReader(r, snapfmt.KindSlice, sliceSnapFingerprint[T]())
	if err != nil {
		return nil, err
	}
	h := sr.Header()
	size := unsafe.Sizeof(*new(T))
	bs, err := sliceSnapBlockBytes(size)
	if err != nil {
		return nil, err
	}
	switch {
	case h.Aux[0] != uint64(size) || h.Aux[1] != 0 || h.Aux[2] != 0:
		return nil, fmt.Errorf("%w: header says %d-byte elements, T has %d", snapfmt.ErrCorrupt, h.Aux[0], size)
	case h.BlockSize != bs:
		return nil, fmt.Errorf("%w: block size %d, want %d for %d-byte elements", snapfmt.ErrCorrupt, h.BlockSize, bs, size)
	case h.Count > math.MaxInt/uint64(max(size, 1)) || h.Count*uint64(max(size, 1)) > dev.sliceSnapMaxBytes():
		return nil, fmt.Errorf("%w: %d elements of %d bytes, more than the device holds (%s)", snapfmt.ErrCorrupt, h.Count, size, Bytes(dev.sliceSnapMaxBytes()))
	}
	count := int(h.Count)
	s, err := NewSlice[T](dev, 0, opts...)
	if err != nil {
		return nil, err
	}
	if err := s.loadBody(sr, count, int(uintptr(bs)/max(size, 1))); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// growTo makes the Slice cover [0, n): capacity a segment at a time, as
// the data to fill it arrives.
func (s *Slice[T]) growTo(n int) error {
	if n <= s.n {
		return nil
	}
	if err := s.reserve(n); err != nil {
		return err
	}
	s.setLen(n)
	return nil
}

// loadBody reads count elements, per to a block, then the end of the
// snapshot.
func (s *Slice[T]) loadBody(sr *snapfmt.Reader, count, per int) error {
	if s.size == 0 {
		if err := s.growTo(count); err != nil {
			return err
		}
		return s.loadEnd(sr)
	}
	// The first segment is allocated at its final size so that it never
	// moves while a stage is written into it.
	if err := s.reserve(min(count, s.segCap())); err != nil {
		return err
	}
	var err error
	if sr.ZeroCopy() {
		err = s.loadBorrowed(sr, count, per)
	} else {
		err = s.loadStaged(sr, count, per)
	}
	if err != nil {
		return err
	}
	return s.loadEnd(sr)
}

func (s *Slice[T]) loadEnd(sr *snapfmt.Reader) error {
	b, err := sr.NextBlock(nil)
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: block %d after the last element", snapfmt.ErrCorrupt, b.Index)
}

// nextBlock reads the block holding elements [at, at+k) and checks its
// length.
func (s *Slice[T]) nextBlock(sr *snapfmt.Reader, dst []byte, at, k int) (snapfmt.Block, error) {
	b, err := sr.NextBlock(dst)
	if err == io.EOF {
		return b, fmt.Errorf("%w: the snapshot ends at element %d", snapfmt.ErrCorrupt, at)
	}
	if err != nil {
		return b, err
	}
	if want := uintptr(k) * s.size; uintptr(len(b.Data)) != want {
		return b, fmt.Errorf("%w: block %d holds %d bytes, want %d", snapfmt.ErrCorrupt, b.Index, len(b.Data), want)
	}
	return b, nil
}

// loadBorrowed takes each block from the stream's memory: its checksum
// runs on other goroutines while it is written to the device, and both
// end before the next block is asked for (Nexter's contract).
func (s *Slice[T]) loadBorrowed(sr *snapfmt.Reader, count, per int) error {
	var tmp []T
	for at := 0; at < count; at += per {
		k := min(per, count-at)
		b, err := s.nextBlock(sr, nil, at, k)
		if err != nil {
			return err
		}
		if err := s.growTo(at + k); err != nil {
			return err
		}
		verr := make(chan error, 1)
		go func() { verr <- b.Verify() }()
		if s.dense(0) {
			err = s.writeBytes(at, k, b.Data)
		} else {
			// Records are re-spaced from an aligned copy: the stream's
			// bytes may sit at any address.
			if len(tmp) < k {
				tmp = make([]T, k)
			}
			copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(tmp))), len(b.Data)), b.Data)
			err = s.CopyFrom(tmp[:k], at)
		}
		if e := <-verr; e != nil {
			return e
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeBytes writes the bytes of k densely packed elements at element at.
func (s *Slice[T]) writeBytes(at, k int, data []byte) error {
	if err := s.checkSpan("CopyFrom", at, k); err != nil {
		return err
	}
	return s.pieces(at, k, func(sg *segment, j, from, kk int) error {
		lo := uintptr(from) * s.size
		return s.dev.Write(sg.blk, uint64(s.off(j)), data[lo:lo+uintptr(kk)*s.size])
	})
}

// loadStaged reads a stage of blocks from the stream into pinned memory
// while a goroutine verifies and writes the stage before.
func (s *Slice[T]) loadStaged(sr *snapfmt.Reader, count, per int) error {
	stageN := min(count, max(sliceSnapStage/int(s.size)/per, 1)*per)
	st := s.newStages(2, stageN)
	defer s.freeStages(st)
	done := make(chan error, 1)
	busy := false
	wait := func() error {
		if !busy {
			return nil
		}
		busy = false
		return <-done
	}
	defer wait()
	blocks := make([][]snapfmt.Block, len(st))
	cur := 0
	for at := 0; at < count; at += stageN {
		x, bl := st[cur], blocks[cur][:0]
		x.at, x.k = at, min(stageN, count-at)
		data := s.stageBytes(x, x.k)
		for off := 0; off < x.k; off += per {
			k := min(per, x.k-off)
			lo := uintptr(off) * s.size
			b, err := s.nextBlock(sr, data[lo:lo+uintptr(k)*s.size], at+off, k)
			if err != nil {
				return err
			}
			bl = append(bl, b)
		}
		blocks[cur] = bl
		// The previous stage must be written before the Slice grows: a
		// new segment changes what a writer in flight reads.
		if err := wait(); err != nil {
			return err
		}
		if err := s.growTo(at + x.k); err != nil {
			return err
		}
		busy = true
		go func() { done <- s.writeStage(x, bl) }()
		cur = 1 - cur
	}
	return wait()
}

// writeStage verifies a stage's blocks on their own goroutines while its
// elements go to the device.
func (s *Slice[T]) writeStage(x *sliceStage[T], bl []snapfmt.Block) error {
	errs := make([]error, len(bl))
	var wg sync.WaitGroup
	for i := range bl {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = bl[i].Verify()
		}()
	}
	werr := s.CopyFrom(x.buf[:x.k], x.at)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return werr
}
