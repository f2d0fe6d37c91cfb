package vmem_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

type snap24 struct{ A, B, C uint64 }
type snap100 struct {
	X [25]uint32
}
type snapPair struct{ Lo, Hi uint32 }
type snapWide struct{ V uint64 }

func snapBytes[T any](v []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), uintptr(len(v))*unsafe.Sizeof(*new(T)))
}

func snapFill[T any](t testing.TB, d *vmem.Device, n int, opts ...vmem.SliceOption) (*vmem.Slice[T], []T) {
	t.Helper()
	want := make([]T, n)
	b := snapBytes(want)
	for k := range b {
		b[k] = byte(k*131 + k/251 + 1)
	}
	return snapSliceOf(t, d, want, opts...), want
}

// snapSliceOf returns a new Slice holding want.
func snapSliceOf[T any](t testing.TB, d *vmem.Device, want []T, opts ...vmem.SliceOption) *vmem.Slice[T] {
	t.Helper()
	s, err := vmem.NewSlice[T](d, len(want), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CopyFrom(want, 0); err != nil {
		t.Fatal(err)
	}
	return s
}

func snapSave[T any](t testing.TB, s *vmem.Slice[T]) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := s.Save(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func snapCheck[T any](t *testing.T, s *vmem.Slice[T], want []T) {
	t.Helper()
	if s.Len() != len(want) {
		t.Fatalf("Len %d, want %d", s.Len(), len(want))
	}
	got := make([]T, len(want))
	if err := s.CopyTo(got, 0); err != nil {
		t.Fatal(err)
	}
	// Compared as bytes: reflect on millions of array elements is slow
	// under the race detector.
	if !bytes.Equal(snapBytes(got), snapBytes(want)) {
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("element %d: got %v, want %v", i, got[i], want[i])
			}
		}
	}
}

// snapRoundTrip saves n elements and loads them back through a
// bytes.Buffer (the zero-copy path), a bytes.Reader (the staged path) and,
// for small snapshots, a one-byte-at-a-time reader.
func snapRoundTrip[T any](t *testing.T, d *vmem.Device, n int, opts ...vmem.SliceOption) {
	t.Run(fmt.Sprintf("%dB/%d", unsafe.Sizeof(*new(T)), n), func(t *testing.T) {
		s, want := snapFill[T](t, d, n, opts...)
		defer s.Close()
		data := snapSave(t, s)
		readers := map[string]func() io.Reader{
			"buffer": func() io.Reader { return bytes.NewBuffer(data) },
			"reader": func() io.Reader { return bytes.NewReader(data) },
		}
		if len(data) < 64<<10 {
			readers["onebyte"] = func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) }
		}
		for name, mk := range readers {
			l, err := vmem.LoadSlice[T](d, mk(), opts...)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			snapCheck(t, l, want)
			again := snapSave(t, l)
			if !bytes.Equal(again, data) {
				t.Fatalf("%s: re-saved snapshot differs", name)
			}
			l.Close()
		}
	})
}

func TestSliceSnapshotRoundTrip(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		// Full size: several blocks, stages and 64 KiB segments.
		big, many, seg := 9000, 300000, vmemtest.WithSegmentBytes(64<<10)
		if testing.Short() || buildconst.Race {
			big, many = 600, 20000
		}
		snapRoundTrip[uint8](t, d, 0)
		snapRoundTrip[uint8](t, d, 1)
		snapRoundTrip[uint8](t, d, 1000)
		snapRoundTrip[uint64](t, d, 0)
		snapRoundTrip[uint64](t, d, 12345)
		snapRoundTrip[uint64](t, d, many, seg)
		snapRoundTrip[snap24](t, d, 5000)
		snapRoundTrip[snap24](t, d, many/3, seg)
		snapRoundTrip[[8]uint64](t, d, 3000)
		snapRoundTrip[snap100](t, d, 777)
		snapRoundTrip[snap100](t, d, many/10, seg)
		snapRoundTrip[[4096]byte](t, d, 3)
		snapRoundTrip[[4096]byte](t, d, big)
		snapRoundTrip[struct{}](t, d, 17)
		if d.Info().Backend == vmem.BackendVulkan {
			snapRoundTrip[uint64](t, d, 50000, vmem.InTier(vmem.Private))
		}
	})
}

