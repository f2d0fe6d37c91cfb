package collections

// BTree snapshots: the entries in ascending key order (the leaves read by
// All, extent by extent, by DMA on a GPU), each the key then the value as
// in a Map snapshot. A load rebuilds the tree with BulkLoad, which fills
// leaves completely and writes them sequentially: the loaded tree is
// denser than one built by inserts, and the snapshot says nothing about
// the old tree's shape.

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"

	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/vmem"
)

func btSnapFingerprint[K, V any]() uint64 {
	return snapfmt.Fingerprint(snapfmt.KindBTree, reflect.TypeFor[K](), reflect.TypeFor[V]())
}

// Save writes the tree's entries to w as a snapshot (docs/snapshots.md),
// in ascending key order. LoadBTree reads it back. Save is a reader: it may
// run alongside other readers, not alongside a change.
func (t *BTree[K, V]) Save(w io.Writer) error {
	if t.sh != nil {
		err := t.sh.Save(w)
		runtime.KeepAlive(t) // the caller's tree stays reachable while w runs, as on one device
		return err
	}
	if t.closed {
		return vmem.ErrClosed
	}
	defer runtime.KeepAlive(t) // w runs while t's memory is read
	if err := t.btSave(w); err != nil {
		return fmt.Errorf("collections: BTree.Save: %w", err)
	}
	return nil
}

func (t *BTree[K, V]) btSave(w io.Writer) error {
	h := snapfmt.Header{Kind: snapfmt.KindBTree, Fingerprint: btSnapFingerprint[K, V]()}
	if t.sk != nil {
		return t.sk.save(w, h)
	}
	r := t.ascend("", nil, nil)
	defer r.stop() // a writer that panics leaves no window behind
	return snapSaveEntries(w, h, t.Len(), r.seq, t.Err)
}

// LoadBTree reads a snapshot written by BTree.Save (on a device or a
// pool) into a new tree on mem ordered by less (opts as for NewBTree). It
// checks the header's checksum, that the snapshot holds a BTree with K's
// and V's layouts (vmem.ErrTypeMismatch otherwise), every block's CRC-32C,
// every length and the trailer; damage gives an error matching
// vmem.ErrCorrupt, and so do keys that are not strictly ascending under less
// (a snapshot saved under another order). On a pool without WithSplits
// the entries are divided evenly over the devices by count, the splits
// being the first key of each device's share; with it, each entry goes
// to the device its splits give. On any error the new tree is closed.
func LoadBTree[K, V any](mem vmem.Memory, r io.Reader, less func(a, b K) bool, opts ...BTreeOption) (*BTree[K, V], error) {
	if less == nil {
		return nil, fmt.Errorf("collections: LoadBTree: nil less function: %w", vmem.ErrRange)
	}
	return btLoadOn(mem, r, less, btNewOn[K, V](less), opts)
}

// LoadBTreeOrdered is LoadBTree for a tree ordered by <, as made by
// NewBTreeOrdered.
func LoadBTreeOrdered[K cmp.Ordered, V any](mem vmem.Memory, r io.Reader, opts ...BTreeOption) (*BTree[K, V], error) {
	return btLoadOn(mem, r, cmp.Less[K], btNewOrderedOn[K, V], opts)
}

// btLoadOn is LoadBTree with mk, the constructor of a tree on one device.
func btLoadOn[K, V any](mem vmem.Memory, r io.Reader, less func(a, b K) bool, mk func(*vmem.Device, []BTreeOption) (*BTree[K, V], error), opts []BTreeOption) (*BTree[K, V], error) {
	dev, pool, err := memoryOf(mem)
	if err != nil {
		return nil, fmt.Errorf("collections: LoadBTree: %w", err)
	}
	if pool != nil {
		return shBTLoad(r, func() (*BTree[K, V], error) { return btMake(pool, less, mk, opts) })
	}
	sr, err := btLoadHeader[K, V](dev, r)
	if err != nil {
		return nil, err
	}
	t, err := btMake(dev, less, mk, opts)
	if err != nil {
		return nil, fmt.Errorf("collections: LoadBTree: %w", err)
	}
	return btLoad(t, sr)
}

// btLoadHeader checks the header and the first block before a tree is
// made.
func btLoadHeader[K, V any](dev *vmem.Device, r io.Reader) (*snapfmt.Reader, error) {
	if err := loadArgs("LoadBTree", dev, r); err != nil {
		return nil, err
	}
	// A type the tree cannot hold is named as such, not as a snapshot of
	// another type.
	if err := btCheckTypes[K, V](); err != nil {
		return nil, fmt.Errorf("collections: LoadBTree: %w", err)
	}
	sr, err := snapfmt.NewReader(r, snapfmt.KindBTree, btSnapFingerprint[K, V]())
	if err == nil && sr.Header().Aux != [3]uint64{} {
		err = fmt.Errorf("%w: tree header has aux fields set", snapfmt.ErrCorrupt)
	}
	if err == nil {
		err = snapCountCheck(dev, sr.Header().Count, 1)
	}
	if err == nil {
		err = sr.Prefetch()
	}
	if err != nil {
		return nil, fmt.Errorf("collections: LoadBTree: %w", snapErr(err))
	}
	return sr, nil
}

// btLoad fills the empty tree t; it owns t, closing it on error.
func btLoad[K, V any](t *BTree[K, V], sr *snapfmt.Reader) (*BTree[K, V], error) {
	if err := t.btLoadBody(sr); err != nil {
		t.Close()
		return nil, fmt.Errorf("collections: LoadBTree: %w", snapErr(err))
	}
	return t, nil
}

func (t *BTree[K, V]) btLoadBody(sr *snapfmt.Reader) error {
	count := int(sr.Header().Count)
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
		if err := t.BulkLoad(keys[:k], vals[:k]); err != nil {
			if errors.Is(err, ErrUnsorted) {
				return fmt.Errorf("%w: keys not strictly ascending under the tree's order near entry %d: %v", snapfmt.ErrCorrupt, done, err)
			}
			return err
		}
		done += k
	}
	return sr.End()
}
