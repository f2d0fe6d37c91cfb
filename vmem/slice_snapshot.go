package vmem

// Slice snapshots: Save writes the elements as the body of a snapfmt
// snapshot (the bytes of a Go array of T, whatever the device layout),
// LoadSlice reads one back into a new Slice.
//
// Both move the data by DMA between the Slice's segments and pinned
// host-tier staging (the fastest path: docs/physics.md), and keep the CPU's
// work (the CRC-32C of each block, the caller's reader or writer) running
// while the next stage moves: Save's DMA goroutine fills one stage while
// the caller's goroutine checksums (on several cores) and writes the other;
// LoadSlice reads the next stage from the stream while the last one is
// verified and written to the device. Blocks are 16 MiB of whole elements:
// one block's DMA is long enough to run near the link's speed
// (docs/physics.md), and its checksum splits over cores (snapfmt.Checksum).
//
// LoadSlice splits each block over up to 16 goroutines that checksum a
// part and write it to its place (several cores' stores into mapped VRAM
// reach the link's limit, one core's do not: docs/physics.md), and
// allocates the next segment on another goroutine meanwhile: allocating a
// 1 GiB segment, plus a fault per page, takes as long as writing much of
// it.

import (
	"fmt"
	"github.com/govram/govram/internal/human"
	"io"
	"math"
	"reflect"
	"runtime"
	"sync"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/hostmem"
	"github.com/govram/govram/internal/par"

	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/layout"
)

const (
	// sliceSnapBlock is the target block payload.
	sliceSnapBlock = 16 << 20
	// sliceSnapStage is how much one DMA moves: two blocks, 32 MiB (near
	// the link's speed: docs/physics.md). Two stages of pinned memory are
	// allocated per call, so they stay modest.
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
	if s.sh != nil {
		return s.sh.Save(w)
	}
	if s.closed {
		return ErrClosed
	}
	defer runtime.KeepAlive(s) // w runs while s's memory is read
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
			p := unsafe.Slice((*byte)(unsafe.Add(sg.Base, s.off(j))), uintptr(kk)*s.size)
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
	blk   block.Block // zero when buf is on the Go heap
	at, k int
}

