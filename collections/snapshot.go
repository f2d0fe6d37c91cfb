package collections

// What the containers' snapshots share: the record codec (fixed-size types
// as their bytes, strings as a uvarint length and the bytes), the writer
// that collects records into large pieces, the check of an entry count
// against the device, and the save of a key/value sequence. The framing,
// checksums and bounds are internal/snapfmt's (docs/snapshots.md).

import (
	"encoding/binary"
	"fmt"
	"github.com/govram/govram/internal/human"
	"io"
	"iter"
	"math"
	"reflect"
	"unsafe"

	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/vmem"
)

const (
	// snapMaxString bounds a string in a snapshot: the Map's own limit.
	snapMaxString = 256 << 20
	// snapBatch is how many entries a load gathers per putMany, BulkLoad
	// or PushBatch.
	snapBatch = 4096
	// snapFlush is how much encoded data Save collects before writing.
	snapFlush = 1 << 20
)

func snapErr(err error) error { return snapfmt.Wrap(err, vmem.ErrCorrupt, vmem.ErrTypeMismatch) }

// snapCodec encodes values of one type: strings with a length, everything
// else as its bytes (in the machine's byte order, which the type
// fingerprint records).
type snapCodec[T any] struct {
	str  bool
	size uintptr
}

func snapCodecFor[T any]() snapCodec[T] {
	return snapCodec[T]{str: isStringType(reflect.TypeFor[T]()), size: unsafe.Sizeof(*new(T))}
}

func (c snapCodec[T]) append(dst []byte, v *T) []byte {
	if c.str {
		s := *(*string)(unsafe.Pointer(v))
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		return append(dst, s...)
	}
	return append(dst, unsafe.Slice((*byte)(unsafe.Pointer(v)), c.size)...)
}

func (c snapCodec[T]) read(r *snapfmt.Reader, v *T) error {
	if c.str {
		n, err := r.Uvarint()
		if err != nil {
			return err
		}
		b, err := r.Bytes(n, snapMaxString)
		if err != nil {
			return err
		}
		*(*string)(unsafe.Pointer(v)) = unsafe.String(unsafe.SliceData(b), len(b))
		return nil
	}
	_, err := r.ReadFull(unsafe.Slice((*byte)(unsafe.Pointer(v)), c.size))
	return err
}

// snapWriter collects encoded records and writes them in large pieces.
type snapWriter struct {
	sw  *snapfmt.Writer
	buf []byte
}

func (w *snapWriter) flush(force bool) error {
	if len(w.buf) >= snapFlush || (force && len(w.buf) > 0) {
		if _, err := w.sw.Write(w.buf); err != nil {
			return err
		}
		w.buf = w.buf[:0]
	}
	return nil
}

func (w *snapWriter) close() error {
	if err := w.flush(true); err != nil {
		return err
	}
	return w.sw.Close()
}

func newSnapWriter(w io.Writer, h snapfmt.Header) (*snapWriter, error) {
	h.BlockSize = snapfmt.DefaultBlockSize
	sw, err := snapfmt.NewWriter(w, h)
	if err != nil {
		return nil, err
	}
	return &snapWriter{sw: sw, buf: make([]byte, 0, snapFlush+4096)}, nil
}

// snapCountCheck rejects a count that cannot fit in an int or could not be
// held by the device even at one byte an entry.
func snapCountCheck(dev *vmem.Device, count uint64, minBytes uint64) error {
	var most uint64
	in := dev.Info()
	for _, t := range []vmem.Tier{vmem.Mapped, vmem.Private} {
		ti := in.Tiers[t]
		if !ti.Available {
			continue
		}
		c := ti.Capacity
		if ti.Limit > 0 && ti.Limit < c {
			c = ti.Limit
		}
		most = max(most, c)
	}
	minBytes = max(minBytes, 1)
	if count > math.MaxInt/minBytes || count*minBytes > most {
		return fmt.Errorf("%w: %d entries, more than the device holds (%s)", snapfmt.ErrCorrupt, count, human.Bytes(most))
	}
	return nil
}

// snapSaveEntries writes n key/value entries, as all yields them, in
// checksummed blocks after header h (Count set here). errf reports an
// error the iteration met (compared before and after, so an older one
// does not count).
func snapSaveEntries[K, V any](w io.Writer, h snapfmt.Header, n int, all iter.Seq2[K, V], errf func() error) error {
	h.Count = uint64(n)
	sw, err := newSnapWriter(w, h)
	if err != nil {
		return err
	}
	kc, vc := snapCodecFor[K](), snapCodecFor[V]()
	prev := errf()
	seen := 0
	for k, v := range all {
		sw.buf = kc.append(sw.buf, &k)
		sw.buf = vc.append(sw.buf, &v)
		seen++
		if err := sw.flush(false); err != nil {
			return err
		}
	}
	// An error older than this Save counts too when entries are missing:
	// a sticky error (a lost device) keeps its identity on every retry.
	if err := errf(); err != nil && (err != prev || seen != n) {
		return err
	}
	if seen != n {
		return fmt.Errorf("iteration produced %d entries, Len is %d", seen, n)
	}
	return sw.close()
}

// snapLoadEntries reads count key/value entries and hands them to put in
// batches of snapBatch, then checks the end of the snapshot.
func snapLoadEntries[K, V any](sr *snapfmt.Reader, count int, put func(keys []K, vals []V) error) error {
	kc, vc := snapCodecFor[K](), snapCodecFor[V]()
	keys := make([]K, min(count, snapBatch))
	vals := make([]V, len(keys))
	for done := 0; done < count; {
		k := min(len(keys), count-done)
		for i := range k {
			if err := kc.read(sr, &keys[i]); err != nil {
				return err
			}
			if err := vc.read(sr, &vals[i]); err != nil {
				return err
			}
		}
		if err := put(keys[:k], vals[:k]); err != nil {
			return err
		}
		done += k
	}
	return sr.End()
}
