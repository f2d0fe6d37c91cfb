package snapfmt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/govram/govram/internal/waithook"
)

// Writer writes one snapshot: the header at NewWriter, then the body either
// as whole blocks (WriteBlock, for callers that checksum blocks themselves)
// or as a byte stream (Write, which cuts it into blocks), then Close.
type Writer struct {
	w     io.Writer
	h     Header
	body  uint64
	crcs  uint32
	short bool
	buf   []byte
	err   error
	done  bool
}

// NewWriter writes h to w and returns a Writer for the body.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	if h.BlockSize == 0 || h.BlockSize > MaxBlockSize {
		return nil, fmt.Errorf("snapfmt: block size %d outside [1, %d]", h.BlockSize, MaxBlockSize)
	}
	hb := h.Encode()
	if err := writeAll(w, hb[:]); err != nil {
		return nil, err
	}
	return &Writer{w: w, h: h}, nil
}

// writeAll writes p to w. A writer that takes less than p without saying
// why breaks io.Writer's contract; the snapshot would be cut short, so it
// is an error (io.ErrShortWrite), as in io.Copy.
func writeAll(w io.Writer, p []byte) error {
	n, err := w.Write(p)
	if err != nil {
		return err
	}
	if n != len(p) {
		return fmt.Errorf("snapfmt: the writer took %d of %d bytes: %w", n, len(p), io.ErrShortWrite)
	}
	return nil
}

// BlockSize returns the header's block size.
func (w *Writer) BlockSize() int { return int(w.h.BlockSize) }

var errShortBlock = errors.New("snapfmt: a block follows a short block")

// WriteBlock writes one block whose payload is the concatenation of parts
// and whose CRC-32C is crc. Every block but the last must hold exactly the
// block size.
func (w *Writer) WriteBlock(crc uint32, parts ...[]byte) error {
	if w.err != nil {
		return w.err
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n == 0 {
		return nil
	}
	if n > int(w.h.BlockSize) || w.short {
		w.err = fmt.Errorf("snapfmt: block of %d bytes (block size %d): %w", n, w.h.BlockSize, errShortBlock)
		return w.err
	}
	w.short = n < int(w.h.BlockSize)
	var fh [FrameHeaderSize]byte
	binary.LittleEndian.PutUint32(fh[:], uint32(n))
	binary.LittleEndian.PutUint32(fh[4:], crc)
	// The caller's writer runs now, on parts that may lie in a
	// container's memory: a test hook checks the container stays alive.
	waithook.Run()
	if err := writeAll(w.w, fh[:]); err != nil {
		w.err = err
		return err
	}
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		if err := writeAll(w.w, p); err != nil {
			w.err = err
			return err
		}
	}
	w.body += uint64(n)
	w.crcs = Update(w.crcs, fh[4:8])
	return nil
}

// Write appends p to the body, writing each block as it fills.
func (w *Writer) Write(p []byte) (int, error) {
	done := 0
	bs := int(w.h.BlockSize)
	for len(p) > 0 {
		if w.err != nil {
			return done, w.err
		}
		if len(w.buf) == 0 && len(p) >= bs {
			// A whole block straight from p.
			if err := w.WriteBlock(Checksum(p[:bs]), p[:bs]); err != nil {
				return done, err
			}
			p, done = p[bs:], done+bs
			continue
		}
		if w.buf == nil {
			w.buf = make([]byte, 0, bs)
		}
		take := min(bs-len(w.buf), len(p))
		w.buf = append(w.buf, p[:take]...)
		p, done = p[take:], done+take
		if len(w.buf) == bs {
			if err := w.WriteBlock(Checksum(w.buf), w.buf); err != nil {
				return done, err
			}
			w.buf = w.buf[:0]
		}
	}
	return done, nil
}

// Close writes what Write holds, the end mark and the trailer. It does not
// close the underlying writer.
func (w *Writer) Close() error {
	if w.done {
		return w.err
	}
	w.done = true
	if len(w.buf) > 0 {
		if err := w.WriteBlock(Checksum(w.buf), w.buf); err != nil {
			return err
		}
	}
	if w.err != nil {
		return w.err
	}
	var t [FrameHeaderSize + TrailerSize]byte
	tr := t[FrameHeaderSize:]
	copy(tr, TrailerMagic)
	le := binary.LittleEndian
	le.PutUint64(tr[8:], w.h.Count)
	le.PutUint64(tr[16:], w.body)
	le.PutUint32(tr[24:], w.crcs)
	le.PutUint32(tr[28:], Sum(tr[:28]))
	if err := writeAll(w.w, t[:]); err != nil {
		w.err = err
	}
	return w.err
}