func TestSliceSnapshotTypeMismatch(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		s, _ := snapFill[uint64](t, d, 100)
		defer s.Close()
		data := snapSave(t, s)
		check := func(name string, err error) {
			t.Helper()
			if !errors.Is(err, vmem.ErrTypeMismatch) {
				t.Errorf("load as %s: %v, want ErrTypeMismatch", name, err)
			}
		}
		_, err := vmem.LoadSlice[uint32](d, bytes.NewReader(data))
		check("uint32", err)
		_, err = vmem.LoadSlice[snapPair](d, bytes.NewReader(data))
		check("struct{Lo, Hi uint32}", err)
		_, err = vmem.LoadSlice[snapWide](d, bytes.NewReader(data))
		check("struct{V uint64}", err)
		_, err = vmem.LoadSlice[int64](d, bytes.NewReader(data))
		check("int64", err)
		_, err = vmem.LoadSlice[float64](d, bytes.NewReader(data))
		check("float64", err)
		// Same layout, same type: loads.
		l, err := vmem.LoadSlice[uint64](d, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
	})
}

// TestSliceSnapshotDamage cuts a small snapshot at every length and flips
// every bit of it: each must fail with ErrCorrupt, never panic, and leave
// nothing allocated (vmemtest checks).
func TestSliceSnapshotDamage(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		s, _ := snapFill[uint32](t, d, 10)
		data := snapSave(t, s)
		s.Close()
		for cut := 0; cut < len(data); cut++ {
			for _, r := range []io.Reader{bytes.NewReader(data[:cut]), bytes.NewBuffer(data[:cut])} {
				l, err := vmem.LoadSlice[uint32](d, r)
				if !errors.Is(err, vmem.ErrCorrupt) {
					t.Fatalf("cut at %d of %d: %v, want ErrCorrupt", cut, len(data), err)
				}
				if l != nil {
					t.Fatal("a Slice came back with an error")
				}
			}
		}
		flip := bytes.Clone(data)
		for bit := 0; bit < 8*len(data); bit++ {
			flip[bit/8] ^= 1 << (bit % 8)
			_, err := vmem.LoadSlice[uint32](d, bytes.NewReader(flip))
			if !errors.Is(err, vmem.ErrCorrupt) {
				t.Fatalf("bit %d flipped: %v, want ErrCorrupt", bit, err)
			}
			flip[bit/8] ^= 1 << (bit % 8)
		}
		// Trailing bytes after the trailer are not read.
		l, err := vmem.LoadSlice[uint32](d, bytes.NewReader(append(bytes.Clone(data), 1, 2, 3)))
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
	})
}

// snapHeader is a header for a Slice of T with a valid checksum and the
// given count, followed by nothing.
func snapHeader[T any](count uint64, aux0 uint64) []byte {
	h := snapfmt.Header{
		Kind:        snapfmt.KindSlice,
		BlockSize:   uint32(max(16<<20/unsafe.Sizeof(*new(T)), 1) * unsafe.Sizeof(*new(T))),
		Fingerprint: snapfmt.Fingerprint(snapfmt.KindSlice, reflect.TypeFor[T]()),
		Count:       count,
		Aux:         [3]uint64{aux0},
	}
	b := h.Encode()
	return b[:]
}

func TestSliceSnapshotAbsurdHeader(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, count := range []uint64{1 << 60, 1<<64 - 1, 1 << 45, 1 << 61} {
			_, err := vmem.LoadSlice[uint64](d, bytes.NewReader(snapHeader[uint64](count, 8)))
			if !errors.Is(err, vmem.ErrCorrupt) {
				t.Errorf("count %d: %v, want ErrCorrupt", count, err)
			}
		}
		// A count the device could hold, with no data: only the first
		// segment (1 MiB here) is allocated before the stream runs out.
		for _, r := range []func(b []byte) io.Reader{
			func(b []byte) io.Reader { return bytes.NewReader(b) },
			func(b []byte) io.Reader { return bytes.NewBuffer(b) },
		} {
			b := snapHeader[uint64](1<<24, 8)
			b = binary.LittleEndian.AppendUint32(b, 16<<20)
			b = binary.LittleEndian.AppendUint32(b, 0)
			_, err := vmem.LoadSlice[uint64](d, r(b), vmemtest.WithSegmentBytes(1<<20))
			if !errors.Is(err, vmem.ErrCorrupt) {
				t.Errorf("count 1<<24 without data: %v, want ErrCorrupt", err)
			}
		}
		// A wrong element size in the header.
		_, err := vmem.LoadSlice[uint64](d, bytes.NewReader(snapHeader[uint64](1, 4)))
		if !errors.Is(err, vmem.ErrCorrupt) {
			t.Errorf("element size 4: %v, want ErrCorrupt", err)
		}
		// Not a snapshot at all.
		_, err = vmem.LoadSlice[uint64](d, bytes.NewReader([]byte("hello, world, this is not a snapshot of anything at all........")))
		if !errors.Is(err, vmem.ErrCorrupt) {
			t.Errorf("text: %v, want ErrCorrupt", err)
		}
	})
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

