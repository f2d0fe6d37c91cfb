package collections

// Map snapshots (the record codec every container shares is in snapshot.go).
//
// A Map's snapshot is its logical contents, not its table: Len entries in
// iteration order, each the key then the value, fixed-size types as their
// bytes and string types as a uvarint length and the bytes. The table is
// read by All (DMA of 1 MiB chunks into pinned memory), and a load rebuilds
// the table with putMany in batches, so the hash seed and table size of the
// new map are its own (see internal/snapfmt for the framing, checksums and
// bounds).

import (
	"fmt"
	"io"
	"reflect"
	"runtime"

	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/vmem"
)

func mapSnapFingerprint[K comparable, V any]() uint64 {
	return snapfmt.Fingerprint(snapfmt.KindMap, reflect.TypeFor[K](), reflect.TypeFor[V]())
}

// Save writes the map's entries to w as a snapshot (docs/snapshots.md):
// a header naming the key and value layouts, the entries in checksummed
// blocks, and a trailer. LoadMap reads it back. Save is a reader: it may
// run alongside Get and other readers, not alongside a write.
func (m *Map[K, V]) Save(w io.Writer) error {
	if m.sh != nil {
		return m.sh.Save(w)
	}
	if m.closed {
		return vmem.ErrClosed
	}
	defer runtime.KeepAlive(m) // w runs while m's memory is read
	if err := m.mapSave(w); err != nil {
		return fmt.Errorf("collections: Map.Save: %w", err)
	}
	return nil
}

func (m *Map[K, V]) mapSave(w io.Writer) (err error) {
	// All panics on a lost device (a read without an error result); Save
	// has one, and returns the loss.
	defer recoverLost(&err)
	h := snapfmt.Header{Kind: snapfmt.KindMap, Fingerprint: mapSnapFingerprint[K, V]()}
	return snapSaveEntries(w, h, m.Len(), m.All(), m.Err)
}

// LoadMap reads a snapshot written by Map.Save into a new map on mem, a
// device or a pool (opts as for NewMap): a map saved on one device loads
// over a pool of any size, and back. Everything is checked before it is
// believed: the header's checksum, that the snapshot holds a Map with K's
// and V's layouts (vmem.ErrTypeMismatch otherwise), every block's CRC-32C,
// every length, the entry count (duplicate keys are corruption) and the
// trailer; damage gives an error matching vmem.ErrCorrupt. The table grows as
// entries arrive, so a forged count costs nothing. On any error the new
// map is closed.
func LoadMap[K comparable, V any](mem vmem.Memory, r io.Reader, opts ...MapOption) (*Map[K, V], error) {
	dev, pool, err := memoryOf(mem)
	if err != nil {
		return nil, fmt.Errorf("collections: LoadMap: %w", err)
	}
	if pool != nil {
		return mapLoadPool[K, V](pool, r, opts)
	}
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
	m, err := newMap[K, V](dev, append([]MapOption{WithCapacity(min(count, snapBatch))}, opts...)...)
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
	done := 0
	err := snapLoadEntries(sr, count, func(keys []K, vals []V) error {
		if err := m.putMany(keys, vals); err != nil {
			return err
		}
		done += len(keys)
		// A repeated key is corruption: say so at the batch that holds
		// it, so that a forged count costs no more than the bytes present.
		if m.Len() != done {
			return fmt.Errorf("%w: a key repeats among entries %d to %d", snapfmt.ErrCorrupt, done-len(keys), done)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if m.Len() != count {
		return fmt.Errorf("%w: %d entries declared, %d distinct keys", snapfmt.ErrCorrupt, count, m.Len())
	}
	return nil
}
