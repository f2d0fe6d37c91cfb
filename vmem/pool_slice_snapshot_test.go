package vmem_test

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/govram/govram/internal/vmemtest"
	"io"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/vmem"
)

// poolSliceOf returns a new PoolSlice over p holding want, appended a
// little at a time (so that a FillFirst pool Slice fills each device before
// the next).
func poolSliceOf[T any](t testing.TB, p *vmem.Pool, want []T, opts ...vmem.SliceOption) *vmem.Slice[T] {
	t.Helper()
	s, err := vmem.NewSlice[T](p, 0, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for at := 0; at < len(want); at += 10_000 {
		if err := s.Append(want[at:min(at+10_000, len(want))]...); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// poolElems returns the elements of s.
func poolElems[T any](t testing.TB, s *vmem.Slice[T]) []T {
	t.Helper()
	got := make([]T, s.Len())
	if err := s.CopyTo(got, 0); err != nil {
		t.Fatal(err)
	}
	return got
}

func poolSnapSave[T any](t testing.TB, s *vmem.Slice[T]) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := s.Save(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func poolSnapCheck[T any](t *testing.T, what string, s *vmem.Slice[T], want []T) {
	t.Helper()
	if s.Len() != len(want) {
		t.Fatalf("%s: Len %d, want %d", what, s.Len(), len(want))
	}
	if !bytes.Equal(snapBytes(poolElems(t, s)), snapBytes(want)) {
		t.Fatalf("%s: elements differ", what)
	}
}

// poolSnapData is n elements of T with every byte set, varying.
func poolSnapData[T any](n int) []T {
	want := make([]T, n)
	b := snapBytes(want)
	for k := range b {
		b[k] = byte(k*131 + k/251 + 1)
	}
	return want
}

// poolSnapRoundTrip saves n elements of a pool Slice over p and loads them
// back through every kind of reader into p (both placements), into other
// (another number of devices) and onto one device with LoadSlice. The
// snapshot must be the bytes Slice.Save writes for the same elements.
func poolSnapRoundTrip[T any](t *testing.T, p, other *vmem.Pool, n int) {
	t.Run(fmt.Sprintf("%dB/%d", unsafe.Sizeof(*new(T)), n), func(t *testing.T) {
		want := poolSnapData[T](n)
		opts := []vmem.SliceOption{vmem.WithStripe(16), vmemtest.WithSegmentBytes(4096)}
		s := poolSliceOf(t, p, want, opts...)
		defer s.Close()
		data := poolSnapSave(t, s)
		one := snapSliceOf(t, p.Devices()[0], want)
		if single := snapSave(t, one); !bytes.Equal(single, data) {
			t.Fatalf("PoolSlice.Save wrote %d bytes unlike Slice.Save's %d", len(data), len(single))
		}
		one.Close()
		readers := map[string]func() io.Reader{
			"buffer": func() io.Reader { return bytes.NewBuffer(data) },
			"reader": func() io.Reader { return bytes.NewReader(data) },
		}
		if len(data) < 64<<10 {
			readers["onebyte"] = func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) }
		}
		into := map[string]func(io.Reader) (*vmem.Slice[T], error){
			"same": func(r io.Reader) (*vmem.Slice[T], error) { return vmem.LoadSlice[T](p, r, opts...) },
			"fillfirst": func(r io.Reader) (*vmem.Slice[T], error) {
				return vmem.LoadSlice[T](p, r, vmem.WithPlacement(vmem.FillFirst))
			},
			"other": func(r io.Reader) (*vmem.Slice[T], error) {
				return vmem.LoadSlice[T](other, r, vmem.WithStripe(8))
			},
		}
		for rname, mk := range readers {
			for iname, load := range into {
				before := snapGoroutines()
				l, err := load(mk())
				if err != nil {
					t.Fatalf("%s/%s: %v", iname, rname, err)
				}
				snapSettle(t, before)
				poolSnapCheck(t, iname+"/"+rname, l, want)
				if again := poolSnapSave(t, l); !bytes.Equal(again, data) {
					t.Fatalf("%s/%s: re-saved snapshot differs", iname, rname)
				}
				l.Close()
			}
			l, err := vmem.LoadSlice[T](p.Devices()[0], mk())
			if err != nil {
				t.Fatalf("LoadSlice/%s: %v", rname, err)
			}
			snapCheck(t, l, want)
			l.Close()
		}
	})
}

func TestPoolSliceSnapshotRoundTrip(t *testing.T) {
	eachPool(t, func(t *testing.T, p *vmem.Pool) {
		other := openPool(t, poolKind{"host2", vmem.BackendHost, 2})
		for _, n := range []int{0, 1, 17, 1000, 40_003} {
			poolSnapRoundTrip[uint32](t, p, other, n)
			poolSnapRoundTrip[snap24](t, p, other, n)
		}
		poolSnapRoundTrip[snap100](t, p, other, 777)
		poolSnapRoundTrip[struct{}](t, p, other, 5)
	})
}

// TestPoolSliceSnapshotLarge saves and loads a pool Slice of several
// blocks and stages, so that the pipelines overlap their stages.
func TestPoolSliceSnapshotLarge(t *testing.T) {
	eachPool(t, func(t *testing.T, p *vmem.Pool) {
		if buildconst.Race && p.Devices()[0].Info().Backend == vmem.BackendVulkan {
			t.Skip("slow under the race detector on lavapipe")
		}
		n := 2*snapBlockElems[uint64]() + 12345
		if testing.Short() {
			n = snapBlockElems[uint64]() + 12345
		}
		want := poolSnapData[uint64](n)
		s := poolSliceOf(t, p, want, vmem.WithStripe(1<<16))
		data := poolSnapSave(t, s)
		s.Close()
		for name, r := range map[string]func() io.Reader{
			"buffer": func() io.Reader { return bytes.NewBuffer(data) },
			"reader": func() io.Reader { return bytes.NewReader(data) },
		} {
			before := snapGoroutines()
			l, err := vmem.LoadSlice[uint64](p, r(), vmem.WithStripe(1<<15))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			snapSettle(t, before)
			poolSnapCheck(t, name, l, want)
			l.Close()
		}
		// Damage in the last block and a cut inside it, met while the
		// blocks before are being copied: ErrCorrupt, nothing leaked
		// (openPool's devices check), no goroutine left.
		last := len(data) - 64
		flip := bytes.Clone(data)
		flip[last] ^= 0x10
		for name, b := range map[string][]byte{"flip": flip, "cut": data[:last], "end": data[:len(data)-8]} {
			before := snapGoroutines()
			l, err := vmem.LoadSlice[uint64](p, bytes.NewReader(b))
			if !errors.Is(err, vmem.ErrCorrupt) || l != nil {
				t.Errorf("%s: (%v, %v), want ErrCorrupt", name, l, err)
			}
			snapSettle(t, before)
		}
	})
}

func TestPoolSliceSnapshotTypeMismatch(t *testing.T) {
	eachPool(t, func(t *testing.T, p *vmem.Pool) {
		s := poolSliceOf(t, p, poolSnapData[uint64](100), vmem.WithStripe(16))
		defer s.Close()
		data := poolSnapSave(t, s)
		check := func(name string, l any, err error) {
			t.Helper()
			if !errors.Is(err, vmem.ErrTypeMismatch) {
				t.Errorf("load as %s: %v, want ErrTypeMismatch", name, err)
			}
		}
		l1, err := vmem.LoadSlice[uint32](p, bytes.NewReader(data))
		check("uint32", l1, err)
		l2, err := vmem.LoadSlice[int64](p, bytes.NewReader(data))
		check("int64", l2, err)
		l3, err := vmem.LoadSlice[float64](p, bytes.NewReader(data))
		check("float64", l3, err)
		l4, err := vmem.LoadSlice[snapPair](p, bytes.NewReader(data))
		check("struct{Lo, Hi uint32}", l4, err)
		_, err = vmem.LoadSlice[int64](p.Devices()[0], bytes.NewReader(data))
		check("LoadSlice int64", nil, err)
	})
}

// TestPoolSliceSnapshotDamage cuts a small snapshot at every length and
// flips every bit of it (every few, on lavapipe): each load must fail with
// ErrCorrupt, return no PoolSlice and leave nothing allocated.
func TestPoolSliceSnapshotDamage(t *testing.T) {
	eachPool(t, func(t *testing.T, p *vmem.Pool) {
		s := poolSliceOf(t, p, poolSnapData[uint32](40), vmem.WithStripe(16))
		data := poolSnapSave(t, s)
		s.Close()
		step := 1
		if p.Devices()[0].Info().Backend == vmem.BackendVulkan || buildconst.Race {
			step = 7
		}
		for cut := 0; cut < len(data); cut += step {
			for _, r := range []io.Reader{bytes.NewReader(data[:cut]), bytes.NewBuffer(data[:cut])} {
				l, err := vmem.LoadSlice[uint32](p, r)
				if !errors.Is(err, vmem.ErrCorrupt) || l != nil {
					t.Fatalf("cut at %d of %d: (%v, %v), want ErrCorrupt", cut, len(data), l, err)
				}
			}
		}
		flip := bytes.Clone(data)
		for bit := 0; bit < 8*len(data); bit += step {
			flip[bit/8] ^= 1 << (bit % 8)
			l, err := vmem.LoadSlice[uint32](p, bytes.NewReader(flip))
			if !errors.Is(err, vmem.ErrCorrupt) || l != nil {
				t.Fatalf("bit %d flipped: (%v, %v), want ErrCorrupt", bit, l, err)
			}
			flip[bit/8] ^= 1 << (bit % 8)
		}
		// A count beyond what the pool holds is refused before any
		// allocation.
		_, err := vmem.LoadSlice[uint32](p, bytes.NewReader(snapHeader[uint32](1<<60, 4)))
		if !errors.Is(err, vmem.ErrCorrupt) {
			t.Errorf("count 1<<60: %v, want ErrCorrupt", err)
		}
		// A count the pool could hold, with no data behind it.
		_, err = vmem.LoadSlice[uint32](p, bytes.NewReader(snapHeader[uint32](1<<20, 4)))
		if !errors.Is(err, vmem.ErrCorrupt) {
			t.Errorf("count 1<<20 without data: %v, want ErrCorrupt", err)
		}
	})
}

func TestPoolSliceSnapshotMisuse(t *testing.T) {
	p := openPool(t, poolKind{"host3", vmem.BackendHost, 3})
	s := poolSliceOf(t, p, []uint32{1, 2, 3})
	if _, err := vmem.LoadSlice[uint32](p, nil); !errors.Is(err, vmem.ErrRange) {
		t.Errorf("nil reader: %v, want ErrRange", err)
	}
	if _, err := vmem.LoadSlice[uint32](nil, bytes.NewReader(nil)); !errors.Is(err, vmem.ErrNoDevice) {
		t.Errorf("nil pool: %v, want ErrNoDevice", err)
	}
	if _, err := vmem.LoadSlice[*int](p, bytes.NewReader(nil)); !errors.Is(err, vmem.ErrPointerType) {
		t.Errorf("pointer type: %v, want ErrPointerType", err)
	}
	for _, n := range []int{0, 10, 70} {
		if err := s.Save(&failWriter{n}); !errors.Is(err, errSnapWrite) {
			t.Errorf("writer failing after %d bytes: %v", n, err)
		}
	}
	s.Close()
	if err := s.Save(io.Discard); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("Save after Close: %v, want ErrClosed", err)
	}
	p.Close()
	if _, err := vmem.LoadSlice[uint32](p, bytes.NewReader(nil)); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("closed pool: %v, want ErrClosed", err)
	}
}
