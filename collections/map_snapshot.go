package collections

// Map snapshots, and the record codec the BTree and Ring snapshots share.
//
// A Map's snapshot is its logical contents, not its table: Len entries in
// iteration order, each the key then the value, fixed-size types as their
// bytes and string types as a uvarint length and the bytes. The table is
// read by All (DMA of 1 MiB chunks into pinned memory), and a load rebuilds
// the table with PutMany in batches, so the hash seed and table size of the
// new map are its own (see internal/snapfmt for the framing, checksums and
// bounds).

import (
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"math"
	"reflect"
	"runtime"
	"unsafe"

	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/layout"
	"github.com/govram/govram/vmem"
)

const (
	// snapMaxString bounds a string in a snapshot: the Map's own limit.
	snapMaxString = 256 << 20
	// snapBatch is how many entries a load gathers per PutMany, BulkLoad
	// or PushBatch.
	snapBatch = 4096
	// snapFlush is how much encoded data Save collects before writing.
	snapFlush = 1 << 20
)

func snapErr(err error) error { return snapfmt.Wrap(err, ErrCorrupt, ErrTypeMismatch) }

// snapCodec encodes values of one type: strings with a length, everything
// else as its bytes (in the machine's byte order, which the type
// fingerprint records).
type snapCodec[T any] struct {
	str  bool
	size uintptr
}

func snapCodecFor[T any]() snapCodec[T] {
	return snapCodec[T]{str: layout.IsString(reflect.TypeFor[T]()), size: unsafe.Sizeof(*new(T))}
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
		return fmt.Errorf("%w: %d entries, more than the device holds (%s)", snapfmt.ErrCorrupt, count, vmem.Bytes(most))
	}
	return nil
}

func mapSnapFingerprint[K comparable, V any]() uint64 {
	return snapfmt.Fingerprint(snapfmt.KindMap, reflect.TypeFor[K](), reflect.TypeFor[V]())
}

// Save writes the map's entries to w as a snapshot (docs/snapshots.md):
// a header naming the key and value layouts, the entries in checksummed
// blocks, and a trailer. LoadMap reads it back. Save is a reader: it may
// run alongside Get and other readers, not alongside a write.
func (m *Map[K, V]) Save(w io.Writer) error {
	if m.closed {
		return ErrClosed
	}
	defer runtime.KeepAlive(m) // w runs while m's memory is read
	if err := m.mapSave(w); err != nil {
		return fmt.Errorf("collections: Map.Save: %w", err)
	}
	return nil
}

func (m *Map[K, V]) mapSave(w io.Writer) error {
	h := snapfmt.Header{Kind: snapfmt.KindMap, Fingerprint: mapSnapFingerprint[K, V]()}
	return snapSaveEntries(w, h, m.Len(), m.All(), m.Err)
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

// LoadMap reads a snapshot written by Map.Save into a new map on dev (opts
// as for NewMap). Everything is checked before it is believed: the
// header's checksum, that the snapshot holds a Map with K's and V's
// layouts (ErrTypeMismatch otherwise), every block's CRC-32C, every
// length, the entry count (duplicate keys are corruption) and the trailer;
// damage gives an error matching ErrCorrupt. The table grows as entries
// arrive, so a forged count costs nothing. On any error the new map is
// closed.
func LoadMap[K comparable, V any](dev *vmem.Device, r io.Reader, opts ...MapOption) (*Map[K, V], error) {
	if err := loadArgs("LoadMap", dev, r); err != nil {
		return nil, err
	}
	m, err := mapLoad[K, V](dev, r, opts)
	if err != nil {
		return nil, fmt.Errorf("collections: LoadMap: %w", snapErr(err))
	}
	return m, nil
}

func mapLoad[K comparable, V any](dev *vmem.Device, r io.Reader, opts []MapOption) (*Map[K, V], error) {
	if _, _, err := mapCheckTypes[K, V](); err != nil {
		return nil, err
	}
	sr, err := snapfmt.NewReader(r, snapfmt.KindMap, mapSnapFingerprint[K, V]())
	if err != nil {
		return nil, err
	}
	h := sr.Header()
	if h.Aux != [3]uint64{} {
		return nil, fmt.Errorf("%w: map header has aux fields set", snapfmt.ErrCorrupt)
	}
	if err := snapCountCheck(dev, h.Count, 1); err != nil {
		return nil, err
	}
	// The keys are distinct: a type with few values (struct{}, a byte)
	// bounds the count, which no amount of reading need disprove.
	if most, ok := distinctBound[K](); ok && h.Count > most {
		return nil, fmt.Errorf("%w: %d entries, but %v has only %d distinct values", snapfmt.ErrCorrupt, h.Count, reflect.TypeFor[K](), most)
	}
	if err := sr.Prefetch(); err != nil {
		return nil, err
	}
	count := int(h.Count)
	// Size the table for what a first batch proves, not for the count.
	m, err := NewMap[K, V](dev, append([]MapOption{WithCapacity(min(count, snapBatch))}, opts...)...)
	if err != nil {
		return nil, err
	}
	if err := m.mapLoadBody(sr, count); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func (m *Map[K, V]) mapLoadBody(sr *snapfmt.Reader, count int) error {
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
		if err := m.PutMany(keys[:k], vals[:k]); err != nil {
			return err
		}
		done += k
		// A repeated key is corruption: say so at the batch that holds
		// it, so that a forged count costs no more than the bytes present.
		if m.Len() != done {
			return fmt.Errorf("%w: a key repeats among entries %d to %d", snapfmt.ErrCorrupt, done-k, done)
		}
	}
	if err := sr.End(); err != nil {
		return err
	}
	if m.Len() != count {
		return fmt.Errorf("%w: %d entries declared, %d distinct keys", snapfmt.ErrCorrupt, count, m.Len())
	}
	return nil
}