var errSnapWrite = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errSnapWrite
	}
	w.n -= len(p)
	return len(p), nil
}

func TestSliceSnapshotWriterError(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		s, _ := snapFill[[64]byte](t, d, 300000) // 19 MiB: two blocks
		defer s.Close()
		for _, n := range []int{0, 10, 100, 18 << 20} {
			if err := s.Save(&failWriter{n}); !errors.Is(err, errSnapWrite) {
				t.Errorf("writer failing after %d bytes: %v", n, err)
			}
		}
		s.Close()
		if err := s.Save(io.Discard); !errors.Is(err, vmem.ErrClosed) {
			t.Errorf("Save after Close: %v, want ErrClosed", err)
		}
	})
}

// TestSliceSnapshotFaults: a device fault during Save or Load is reported
// and Load frees what it allocated.
func TestSliceSnapshotFaults(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		s, _ := snapFill[uint64](t, d, 5000, vmemtest.WithSegmentBytes(4096))
		data := snapSave(t, s)
		s.Close()
		for n := int64(1); n <= 4; n++ {
			kdev(d).InjectFaults(kern.Faults{FailAlloc: n})
			l, err := vmem.LoadSlice[uint64](d, bytes.NewReader(data), vmemtest.WithSegmentBytes(4096))
			kdev(d).InjectFaults(kern.Faults{})
			if err == nil {
				l.Close()
				continue // the Nth allocation was a staging buffer, which falls back to the heap
			}
			if !errors.Is(err, vmem.ErrOutOfMemory) {
				t.Errorf("alloc fault %d: %v, want ErrOutOfMemory", n, err)
			}
		}
	})
}

// snapReuser is a Nexter that hands out one buffer, overwritten by every
// call: a loader that read a block after asking for the next would see
// other bytes (and the race detector would see the overlap).
type snapReuser struct {
	data []byte
	buf  []byte
}

func (r *snapReuser) Next(n int) []byte {
	n = min(n, len(r.data))
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	b := r.buf[:n]
	copy(b, r.data)
	r.data = r.data[n:]
	return b
}

func (r *snapReuser) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	return copy(p, r.Next(len(p))), nil
}

// snapFillLarge is snapFill for snapshots of several blocks: the pattern
// goes in a word at a time, which matters under the race detector.
func snapFillLarge[T any](t testing.TB, d *vmem.Device, n int, opts ...vmem.SliceOption) (*vmem.Slice[T], []T) {
	t.Helper()
	want := make([]T, n)
	b := snapBytes(want)
	for k := 0; k+8 <= len(b); k += 8 {
		binary.LittleEndian.PutUint64(b[k:], uint64(k)*0x9e3779b97f4a7c15+1)
	}
	return snapSliceOf(t, d, want, opts...), want
}

// snapBlockElems is how many elements of T a snapshot block holds.
func snapBlockElems[T any]() int { return max(16<<20/int(unsafe.Sizeof(*new(T))), 1) }

// snapSettle waits until no more goroutines run than before (as counted
// by snapGoroutines): LoadSlice must leave none behind, whatever happened.
func snapSettle(t *testing.T, before int) {
	t.Helper()
	for range 200 {
		if snapGoroutines() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	t.Fatalf("%d goroutines after LoadSlice, %d before:\n%s", snapGoroutines(), before, buf[:runtime.Stack(buf, true)])
}

// snapGoroutines counts the goroutines, less the parallel copies' kept
// workers (internal/par), which the first large copy starts and which stay
// for the process.
func snapGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	all := strings.Count("\n"+string(buf), "\ngoroutine ")
	return all - strings.Count(string(buf), "internal/par.(*worker).loop")
}

