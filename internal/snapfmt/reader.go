package snapfmt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Nexter is the zero-copy reading that bytes.Buffer offers: Next returns
// the next n bytes (fewer only at the end) as a slice of the reader's own
// memory, valid until the next call on the reader. A Reader uses it when
// the stream has it; a bytes.Buffer over a vmem.Host block lets blocks go
// to the device by DMA straight from the caller's memory.
type Nexter interface {
	Next(n int) []byte
}

// Reader reads one snapshot and checks everything it reads.
type Reader struct {
	r      io.Reader
	next   Nexter
	h      Header
	pos    uint64 // stream offset, for messages
	body   uint64
	blocks uint64
	crcs   uint32
	short  bool
	ended  bool
	buf    []byte
	cur    []byte // unread payload of the current block (Read)
}

// NewReader reads and checks the header, and checks that the snapshot is of
// kind with the given type fingerprint (ErrTypeMismatch otherwise).
func NewReader(r io.Reader, kind Kind, fingerprint uint64) (*Reader, error) {
	sr := &Reader{r: r}
	if n, ok := r.(Nexter); ok {
		sr.next = n
	}
	var hb [HeaderSize]byte
	if err := sr.readFull(hb[:], "header"); err != nil {
		return nil, err
	}
	h, err := DecodeHeader(hb[:])
	if err != nil {
		return nil, err
	}
	if h.Kind != kind {
		return nil, fmt.Errorf("%w: a snapshot of a %s, not of a %s", ErrTypeMismatch, h.Kind, kind)
	}
	if h.Fingerprint != fingerprint {
		return nil, fmt.Errorf("%w: type fingerprint %016x, want %016x (the element, key or value types differ)", ErrTypeMismatch, h.Fingerprint, fingerprint)
	}
	sr.h = h
	return sr, nil
}

// Header returns the snapshot's header.
func (r *Reader) Header() Header { return r.h }

// ZeroCopy reports whether blocks come from the stream's own memory.
func (r *Reader) ZeroCopy() bool { return r.next != nil }

// readFull fills p, turning an early end into ErrCorrupt.
func (r *Reader) readFull(p []byte, what string) error {
	if r.next != nil {
		b := r.next.Next(len(p))
		copy(p, b)
		r.pos += uint64(len(b))
		if len(b) < len(p) {
			return corruptf("truncated in the %s at byte %d", what, r.pos)
		}
		return nil
	}
	n, err := io.ReadFull(r.r, p)
	r.pos += uint64(n)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return corruptf("truncated in the %s at byte %d", what, r.pos)
	}
	if err != nil {
		return fmt.Errorf("snapfmt: reading the %s at byte %d: %w", what, r.pos, err)
	}
	return nil
}

// Block is one block as read, not yet verified.
type Block struct {
	Index uint64
	Data  []byte
	CRC   uint32 // as the stream declares it
	// Borrowed: Data is the stream's memory (Nexter), valid until the next
	// call on the Reader.
	Borrowed bool
}

// Verify checks the block's checksum (on several goroutines for a large
// block).
func (b *Block) Verify() error {
	if got := Checksum(b.Data); got != b.CRC {
		return corruptf("block %d: checksum %08x, computed %08x", b.Index, b.CRC, got)
	}
	return nil
}

// blockHeader reads the next frame header; at the end mark it reads and
// checks the trailer and returns io.EOF.
func (r *Reader) blockHeader() (n int, crc uint32, err error) {
	if r.ended {
		return 0, 0, io.EOF
	}
	var fh [FrameHeaderSize]byte
	if err := r.readFull(fh[:], "block header"); err != nil {
		return 0, 0, err
	}
	size := binary.LittleEndian.Uint32(fh[:])
	crc = binary.LittleEndian.Uint32(fh[4:])
	if size == 0 {
		if crc != 0 {
			return 0, 0, corruptf("end mark at byte %d has a checksum", r.pos-FrameHeaderSize)
		}
		if err := r.trailer(); err != nil {
			return 0, 0, err
		}
		r.ended = true
		return 0, 0, io.EOF
	}
	if size > r.h.BlockSize {
		return 0, 0, corruptf("block %d of %d bytes, block size %d", r.blocks, size, r.h.BlockSize)
	}
	if r.short {
		return 0, 0, corruptf("block %d follows a short block", r.blocks)
	}
	r.short = size < r.h.BlockSize
	r.crcs = Update(r.crcs, fh[4:8])
	return int(size), crc, nil
}

