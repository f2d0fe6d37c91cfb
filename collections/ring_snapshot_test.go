package collections

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

func snapRingElems[T any](t *testing.T, r *Ring[T]) []T {
	t.Helper()
	var out []T
	for _, v := range r.All() {
		out = append(out, v)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func snapRingRoundTrip[T any](t *testing.T, d *vmem.Device, capacity, pushes int, p ringPolicy, val func(int) T) {
	t.Run(fmt.Sprintf("%v/%d-%d-%v", reflect.TypeFor[T](), capacity, pushes, p), func(t *testing.T) {
		r, err := NewRing[T](d, capacity, withPolicy(p))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for i := range pushes {
			if err := r.Push(val(i)); err != nil && !errors.Is(err, ErrFull) {
				t.Fatal(err)
			}
			if i%3 == 2 {
				r.Pop() // move the head so the saved ring wraps
			}
		}
		want := snapRingElems(t, r)
		data := snapSaveBytes(t, r.Save)
		for _, src := range []io.Reader{bytes.NewReader(data), bytes.NewBuffer(bytes.Clone(data))} {
			l, err := LoadRing[T](d, src)
			if err != nil {
				t.Fatal(err)
			}
			if int(l.capacity) != capacity || l.overwrite != (p == ringOverwriteOldest) {
				t.Fatalf("loaded Cap %d overwrite %v", int(l.capacity), l.overwrite)
			}
			if got := snapRingElems(t, l); !reflect.DeepEqual(got, want) {
				t.Fatalf("loaded %d elements, want %d", len(got), len(want))
			}
			if again := snapSaveBytes(t, l.Save); !bytes.Equal(again, data) {
				t.Fatal("re-saved ring differs")
			}
			// The loaded ring pops in the saved order.
			for i, w := range want {
				v, ok := l.Pop()
				if !ok || !reflect.DeepEqual(v, w) {
					t.Fatalf("Pop %d: %v, %v", i, v, ok)
				}
			}
			l.Close()
		}
	})
}

func TestRingSnapshotRoundTrip(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		big := 200000
		if testing.Short() || buildconst.Race {
			big = 20000
		}
		u := func(i int) uint64 { return uint64(i) * 11 }
		snapRingRoundTrip(t, d, 1, 0, ringErrorWhenFull, u)
		snapRingRoundTrip(t, d, 10, 25, ringOverwriteOldest, u)
		snapRingRoundTrip(t, d, 1000, 900, ringErrorWhenFull, u)
		snapRingRoundTrip(t, d, big/2, big, ringOverwriteOldest, u)
		snapRingRoundTrip(t, d, 333, 1000, ringOverwriteOldest, func(i int) snapRec { return snapRec{ID: uint32(i), At: uint64(i)} })
		snapRingRoundTrip(t, d, 100, 150, ringOverwriteOldest, func(i int) [100]byte { return [100]byte{byte(i), 1: byte(i >> 8)} })
		snapRingRoundTrip(t, d, 50, 40, ringErrorWhenFull, func(i int) byte { return byte(i) })
	})
}

func TestRingSnapshotErrors(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		r, err := NewRing[uint32](d, 8, withPolicy(ringOverwriteOldest))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 11 {
			r.Push(uint32(i))
		}
		data := snapSaveBytes(t, r.Save)
		r.Close()
		if err := r.Save(io.Discard); !errors.Is(err, vmem.ErrClosed) {
			t.Errorf("Save after Close: %v", err)
		}
		_, err = LoadRing[uint64](d, bytes.NewReader(data))
		if !errors.Is(err, vmem.ErrTypeMismatch) {
			t.Errorf("load as Ring[uint64]: %v", err)
		}
		_, err = LoadRing[int32](d, bytes.NewReader(data))
		if !errors.Is(err, vmem.ErrTypeMismatch) {
			t.Errorf("load as Ring[int32]: %v", err)
		}
		snapDamage(t, data, func(src io.Reader) error {
			l, err := LoadRing[uint32](d, src)
			if err == nil {
				l.Close()
			}
			return err
		})
		fp := ringSnapFingerprint[uint32]()
		for name, h := range map[string]snapfmt.Header{
			"capacity 2^60":  {Count: 0, Aux: [3]uint64{1 << 60}},
			"capacity 2^64":  {Count: 0, Aux: [3]uint64{1<<64 - 1}},
			"capacity 0":     {Count: 0},
			"count over cap": {Count: 9, Aux: [3]uint64{8}},
			"policy 7":       {Count: 0, Aux: [3]uint64{8, 7}},
			"short":          {Count: 5, Aux: [3]uint64{8}},
		} {
			h.Kind, h.Fingerprint = snapfmt.KindRing, fp
			_, err := LoadRing[uint32](d, bytes.NewReader(snapForge(h, []byte{1, 2, 3, 4})))
			if !errors.Is(err, vmem.ErrCorrupt) {
				t.Errorf("%s: %v, want vmem.ErrCorrupt", name, err)
			}
		}
	})
}

// FuzzLoadRing loads arbitrary bytes as a Ring[uint32]: an error, or a
// ring that saves back to the same bytes.
func FuzzLoadRing(f *testing.F) {
	d := snapFuzzDevice(f)
	for _, n := range []int{0, 3, 20} {
		r, _ := NewRing[uint32](d, 16, withPolicy(ringOverwriteOldest))
		for i := range n {
			r.Push(uint32(i * 3))
		}
		f.Add(snapSaveBytes(f, r.Save))
		r.Close()
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := LoadRing[uint32](d, bytes.NewReader(data))
		if err == nil {
			again := snapSaveBytes(t, r.Save)
			r.Close()
			if !bytes.HasPrefix(data, again) {
				t.Fatal("loaded ring saves to other bytes")
			}
		}
		snapFuzzErr(t, d, err)
	})
}
