package vmem

// A pool Slice's snapshots are those of a Slice on one device: the
// header, blocks and trailer of Slice.Save, holding the elements in order
// whatever the devices and placement. So a Slice saved from a pool of any
// size loads into a pool of any other size, with any placement, or onto
// one device, and a one-device Slice's snapshot loads onto a pool.
//
// Both directions move a stage of elements (two blocks, 32 MiB) with the
// pool Slice's bulk copies, which run on every device at once, while the
// CPU checksums and writes, or reads and verifies, the stage before.

import (
	"fmt"
	"io"
	"runtime"
	"unsafe"

	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/internal/snapfmt"
)

// Save is Slice.Save on a pool, in the same format: LoadSlice reads it
// back into a pool of any number of devices or onto one device.
func (s *poolSlice[T]) Save(w io.Writer) error {
	if err := s.usable(); err != nil {
		return err
	}
	defer runtime.KeepAlive(s) // w runs while the parts' memory is read
	bs, err := sliceSnapBlockBytes(s.size)
	if err != nil {
		return fmt.Errorf("vmem: Slice.Save: %w", err)
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
		if err := s.saveBody(sw, int(uintptr(bs)/s.size)); err != nil {
			return fmt.Errorf("vmem: Slice.Save: %w", err)
		}
	}
	if err := sw.Close(); err != nil {
		return fmt.Errorf("vmem: Slice.Save: %w", err)
	}
	return nil
}

// saveBody copies stages out of the devices on one goroutine while this
// one checksums and writes the stage before.
func (s *poolSlice[T]) saveBody(sw *snapfmt.Writer, per int) error {
	stageN := min(s.n, max(sliceSnapStage/int(s.size)/per, 1)*per)
	bufs := [][]T{make([]T, stageN)}
	if stageN < s.n {
		bufs = append(bufs, make([]T, stageN))
	}
	return snapSaveStages(sw, s.n, stageN, bufs, s.CopyTo, per*int(s.size))
}

// elemBytes is the memory of v.
func elemBytes[T any](v []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), uintptr(len(v))*unsafe.Sizeof(*new(T)))
}

// snapWriteStage writes data as blocks of bs bytes (the last may be
// shorter), checksummed all at once, each on several goroutines when
// large.
func snapWriteStage(sw *snapfmt.Writer, data []byte, bs int) error {
	nb := (len(data) + bs - 1) / bs
	crcs := make([]uint32, nb)
	par.Go(nb, func(i int) {
		crcs[i] = snapfmt.Checksum(data[i*bs : min((i+1)*bs, len(data))])
	})
	for i := range nb {
		if err := sw.WriteBlock(crcs[i], data[i*bs:min((i+1)*bs, len(data))]); err != nil {
			return err
		}
	}
	return nil
}

// sliceSnapMaxBytes is the most memory a snapshot may ask the pool for:
// what its devices' VRAM tiers hold together.
func (p *Pool) sliceSnapMaxBytes() uint64 {
	var most uint64
	for _, d := range p.devs {
		m := d.sliceSnapMaxBytes()
		if most+m < most {
			return ^uint64(0)
		}
		most += m
	}
	return most
}

// loadPoolSlice is LoadSlice on a pool. The pool may have any number of
// devices and the Slice any placement: the snapshot holds the elements in
// order, and they are spread as NewSlice spreads them. Device memory is
// taken a stage at a time as the blocks arrive, so a forged count costs at
// most one stage beyond the data the stream holds.
func loadPoolSlice[T any](pool *Pool, r io.Reader, opts []SliceOption) (*Slice[T], error) {
	sr, err := snapfmt.NewReader(r, snapfmt.KindSlice, sliceSnapFingerprint[T]())
	if err != nil {
		return nil, err
	}
	per, err := sliceSnapCheck(sr.Header(), unsafe.Sizeof(*new(T)), pool.sliceSnapMaxBytes(), "the pool holds")
	if err != nil {
		return nil, err
	}
	s, err := newPoolSlice[T](pool, 0, opts)
	if err != nil {
		return nil, err
	}
	if err := s.synced(s.sh.loadBody(sr, int(sr.Header().Count), per)); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// loadBody reads count elements, per to a block, then the end of the
// snapshot. A stage is read from the stream while a goroutine verifies
// the one before and copies it to the devices; the Slice grows only
// between the copies.
func (s *poolSlice[T]) loadBody(sr *snapfmt.Reader, count, per int) error {
	if s.size == 0 || count == 0 {
		if err := s.Resize(count); err != nil {
			return err
		}
		return poolLoadEnd(sr)
	}
	stageN := min(count, max(sliceSnapStage/int(s.size)/per, 1)*per)
	var bufs [2][]T
	var blocks [2][]snapfmt.Block
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
	cur := 0
	for at := 0; at < count; at += stageN {
		if bufs[cur] == nil {
			bufs[cur] = make([]T, stageN)
		}
		buf := bufs[cur][:min(stageN, count-at)]
		data := elemBytes(buf)
		bl := blocks[cur][:0]
		for off := 0; off < len(buf); off += per {
			dst := data[off*int(s.size) : min(off+per, len(buf))*int(s.size)]
			b, err := poolNextBlock(sr, dst, at+off)
			if err != nil {
				return err
			}
			if b.Borrowed {
				// The stream's memory is valid only until the next block.
				copy(dst, b.Data)
				b.Data, b.Borrowed = dst, false
			}
			bl = append(bl, b)
		}
		blocks[cur] = bl
		if err := wait(); err != nil {
			return err
		}
		if err := s.Resize(at + len(buf)); err != nil {
			return err
		}
		busy = true
		go func() {
			for i := range bl {
				if err := bl[i].Verify(); err != nil {
					done <- err
					return
				}
			}
			done <- s.CopyFrom(buf, at)
		}()
		cur = 1 - cur
	}
	if err := wait(); err != nil {
		return err
	}
	return poolLoadEnd(sr)
}

// poolNextBlock reads the block holding the elements from at, which must
// fill dst exactly.
func poolNextBlock(sr *snapfmt.Reader, dst []byte, at int) (snapfmt.Block, error) {
	b, err := sr.NextBlock(dst)
	if err == io.EOF {
		return b, fmt.Errorf("%w: the snapshot ends at element %d", snapfmt.ErrCorrupt, at)
	}
	if err != nil {
		return b, err
	}
	if len(b.Data) != len(dst) {
		return b, fmt.Errorf("%w: block %d holds %d bytes, want %d", snapfmt.ErrCorrupt, b.Index, len(b.Data), len(dst))
	}
	return b, nil
}

// poolLoadEnd reads the end of the snapshot after the last block.
func poolLoadEnd(sr *snapfmt.Reader) error {
	b, err := sr.NextBlock(nil)
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: block %d after the last element", snapfmt.ErrCorrupt, b.Index)
}