func (r *Reader) trailer() error {
	var t [TrailerSize]byte
	if err := r.readFull(t[:], "trailer"); err != nil {
		return err
	}
	le := binary.LittleEndian
	switch {
	case string(t[:8]) != TrailerMagic:
		return corruptf("no trailer at byte %d", r.pos-TrailerSize)
	case le.Uint32(t[28:]) != Sum(t[:28]):
		return corruptf("trailer checksum %08x, computed %08x", le.Uint32(t[28:]), Sum(t[:28]))
	case le.Uint64(t[8:]) != r.h.Count:
		return corruptf("trailer count %d, header count %d", le.Uint64(t[8:]), r.h.Count)
	case le.Uint64(t[16:]) != r.body:
		return corruptf("trailer says %d body bytes, the blocks hold %d", le.Uint64(t[16:]), r.body)
	case le.Uint32(t[24:]) != r.crcs:
		return corruptf("checksum of block checksums %08x, computed %08x", le.Uint32(t[24:]), r.crcs)
	}
	return nil
}

// NextBlock reads the next block without verifying it (call Verify, on
// another goroutine if useful). The payload goes into dst when it fits,
// is borrowed from the stream when the stream is a Nexter, and otherwise
// lands in a buffer of the Reader's that grows only as bytes arrive. At
// the end mark NextBlock checks the trailer and returns io.EOF.
func (r *Reader) NextBlock(dst []byte) (Block, error) {
	n, crc, err := r.blockHeader()
	if err != nil {
		return Block{}, err
	}
	b := Block{Index: r.blocks, CRC: crc}
	switch {
	case r.next != nil:
		b.Data = r.next.Next(n)
		b.Borrowed = true
		r.pos += uint64(len(b.Data))
		if len(b.Data) < n {
			return Block{}, corruptf("truncated in block %d at byte %d", r.blocks, r.pos)
		}
	case len(dst) >= n:
		b.Data = dst[:n]
		if err := r.readFull(b.Data, "block"); err != nil {
			return Block{}, err
		}
	default:
		// Grow with the bytes that arrive: a forged length costs at most
		// twice what the stream really holds.
		r.buf = r.buf[:0]
		for len(r.buf) < n {
			got := len(r.buf)
			want := min(n, max(2*got, 64<<10))
			r.buf = slices.Grow(r.buf, want-got)[:want]
			if err := r.readFull(r.buf[got:want], "block"); err != nil {
				return Block{}, err
			}
		}
		b.Data = r.buf
	}
	r.blocks++
	r.body += uint64(n)
	return b, nil
}

// Read reads the body as a byte stream, block by block, each verified
// before any of its bytes is returned. At the end of the body it checks
// the trailer and returns io.EOF.
func (r *Reader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		b, err := r.NextBlock(nil)
		if err != nil {
			return 0, err
		}
		if err := b.Verify(); err != nil {
			return 0, err
		}
		r.cur = b.Data
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// Prefetch reads and verifies the next block of the body, if there is
// one, before anything of it is asked for: a loader calls it before it
// allocates a container, so that a damaged small snapshot costs no device
// memory at all.
func (r *Reader) Prefetch() error {
	if len(r.cur) > 0 || r.ended {
		return nil
	}
	b, err := r.NextBlock(nil)
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	if err := b.Verify(); err != nil {
		return err
	}
	r.cur = b.Data
	return nil
}

// ReadByte reads one byte of the body (for binary.ReadUvarint).
func (r *Reader) ReadByte() (byte, error) {
	var b [1]byte
	if _, err := r.ReadFull(b[:]); err != nil {
		return 0, err
	}
	return b[0], nil
}

// ReadFull fills p from the body; the body ending first is ErrCorrupt.
func (r *Reader) ReadFull(p []byte) (int, error) {
	n, err := io.ReadFull(readerOnly{r}, p)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = corruptf("body ends inside a record (count %d)", r.h.Count)
	}
	return n, err
}

type readerOnly struct{ r *Reader }

func (o readerOnly) Read(p []byte) (int, error) { return o.r.Read(p) }

// Uvarint reads an unsigned varint from the body.
func (r *Reader) Uvarint() (uint64, error) {
	v, err := binary.ReadUvarint(r)
	if err != nil && !errors.Is(err, ErrCorrupt) && strings.Contains(err.Error(), "overflow") {
		// encoding/binary's own error: more than ten bytes or 64 bits.
		return 0, corruptf("a length varint overflows 64 bits")
	}
	return v, err
}

// Bytes reads n bytes of the body into a new slice, after checking n
// against limit; the slice grows as bytes arrive, so a forged length costs
// at most what the stream holds.
func (r *Reader) Bytes(n, limit uint64) ([]byte, error) {
	if n > limit {
		return nil, corruptf("a string of %d bytes, more than the %d allowed", n, limit)
	}
	var out []byte
	for uint64(len(out)) < n {
		got := len(out)
		want := int(min(n, uint64(max(2*got, 4096))))
		out = slices.Grow(out, want-got)[:want]
		if _, err := r.ReadFull(out[got:want]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// End checks that the body holds nothing more and that the trailer is
// right; call it after reading Count records.
func (r *Reader) End() error {
	if len(r.cur) > 0 {
		return corruptf("%d bytes after the last record", len(r.cur))
	}
	for {
		b, err := r.NextBlock(nil)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if len(b.Data) > 0 {
			return corruptf("block %d after the last record", b.Index)
		}
	}
}