// TestSliceSnapshotLargeSegments loads snapshots of several 16 MiB blocks
// into small segments, so that blocks span segments, segments are
// allocated ahead while blocks are written, and blocks split over workers
// at addresses that share lines; through every kind of reader.
func TestSliceSnapshotLargeSegments(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		blocks := 2
		if testing.Short() || buildconst.Race {
			blocks = 1
		}
		t.Run("uint64", func(t *testing.T) {
			snapLarge[uint64](t, d, blocks*snapBlockElems[uint64]()+12345, vmemtest.WithSegmentBytes(3<<20))
		})
		// Records spaced out (on Vulkan), blocks that end inside a line.
		if !buildconst.Race || d.Info().Backend == vmem.BackendVulkan {
			t.Run("24B", func(t *testing.T) {
				snapLarge[snap24](t, d, blocks*snapBlockElems[snap24]()+77, vmemtest.WithSegmentBytes(5<<20))
			})
		}
		if !testing.Short() && !buildconst.Race {
			t.Run("100B", func(t *testing.T) {
				snapLarge[snap100](t, d, snapBlockElems[snap100]()+1000, vmemtest.WithSegmentBytes(1<<20))
			})
		}
	})
}

// snapPinned returns n bytes of a Host block (pinned memory on a GPU),
// freed when the test ends.
func snapPinned(t *testing.T, d *vmem.Device, n int) []byte {
	t.Helper()
	hb, err := kdev(d).Alloc(block.Host, uint64(n), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kdev(d).Free(hb) })
	return hb.Bytes()[:n]
}

func snapLarge[T any](t *testing.T, d *vmem.Device, n int, opts ...vmem.SliceOption) {
	s, want := snapFillLarge[T](t, d, n)
	data := snapSave(t, s)
	s.Close()
	// pinned: a bytes.Buffer over a Host block, whose blocks a GPU takes
	// by DMA straight into the Slice's segments, mapped ones included.
	pinned := snapPinned(t, d, len(data))
	copy(pinned, data)
	readers := map[string]func() io.Reader{
		"buffer": func() io.Reader { return bytes.NewBuffer(data) },
		"reader": func() io.Reader { return bytes.NewReader(data) },
		"reuser": func() io.Reader { return &snapReuser{data: data} },
		"pinned": func() io.Reader { return bytes.NewBuffer(pinned) },
	}
	for name, mk := range readers {
		before := snapGoroutines()
		l, err := vmem.LoadSlice[T](d, mk(), opts...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		snapSettle(t, before)
		snapCheck(t, l, want)
		l.Close()
	}
}

// TestSliceSnapshotLateDamage damages the last block of a snapshot of
// several blocks, or cuts the stream inside it, while the loader is busy
// with the blocks before: ErrCorrupt, nothing leaked (vmemtest checks),
// no goroutine left.
func TestSliceSnapshotLateDamage(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		per := snapBlockElems[uint64]()
		n := per + per/2
		if !testing.Short() && !buildconst.Race {
			n += per
		}
		s, _ := snapFillLarge[uint64](t, d, n)
		data := snapSave(t, s)
		s.Close()
		seg := vmemtest.WithSegmentBytes(2 << 20)
		last := len(data) - 64 - (n%per)*8/2 // inside the last block's data
		cases := map[string][]byte{
			"flip": func() []byte { b := bytes.Clone(data); b[last] ^= 0x10; return b }(),
			"cut":  data[:last],
			"end":  data[:len(data)-8], // the trailer is short
		}
		for name, b := range cases {
			for rname, r := range map[string]func() io.Reader{
				"buffer": func() io.Reader { return bytes.NewBuffer(b) },
				"reader": func() io.Reader { return bytes.NewReader(b) },
			} {
				before := snapGoroutines()
				l, err := vmem.LoadSlice[uint64](d, r(), seg)
				if !errors.Is(err, vmem.ErrCorrupt) {
					t.Errorf("%s/%s: %v, want ErrCorrupt", name, rname, err)
				}
				if l != nil {
					t.Fatalf("%s/%s: a Slice came back with an error", name, rname)
				}
				snapSettle(t, before)
			}
		}
		// An allocation failing in the middle of the load (the first
		// segment, a stage or a segment allocated ahead).
		for k := int64(2); k <= 8; k += 3 {
			kdev(d).InjectFaults(kern.Faults{FailAlloc: k})
			before := snapGoroutines()
			l, err := vmem.LoadSlice[uint64](d, bytes.NewBuffer(data), seg)
			kdev(d).InjectFaults(kern.Faults{})
			if err == nil {
				// On Vulkan a segment the mapped tier refuses goes to
				// the private tier.
				l.Close()
				if d.Info().Backend == vmem.BackendHost {
					t.Errorf("alloc fault %d: no error", k)
				}
				continue
			}
			if !errors.Is(err, vmem.ErrOutOfMemory) {
				t.Errorf("alloc fault %d: %v, want ErrOutOfMemory", k, err)
			}
			snapSettle(t, before)
		}
	})
}

