package collections

// Snapshots of the sharded containers. A Map on a pool saves the snapshot
// of a Map on one device holding all its entries, and a BTree on a pool a
// BTree snapshot, in the same format (internal/snapfmt), so either loads
// as the other: a map saved from one GPU loads over a pool of any size,
// and back. The entries are spread again on load (a map's shard of a key
// depends on a hash seed of the process, so shards could not be reloaded
// as they were).

import (
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/vmem"
)

// Save writes the map's entries to w as a snapshot (docs/snapshots.md),
// in the format of a map on one device: LoadMap reads it back onto a
// device or a pool. Save is a reader: it may run alongside Get and other
// readers, not alongside a write.
func (s *shardedMap[K, V]) Save(w io.Writer) error {
	if s.closed {
		return vmem.ErrClosed
	}
	defer runtime.KeepAlive(s) // w runs while the shards' memory is read
	h := snapfmt.Header{Kind: snapfmt.KindMap, Fingerprint: mapSnapFingerprint[K, V]()}
	if err := snapSaveEntries(w, h, s.Len(), s.All(), s.Err); err != nil {
		return fmt.Errorf("collections: Map.Save: %w", err)
	}
	return nil
}

// mapLoadPool is LoadMap onto a pool: the entries, saved from a device or
// a pool, are spread over the shards again, checked as on a device. On any
// error the new map is closed.
func mapLoadPool[K comparable, V any](pool *vmem.Pool, r io.Reader, opts []MapOption) (*Map[K, V], error) {
	if r == nil {
		return nil, fmt.Errorf("collections: LoadMap: nil io.Reader: %w", vmem.ErrRange)
	}
	s, err := shMapLoad[K, V](pool, r, opts)
	if err != nil {
		return nil, fmt.Errorf("collections: LoadMap: %w", snapErr(err))
	}
	return mapOnPool(s), nil
}

func shMapLoad[K comparable, V any](pool *vmem.Pool, r io.Reader, opts []MapOption) (*shardedMap[K, V], error) {
	var devs []*vmem.Device
	if pool != nil {
		devs = pool.Devices()
	}
	if len(devs) == 0 {
		return nil, errors.New("nil or empty pool")
	}
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
	// Keys spread evenly over the shards: each device holds its share.
	nd := uint64(len(devs))
	if err := snapCountCheck(devs[0], (h.Count+nd-1)/nd, 1); err != nil {
		return nil, err
	}
	if err := sr.Prefetch(); err != nil {
		return nil, err
	}
	count := int(h.Count)
	// Size the tables for what a first batch proves, not for the count.
	s, err := newShardedMap[K, V](pool, append([]MapOption{WithCapacity(min(count, snapBatch))}, opts...)...)
	if err != nil {
		return nil, err
	}
	err = snapLoadEntries(sr, count, s.putMany)
	if err == nil && s.Len() != count {
		err = fmt.Errorf("%w: %d entries declared, %d distinct keys", snapfmt.ErrCorrupt, count, s.Len())
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Save is BTree.Save for a tree on a pool: the entries in ascending key
// order, in the format of a tree on one device.
func (t *shardedBTree[K, V]) Save(w io.Writer) error {
	if t.closed {
		return vmem.ErrClosed
	}
	defer runtime.KeepAlive(t) // w runs while the shards' memory is read
	h := snapfmt.Header{Kind: snapfmt.KindBTree, Fingerprint: btSnapFingerprint[K, V]()}
	r := t.ascend(nil, "", nil, nil) // "": a lost device is returned, not a panic
	defer r.stop()                   // a writer that panics leaves no window behind
	if err := snapSaveEntries(w, h, shLen(t.shards, t.closed), r.seq, t.Err); err != nil {
		return fmt.Errorf("collections: BTree.Save: %w", err)
	}
	return nil
}

// shBTLoad is LoadBTree on a pool: it reads a snapshot written by
// BTree.Save on a device or a pool into a new tree made by mk, checking it
// as on one device. Without WithSplits the entries are divided evenly over
// the shards by count, the splits being the first key of each shard's
// share; with it, each entry goes to the shard its splits give. On any
// error the new tree is closed.
func shBTLoad[K, V any](r io.Reader, mk func() (*BTree[K, V], error)) (*BTree[K, V], error) {
	if r == nil {
		return nil, fmt.Errorf("collections: LoadBTree: nil io.Reader: %w", vmem.ErrRange)
	}
	t, err := mk()
	if err != nil {
		return nil, fmt.Errorf("collections: LoadBTree: %w", err)
	}
	if err := t.sh.shLoadBody(r); err != nil {
		t.Close()
		return nil, fmt.Errorf("collections: LoadBTree: %w", snapErr(err))
	}
	return t, nil
}

func (t *shardedBTree[K, V]) shLoadBody(r io.Reader) error {
	sr, err := snapfmt.NewReader(r, snapfmt.KindBTree, btSnapFingerprint[K, V]())
	if err != nil {
		return err
	}
	h := sr.Header()
	if h.Aux != [3]uint64{} {
		return fmt.Errorf("%w: tree header has aux fields set", snapfmt.ErrCorrupt)
	}
	nd := uint64(len(t.shards))
	if err := snapCountCheck(t.pool.Devices()[0], (h.Count+nd-1)/nd, 1); err != nil {
		return err
	}
	if err := sr.Prefetch(); err != nil {
		return err
	}
	count := int(h.Count)
	put := t.BulkLoad
	if len(t.splits) == 0 && nd > 1 && count >= int(nd) {
		// Shard d gets the entries [d*count/nd, (d+1)*count/nd), none of
		// them empty: the splits are set as the stream reaches each
		// share's first key. Fewer entries than shards stay on shard 0.
		done := 0
		put = func(keys []K, vals []V) error {
			for len(keys) > 0 {
				d := len(t.splits)
				end := count
				if d+1 < int(nd) {
					end = (d + 1) * count / int(nd)
				}
				if done == end && d+1 < int(nd) {
					if mk, _, ok := t.shards[d].edge(true); ok && !t.less(mk, keys[0]) {
						return fmt.Errorf("%w: keys not strictly ascending under the tree's order near entry %d", snapfmt.ErrCorrupt, done)
					}
					t.splits = append(t.splits, keys[0])
					continue
				}
				n := min(len(keys), end-done)
				if err := t.shards[d].BulkLoad(keys[:n], vals[:n]); err != nil {
					return err
				}
				keys, vals, done = keys[n:], vals[n:], done+n
			}
			return nil
		}
	}
	err = snapLoadEntries(sr, count, func(keys []K, vals []V) error {
		err := put(keys, vals)
		if errors.Is(err, ErrUnsorted) {
			return fmt.Errorf("%w: keys not strictly ascending under the tree's order: %v", snapfmt.ErrCorrupt, err)
		}
		return err
	})
	t.wrote()
	return err
}