// newStages returns count staging buffers of n elements in pinned host
// memory, or on the Go heap when pinned memory is short (slower: the DMA
// then goes through the device's own staging).
func (s *Slice[T]) newStages(count, n int) []*sliceStage[T] {
	st := make([]*sliceStage[T], count)
	for i := range st {
		st[i] = &sliceStage[T]{}
		if b, err := s.dev.alloc(Host, uint64(n)*uint64(s.size), 0, false); err == nil {
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
			s.dev.freeBlock(x.blk)
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
	bufs := make([][]T, len(st))
	for i, x := range st {
		bufs[i] = x.buf
	}
	return snapSaveStages(sw, s.n, stageN, bufs, s.CopyTo, per*int(s.size))
}

// snapStage is a host buffer of snapSaveStages's pipeline.
type snapStage[T any] struct {
	buf   []T
	at, k int
	err   error
}

// snapSaveStages writes elements [0, n) as blocks of bs bytes, copied out
// by copyTo in stages of stageN elements into bufs on one goroutine while
// this one checksums and writes the stage before (two buffers overlap the
// copy and the write; one runs them in turn).
func snapSaveStages[T any](sw *snapfmt.Writer, n, stageN int, bufs [][]T, copyTo func(dst []T, at int) error, bs int) error {
	free := make(chan *snapStage[T], len(bufs))
	full := make(chan *snapStage[T], len(bufs))
	quit := make(chan struct{})
	for _, b := range bufs {
		free <- &snapStage[T]{buf: b}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(full)
		for at := 0; at < n; at += stageN {
			var x *snapStage[T]
			select {
			case x = <-free:
			case <-quit:
				return
			}
			x.at, x.k = at, min(stageN, n-at)
			x.err = copyTo(x.buf[:x.k], at)
			full <- x
			if x.err != nil {
				return
			}
		}
	}()
	defer wg.Wait()
	defer close(quit)
	for x := range full {
		if x.err != nil {
			return x.err
		}
		if err := snapWriteStage(sw, elemBytes(x.buf[:x.k]), bs); err != nil {
			return err
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

// LoadSlice reads a snapshot written by Slice.Save into a new Slice on mem
// (opts as for NewSlice). A snapshot holds the elements in order, whatever
// the devices they lay on: one saved on a device loads onto a pool of any
// size and the other way round. It checks everything before believing it:
// the header's checksum, that the snapshot holds a Slice of T's layout
// (ErrTypeMismatch otherwise), that the element count fits mem, every
// block's CRC-32C and the trailer; a damaged or truncated stream gives an
// error matching ErrCorrupt. Device memory is taken one segment (on a
// pool, one stage) at a time as blocks arrive (the next one is allocated
// while the current one is written), so a forged count costs at most two
// segments beyond the data the stream holds. On any error the new Slice is
// freed and no goroutine of LoadSlice is left running.
//
// Blocks are read into pinned staging and verified and written to the
// device on several goroutines while the next ones are read. When r is a
// Nexter (bytes.Buffer is one), blocks are taken from r's memory without a
// copy, each finished before the next is asked for.
func LoadSlice[T any](mem Memory, r io.Reader, opts ...SliceOption) (*Slice[T], error) {
	dev, pool, err := sliceMemory("LoadSlice", mem)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("vmem: LoadSlice: nil io.Reader: %w", ErrRange)
	}
	if err := layout.Check[T](); err != nil {
		return nil, fmt.Errorf("vmem: LoadSlice: %w", err)
	}
	var s *Slice[T]
	if pool != nil {
		s, err = loadPoolSlice[T](pool, r, opts)
	} else {
		s, err = loadSlice[T](dev, r, opts)
	}
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
	size := unsafe.Sizeof(*new(T))
	per, err := sliceSnapCheck(sr.Header(), size, dev.sliceSnapMaxBytes(), "the device holds")
	if err != nil {
		return nil, err
	}
	count := int(sr.Header().Count)
	s, err := newSlice[T](dev, 0, opts)
	if err != nil {
		return nil, err
	}
	if err := s.loadBody(sr, count, per); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// sliceSnapCheck checks the header of a Slice snapshot for elements of
// size bytes loading into room for most bytes (where names that room), and
// returns how many elements a block holds.
func sliceSnapCheck(h snapfmt.Header, size uintptr, most uint64, where string) (int, error) {
	bs, err := sliceSnapBlockBytes(size)
	if err != nil {
		return 0, err
	}
	switch {
	case h.Aux[0] != uint64(size) || h.Aux[1] != 0 || h.Aux[2] != 0:
		return 0, fmt.Errorf("%w: header says %d-byte elements, T has %d", snapfmt.ErrCorrupt, h.Aux[0], size)
	case h.BlockSize != bs:
		return 0, fmt.Errorf("%w: block size %d, want %d for %d-byte elements", snapfmt.ErrCorrupt, h.BlockSize, bs, size)
	case h.Count > math.MaxInt/uint64(max(size, 1)) || h.Count*uint64(max(size, 1)) > most:
		return 0, fmt.Errorf("%w: %d elements of %d bytes, more than %s (%s)", snapfmt.ErrCorrupt, h.Count, size, where, human.Bytes(most))
	}
	return int(uintptr(bs) / max(size, 1)), nil
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

// sliceLoadGrow allocates the Slice's next segments on goroutines of
// their own while the blocks before them are written: an allocation
// (vkAllocateMemory, the GPU's zeroing and a first touch of every page)
// takes as long as writing a good part of a segment. Only the loading
// goroutine installs segments in s.segs; the allocating ones read nothing
// that changes.
type sliceLoadGrow struct {
	cap     int                 // capacity of the installed segments
	pending []chan sliceLoadSeg // allocations in flight, oldest first
}

type sliceLoadSeg struct {
	sg  segment
	err error
}

// sliceLoadAhead is how many segments are allocated ahead of the data.
// One keeps the allocations back to back when they are the slower part;
// more would pay only if a tier's allocations could overlap, and they do
// not (Device.grow holds the tier's lock through the whole allocation).
const sliceLoadAhead = 1

// loadCover sets the length to n, installing segments as needed (those
// allocated ahead first), then starts allocating the next ones if the
// snapshot's count needs them. A forged count thus costs at most
// sliceLoadAhead+1 segments beyond the data the stream holds.
func (s *Slice[T]) loadCover(g *sliceLoadGrow, n, count int) error {
	full := s.segCap()
	for g.cap < n {
		if err := s.usable(); err != nil {
			return err
		}
		var r sliceLoadSeg
		if len(g.pending) > 0 {
			r = <-g.pending[0]
			g.pending = g.pending[1:]
		} else {
			r.sg, r.err = s.allocSegWith(full, true)
		}
		if r.err != nil {
			return r.err
		}
		// The first segment is full here (loadBody reserved it), so the
		// new one continues the index arithmetic of pieces and off.
		s.segs = append(s.segs, r.sg)
		s.syncHeld()
		g.cap += r.sg.cap
	}
	s.setLen(max(n, s.n))
	for len(g.pending) < sliceLoadAhead && g.cap+len(g.pending)*full < count {
		ch := make(chan sliceLoadSeg, 1)
		g.pending = append(g.pending, ch)
		go func() {
			var r sliceLoadSeg
			r.sg, r.err = s.allocSegWith(full, true)
			ch <- r
		}()
	}
	return nil
}

// stop waits for the allocations in flight and frees their segments.
func (g *sliceLoadGrow) stop(d *Device) {
	for _, ch := range g.pending {
		if r := <-ch; r.err == nil {
			d.freeBlock(r.sg.blk)
		}
	}
	g.pending = nil
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
	// moves while a block is written into it; later segments only append.
	// Like them it is not touched page by page (a segment of 4 GiB takes
	// a tenth of a second to touch): the load writes it.
	if err := s.reserveWith(min(count, s.segCap()), true); err != nil {
		return err
	}
	g := &sliceLoadGrow{cap: s.Cap()}
	defer g.stop(s.dev)
	var err error
	if sr.ZeroCopy() {
		err = s.loadBorrowed(sr, g, count, per)
	} else {
		err = s.loadStaged(sr, g, count, per)
	}
	if err != nil {
		return err
	}
	s.loadTouchTail()
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

// sliceLoadTask is one part of a block for one worker: bytes [lo, hi) of
// the block's data, checksummed when sum is set (the checksummed parts
// cover the data in order) and written to element j of blk unless blk is
// zero. Destinations are fixed by the loading goroutine before the workers
// start, so workers never read s.segs, which grows meanwhile.
type sliceLoadTask struct {
	lo, hi int
	sum    bool
	dma    bool // written by one DMA from pinned memory, whatever blk's tier
	blk    block.Block
	j      int
}

const (
	// sliceLoadWorkers bounds the goroutines that verify and write one
	// block: the CPU's stores into mapped VRAM reach the link's limit
	// from a few cores (docs/physics.md), and one core's CRC-32C falls
	// short of it.
	sliceLoadWorkers = 16
	// sliceLoadPart is the least a worker takes: below it the goroutine
	// costs more than it saves.
	sliceLoadPart = 256 << 10
)

// loadPlan splits the block holding elements [at, at+k) into tasks, from
// the segments as they are now. pinned says the block's bytes lie in
// memory the device can DMA from (a staging buffer, a Host block).
//
// From pinned memory, mapped segments are written by DMA too, not by the
// CPU: the first CPU store into each 4 KiB page of mapped VRAM faults
// (the faults hardly overlap), which held a large load far below the
// link's speed (docs/snapshots.md, BenchmarkSliceSnapshot); a DMA takes no
// fault and moves the data at full speed while the workers checksum. The
// pages then fault on their first CPU access instead, spread over the
// Slice's later use.
func (s *Slice[T]) loadPlan(tasks []sliceLoadTask, at, k int, pinned bool) []sliceLoadTask {
	w := min(runtime.GOMAXPROCS(0), sliceLoadWorkers)
	part := max((k+w-1)/w, int(sliceLoadPart/s.size), 1)
	size := int(s.size)
	dense := s.dense(0)
	s.pieces(at, k, func(sg *segment, j, from, kk int) error {
		if sg.Kind == access.DMA || (pinned && dense && sg.Kind == access.WC) {
			// One DMA for the whole piece: several small ones are slower
			// on the link. Only the checksum is split.
			tasks = append(tasks, sliceLoadTask{lo: from * size, hi: (from + kk) * size, dma: pinned && dense, blk: sg.blk, j: j})
			for e := 0; e < kk; e += part {
				m := min(part, kk-e)
				tasks = append(tasks, sliceLoadTask{lo: (from + e) * size, hi: (from + e + m) * size, sum: true})
			}
			return nil
		}
		// Parts of a line written by two workers are safe: the device
		// writes the ragged ends of a range byte-exact (lineio.Copy).
		for e := 0; e < kk; e += part {
			m := min(part, kk-e)
			tasks = append(tasks, sliceLoadTask{lo: (from + e) * size, hi: (from + e + m) * size, sum: true, blk: sg.blk, j: j + e})
		}
		return nil
	})
	return tasks
}

// loadBlock writes and verifies one block: on the GPU when gpu is set and
// kernels run (see loadChecked), else by its tasks (loadRun).
func (s *Slice[T]) loadBlock(b *snapfmt.Block, dst block.Block, off uint64, gpu bool, tasks []sliceLoadTask) error {
	if gpu {
		if done, err := s.dev.loadChecked(dst, off, b); done {
			return err
		}
	}
	return s.loadRun(b, tasks)
}

// loadRun verifies and writes one block's tasks on up to sliceLoadWorkers
// goroutines and waits for all of them. A wrong checksum wins over a
// device error: the bytes were bad before they were written.
func (s *Slice[T]) loadRun(b *snapfmt.Block, tasks []sliceLoadTask) error {
	sums := make([]uint32, len(tasks))
	errs := make([]error, len(tasks))
	do := func(i int) {
		t := &tasks[i]
		p := b.Data[t.lo:t.hi]
		if t.sum {
			sums[i] = snapfmt.Sum(p)
		}
		switch {
		case t.dma:
			errs[i] = s.dev.writeDMA(t.blk, uint64(s.off(t.j)), p)
		case !t.blk.IsZero():
			errs[i] = s.loadPut(t.blk, t.j, p)
		}
	}
	if nw := min(runtime.GOMAXPROCS(0), sliceLoadWorkers, len(tasks)); nw <= 1 {
		for i := range tasks {
			do(i)
		}
	} else {
		par.Go(nw, func(g int) {
			for i := g; i < len(tasks); i += nw {
				do(i)
			}
		})
	}
	crc, length := uint32(0), 0
	for i, t := range tasks {
		if !t.sum {
			continue
		}
		if length == 0 {
			crc = sums[i]
		} else {
			crc = snapfmt.Combine(crc, sums[i], int64(t.hi-t.lo))
		}
		length += t.hi - t.lo
	}
	if crc != b.CRC {
		return fmt.Errorf("%w: block %d: checksum %08x, computed %08x", snapfmt.ErrCorrupt, b.Index, b.CRC, crc)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// loadPut writes the bytes of len(src)/size elements, densely packed and
// at any address, at element j of a segment's block. Layouts that space
// records out are re-spaced through a scratch image that covers exactly
// the records' span, so bytes outside it (a neighbouring task's records)
// are never written.
func (s *Slice[T]) loadPut(blk block.Block, j int, src []byte) error {
	if s.dense(0) {
		return s.dev.writeBlock(blk, uint64(s.off(j)), src)
	}
	size := int(s.size)
	bp := stagePool.Get().(*[]byte)
	defer stagePool.Put(bp)
	buf := *bp
	per := max((len(buf)/int(s.group)-2)*s.perLine, 1)
	for k := len(src) / size; k > 0; {
		m := min(k, per)
		base := s.off(j)
		n := int(s.off(j+m-1)-base) + size
		if n > len(buf) {
			buf = make([]byte, n) // records larger than the scratch
		}
		img := buf[:n]
		clear(img)
		for e := range m {
			copy(img[s.off(j+e)-base:][:size], src[e*size:(e+1)*size])
		}
		if err := s.dev.writeBlock(blk, uint64(base), img); err != nil {
			return err
		}
		j, k, src = j+m, k-m, src[m*size:]
	}
	return nil
}

// loadBorrowed takes each block from the stream's memory. Its parts are
// verified and written by several goroutines, which all end before the
// next block is asked for (Nexter's contract: the memory is valid until
// the next call); the next segment is allocated meanwhile.
func (s *Slice[T]) loadBorrowed(sr *snapfmt.Reader, g *sliceLoadGrow, count, per int) error {
	var tasks []sliceLoadTask
	for at := 0; at < count; at += per {
		k := min(per, count-at)
		b, err := s.nextBlock(sr, nil, at, k)
		if err != nil {
			return err
		}
		if err := s.loadCover(g, at+k, count); err != nil {
			return err
		}
		pinned := s.dev.canDMAFrom(b.Data)
		dst, off, gpu := s.loadGPUDest(at, k, b.Data, pinned)
		tasks = s.loadPlan(tasks[:0], at, k, pinned)
		if err := s.loadBlock(&b, dst, off, gpu, tasks); err != nil {
			return err
		}
	}
	return nil
}

// loadStaged reads a stage of blocks from the stream into pinned memory
// while a goroutine verifies and writes the stage before (each block on
// several goroutines).
func (s *Slice[T]) loadStaged(sr *snapfmt.Reader, g *sliceLoadGrow, count, per int) error {
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
	type job struct {
		b     snapfmt.Block
		tasks []sliceLoadTask
		dst   block.Block // the GPU's destination, when gpu
		off   uint64
		gpu   bool
	}
	jobs := make([][]job, len(st))
	cur := 0
	for at := 0; at < count; at += stageN {
		x, jb := st[cur], jobs[cur][:0]
		x.at, x.k = at, min(stageN, count-at)
		data := s.stageBytes(x, x.k)
		for off := 0; off < x.k; off += per {
			k := min(per, x.k-off)
			lo := uintptr(off) * s.size
			b, err := s.nextBlock(sr, data[lo:lo+uintptr(k)*s.size], at+off, k)
			if err != nil {
				return err
			}
			jb = append(jb, job{b: b})
		}
		// The writer in flight has its destinations already: the Slice
		// may grow under it.
		if err := s.loadCover(g, at+x.k, count); err != nil {
			return err
		}
		for i := range jb {
			bat, bk := at+i*per, min(per, x.k-i*per)
			pinned := s.dev.canDMAFrom(jb[i].b.Data)
			jb[i].dst, jb[i].off, jb[i].gpu = s.loadGPUDest(bat, bk, jb[i].b.Data, pinned)
			jb[i].tasks = s.loadPlan(jb[i].tasks[:0], bat, bk, pinned)
		}
		jobs[cur] = jb
		if err := wait(); err != nil {
			return err
		}
		busy = true
		go func() {
			for i := range jb {
				if err := s.loadBlock(&jb[i].b, jb[i].dst, jb[i].off, jb[i].gpu, jb[i].tasks); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		cur = 1 - cur
	}
	return wait()
}

// loadTouchTail touches the pages of the last segment past the loaded
// elements. Segments allocated during a load are not touched page by page
// (Device.alloc's untouched): DMA fills them without touching them (their
// pages fault on the first CPU access instead), or the CPU writers take
// the first-touch faults on the pages they fill, in parallel. The pages
// past the data are touched here, as any new segment's are, so that
// Append does not pay for them.
func (s *Slice[T]) loadTouchTail() {
	if len(s.segs) == 0 {
		return
	}
	last := len(s.segs) - 1
	sg := &s.segs[last]
	if sg.Kind != access.WC {
		return
	}
	used := roundUp(uint64(s.bytesFor(s.n-last<<s.shift)), hostmem.PageSize)
	if size := sg.blk.Size(); used < size {
		touchPages(hostmem.Add(sg.Base, used), size-used)
	}
}