// FuzzLoadSlice loads arbitrary bytes as a Slice[uint32]: an error, or a
// Slice that saves back to the same bytes.
func FuzzLoadSlice(f *testing.F) {
	d, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		f.Fatal(err)
	}
	defer d.Close()
	for _, n := range []int{0, 1, 7, 100} {
		s, _ := snapFill[uint32](f, d, n)
		f.Add(snapSave(f, s))
		s.Close()
	}
	f.Add(snapHeader[uint32](1<<62, 4))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := vmem.LoadSlice[uint32](d, bytes.NewReader(data))
		if err != nil {
			if s != nil {
				t.Fatal("a Slice came back with an error")
			}
			if !errors.Is(err, vmem.ErrCorrupt) && !errors.Is(err, vmem.ErrTypeMismatch) && !errors.Is(err, vmem.ErrOutOfMemory) {
				t.Fatalf("unexpected error kind: %v", err)
			}
		} else {
			var buf bytes.Buffer
			if err := s.Save(&buf); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if !bytes.HasPrefix(data, buf.Bytes()) {
				t.Fatal("loaded Slice saves to other bytes")
			}
		}
		if st := d.Info().Tiers[vmem.Mapped]; st.Blocks != 0 {
			t.Fatalf("%d blocks leaked", st.Blocks)
		}
	})
}

// TestSliceSnapshotGPUCheck loads snapshots whose blocks lie in pinned
// memory (a Host block read without a copy, and the staging of a plain
// reader): on Vulkan each block goes to its segment by DMA and is
// checksummed there by a kernel. The contents must come back, a flipped
// byte in a full or in the short last block must give ErrCorrupt, and the
// kernel must have run once per block.
func TestSliceSnapshotGPUCheck(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		per := snapBlockElems[uint64]()
		n := per + 1001 // a full block and a short one of 8008 bytes
		if !testing.Short() && !buildconst.Race {
			n += per
		}
		blocks := (n + per - 1) / per
		s, want := snapFillLarge[uint64](t, d, n)
		data := snapSave(t, s)
		s.Close()
		pinned := snapPinned(t, d, len(data))
		gpu := d.Info().Backend == vmem.BackendVulkan && kdev(d).KernelsAvailable()
		readers := map[string]func(b []byte) io.Reader{
			"pinned": func(b []byte) io.Reader { copy(pinned, b); return bytes.NewBuffer(pinned) },
			"reader": func(b []byte) io.Reader { return bytes.NewReader(b) },
		}
		for name, r := range readers {
			before := kdev(d).KernelDispatches()
			l, err := vmem.LoadSlice[uint64](d, r(data))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			snapCheck(t, l, want)
			l.Close()
			if ran := kdev(d).KernelDispatches() - before; gpu && ran < int64(blocks) {
				t.Errorf("%s: %d kernel dispatches for %d blocks: the GPU did not check them", name, ran, blocks)
			}
			for _, at := range []int{len(data) / 3, len(data) - 64 - 4000} {
				bad := bytes.Clone(data)
				bad[at] ^= 0x04
				l, err := vmem.LoadSlice[uint64](d, r(bad))
				if !errors.Is(err, vmem.ErrCorrupt) {
					t.Errorf("%s: byte %d of %d flipped: %v, want ErrCorrupt", name, at, len(data), err)
				}
				if l != nil {
					l.Close()
				}
			}
		}
	})
}
