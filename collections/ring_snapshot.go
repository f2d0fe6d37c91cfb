package collections

// Ring snapshots: the capacity and policy in the header, then the elements
// from oldest to newest as their bytes, read by All (DMA in large runs on a
// GPU). A load makes a ring of the same capacity and policy and fills it
// with PushBatch (whole lines of non-temporal stores).

import (
	"fmt"
	"io"
	"reflect"
	"runtime"
	"unsafe"

	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/layout"
	"github.com/govram/govram/vmem"
)

func ringSnapFingerprint[T any]() uint64 {
	return snapfmt.Fingerprint(snapfmt.KindRing, reflect.TypeFor[T]())
}

// Save writes the ring's elements, oldest first, with its capacity and
// policy, to w as a snapshot (docs/snapshots.md). LoadRing reads it back.
// Save is a consumer call that removes nothing; it must not overlap a push
// (the snapshot's count is Len when Save begins), and a ring changed under
// it makes it fail.
func (r *Ring[T]) Save(w io.Writer) error {
	if r.closed {
		return vmem.ErrClosed
	}
	defer runtime.KeepAlive(r) // w runs while r's memory is read
	if err := r.ringSave(w); err != nil {
		return fmt.Errorf("collections: Ring.Save: %w", err)
	}
	return nil
}

func (r *Ring[T]) ringSave(w io.Writer) error {
	n := r.Len()
	policy := ringErrorWhenFull
	if r.overwrite {
		policy = ringOverwriteOldest
	}
	sw, err := newSnapWriter(w, snapfmt.Header{
		Kind:        snapfmt.KindRing,
		Fingerprint: ringSnapFingerprint[T](),
		Count:       uint64(n),
		Aux:         [3]uint64{r.capacity, uint64(policy)},
	})
	if err != nil {
		return err
	}
	seen := 0
	for _, v := range r.All() {
		if seen == n {
			seen++
			break
		}
		sw.buf = append(sw.buf, unsafe.Slice((*byte)(unsafe.Pointer(&v)), r.size)...)
		seen++
		if err := sw.flush(false); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	if seen != n {
		return fmt.Errorf("the ring changed during Save (%d elements, Len was %d)", seen, n)
	}
	return sw.close()
}

// LoadRing reads a snapshot written by Ring.Save into a new ring on dev
// with the saved capacity and policy (opts, as for NewRing, come after and
// may change the policy). It checks the header's checksum, that the
// snapshot holds a Ring of T's layout (vmem.ErrTypeMismatch otherwise), that
// the capacity fits the device and holds the count, every block's
// CRC-32C and the trailer; damage gives an error matching vmem.ErrCorrupt. The
// ring's memory is allocated once the first 16 MiB of elements (for
// smaller rings: the whole snapshot) have been read and checked, so a
// forged capacity costs nothing unless the stream checks out. On any
// error the new ring is closed.
func LoadRing[T any](dev *vmem.Device, r io.Reader, opts ...RingOption) (*Ring[T], error) {
	if err := loadArgs("LoadRing", dev, r); err != nil {
		return nil, err
	}
	g, err := ringLoad[T](dev, r, opts)
	if err != nil {
		return nil, fmt.Errorf("collections: LoadRing: %w", snapErr(err))
	}
	return g, nil
}

func ringLoad[T any](dev *vmem.Device, r io.Reader, opts []RingOption) (*Ring[T], error) {
	if err := layout.Check[T](); err != nil {
		return nil, err
	}
	sr, err := snapfmt.NewReader(r, snapfmt.KindRing, ringSnapFingerprint[T]())
	if err != nil {
		return nil, err
	}
	h := sr.Header()
	size := uint64(unsafe.Sizeof(*new(T)))
	capacity, policy := h.Aux[0], ringPolicy(h.Aux[1])
	switch {
	case h.Aux[1] > uint64(ringOverwriteOldest) || h.Aux[2] != 0:
		return nil, fmt.Errorf("%w: ring policy %d", snapfmt.ErrCorrupt, h.Aux[1])
	case capacity == 0 || h.Count > capacity:
		return nil, fmt.Errorf("%w: %d elements in a ring of %d", snapfmt.ErrCorrupt, h.Count, capacity)
	}
	if err := snapCountCheck(dev, capacity, size); err != nil {
		return nil, err
	}
	count := int(h.Count)
	// The ring's memory is for its capacity, which no data in the stream
	// vouches for: read the first ringSnapAhead bytes of elements (all of
	// them, for most rings, trailer included) before allocating it, so that
	// a forged header costs an allocation only with a stream that checks
	// out that far.
	first := make([]T, min(count, max(ringSnapAhead/max(int(size), 1), 1)))
	if size > 0 {
		if _, err := sr.ReadFull(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(first))), uint64(len(first))*size)); err != nil {
			return nil, err
		}
	}
	if len(first) == count {
		if err := sr.End(); err != nil {
			return nil, err
		}
	}
	g, err := NewRing[T](dev, int(capacity), append([]RingOption{withPolicy(policy)}, opts...)...)
	if err != nil {
		return nil, err
	}
	if _, err := g.PushBatch(first); err != nil {
		g.Close()
		return nil, err
	}
	if len(first) < count {
		if err := g.ringLoadBody(sr, count-len(first)); err != nil {
			g.Close()
			return nil, err
		}
	}
	return g, nil
}

// ringSnapAhead is how much of a ring's elements LoadRing reads before it
// allocates the ring.
const ringSnapAhead = 16 << 20

// ringLoadBody pushes the count remaining elements and checks the end.
func (r *Ring[T]) ringLoadBody(sr *snapfmt.Reader, count int) error {
	buf := make([]T, min(count, max(snapFlush/max(int(r.size), 1), 1)))
	for done := 0; done < count; {
		k := min(len(buf), count-done)
		if r.size > 0 {
			b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), uint64(k)*r.size)
			if _, err := sr.ReadFull(b); err != nil {
				return err
			}
		}
		if _, err := r.PushBatch(buf[:k]); err != nil {
			return err
		}
		done += k
	}
	return sr.End()
}
