package collections

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"testing"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

type snapRec struct {
	ID   uint32
	Kind uint16
	Pad  uint16
	At   uint64
}

func snapStr(i int) string {
	return fmt.Sprintf("s%d-%s", i, string(bytes.Repeat([]byte{'a' + byte(i%26)}, i%37)))
}

// snapDamage cuts data at every length and flips every bit of it (every
// stride-th bit for long data): each load must fail with vmem.ErrCorrupt and
// return nothing. load must close what it gets on success.
func snapDamage(t *testing.T, data []byte, load func(r io.Reader) error) {
	t.Helper()
	for cut := 0; cut < len(data); cut++ {
		if err := load(bytes.NewReader(data[:cut])); !errors.Is(err, vmem.ErrCorrupt) {
			t.Fatalf("cut at %d of %d: %v, want vmem.ErrCorrupt", cut, len(data), err)
		}
	}
	stride := 1
	if testing.Short() {
		stride = 7
	}
	flip := bytes.Clone(data)
	for bit := 0; bit < 8*len(data); bit += stride {
		flip[bit/8] ^= 1 << (bit % 8)
		if err := load(bytes.NewReader(flip)); !errors.Is(err, vmem.ErrCorrupt) {
			t.Fatalf("bit %d of %d flipped: %v, want vmem.ErrCorrupt", bit, 8*len(data), err)
		}
		flip[bit/8] ^= 1 << (bit % 8)
	}
}

// snapForge writes a snapshot with the given header and raw body.
func snapForge(h snapfmt.Header, body []byte) []byte {
	var buf bytes.Buffer
	h.BlockSize = snapfmt.DefaultBlockSize
	w, err := snapfmt.NewWriter(&buf, h)
	if err != nil {
		panic(err)
	}
	w.Write(body)
	w.Close()
	return buf.Bytes()
}

func snapMapRoundTrip[K comparable, V any](t *testing.T, d *vmem.Device, n int, key func(int) K, val func(int) V) {
	t.Run(fmt.Sprintf("%v-%v/%d", reflect.TypeFor[K](), reflect.TypeFor[V](), n), func(t *testing.T) {
		m, err := NewMap[K, V](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		want := map[K]V{}
		for i := range n {
			want[key(i)] = val(i)
			if err := m.Put(key(i), val(i)); err != nil {
				t.Fatal(err)
			}
		}
		var buf bytes.Buffer
		if err := m.Save(&buf); err != nil {
			t.Fatal(err)
		}
		for _, r := range []io.Reader{bytes.NewReader(buf.Bytes()), bytes.NewBuffer(bytes.Clone(buf.Bytes()))} {
			l, err := LoadMap[K, V](d, r)
			if err != nil {
				t.Fatal(err)
			}
			got := maps.Collect(l.All())
			if !reflect.DeepEqual(got, want) || l.Len() != len(want) {
				t.Fatalf("loaded %d entries, want %d", l.Len(), len(want))
			}
			for k, v := range want {
				if g, ok := l.Get(k); !ok || !reflect.DeepEqual(g, v) {
					t.Fatalf("Get(%v) = %v, %v; want %v", k, g, ok, v)
				}
			}
			// Saving the loaded map gives the same entries.
			var again bytes.Buffer
			if err := l.Save(&again); err != nil {
				t.Fatal(err)
			}
			l.Close()
			l2, err := LoadMap[K, V](d, &again)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(maps.Collect(l2.All()), want) {
				t.Fatal("re-saved map differs")
			}
			l2.Close()
		}
	})
}

func TestMapSnapshotRoundTrip(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		big := 20000
		if testing.Short() || buildconst.Race {
			big = 3000
		}
		u := func(i int) uint64 { return uint64(i)*0x9e3779b97f4a7c15 + 1 }
		for _, n := range []int{0, 1, 100, big} {
			snapMapRoundTrip(t, d, n, u, func(i int) uint64 { return uint64(i) })
			snapMapRoundTrip(t, d, n, snapStr, snapStr)
		}
		snapMapRoundTrip(t, d, 1000, u, snapStr)
		snapMapRoundTrip(t, d, 1000, snapStr, func(i int) snapRec { return snapRec{ID: uint32(i), Kind: 3, At: u(i)} })
		snapMapRoundTrip(t, d, 500, func(i int) [3]uint64 { return [3]uint64{u(i), 1, 2} }, func(i int) [100]byte { return [100]byte{byte(i)} })
	})
}

func TestMapSnapshotErrors(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[uint64, string](d)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			m.Put(uint64(i), snapStr(i))
		}
		var buf bytes.Buffer
		if err := m.Save(&buf); err != nil {
			t.Fatal(err)
		}
		m.Close()
		if err := m.Save(io.Discard); !errors.Is(err, vmem.ErrClosed) {
			t.Errorf("Save after Close: %v", err)
		}
		data := buf.Bytes()
		mismatch := func(name string, err error) {
			t.Helper()
			if !errors.Is(err, vmem.ErrTypeMismatch) {
				t.Errorf("load as %s: %v, want vmem.ErrTypeMismatch", name, err)
			}
		}
		_, err = LoadMap[uint64, uint64](d, bytes.NewReader(data))
		mismatch("Map[uint64, uint64]", err)
		_, err = LoadMap[string, string](d, bytes.NewReader(data))
		mismatch("Map[string, string]", err)
		_, err = LoadMap[int64, string](d, bytes.NewReader(data))
		mismatch("Map[int64, string]", err)
		_, err = LoadBTreeOrdered[uint64, string](d, bytes.NewReader(data))
		mismatch("BTree[uint64, string]", err)
		_, err = LoadRing[uint64](d, bytes.NewReader(data))
		mismatch("Ring[uint64]", err)

		snapDamage(t, data, func(r io.Reader) error {
			l, err := LoadMap[uint64, string](d, r)
			if err == nil {
				l.Close()
			}
			return err
		})

		fp := mapSnapFingerprint[uint64, uint64]()
		corrupt := func(name string, data []byte) {
			t.Helper()
			l, err := LoadMap[uint64, uint64](d, bytes.NewReader(data))
			if err == nil {
				l.Close()
			}
			if !errors.Is(err, vmem.ErrCorrupt) {
				t.Errorf("%s: %v, want vmem.ErrCorrupt", name, err)
			}
		}
		for _, c := range []uint64{1 << 60, 1<<64 - 1, 1 << 40} {
			corrupt(fmt.Sprintf("count %d", c), snapForge(snapfmt.Header{Kind: snapfmt.KindMap, Fingerprint: fp, Count: c}, nil))
		}
		var body []byte
		for _, k := range []uint64{7, 7} {
			body = binary.LittleEndian.AppendUint64(body, k)
			body = binary.LittleEndian.AppendUint64(body, 1)
		}
		corrupt("duplicate keys", snapForge(snapfmt.Header{Kind: snapfmt.KindMap, Fingerprint: fp, Count: 2}, body))
		corrupt("extra entry", snapForge(snapfmt.Header{Kind: snapfmt.KindMap, Fingerprint: fp, Count: 1}, body))
		// A string length of 2^40 in a tiny stream.
		sfp := mapSnapFingerprint[uint64, string]()
		long := binary.AppendUvarint(binary.LittleEndian.AppendUint64(nil, 1), 1<<40)
		_, err = LoadMap[uint64, string](d, bytes.NewReader(snapForge(snapfmt.Header{Kind: snapfmt.KindMap, Fingerprint: sfp, Count: 1}, long)))
		if !errors.Is(err, vmem.ErrCorrupt) {
			t.Errorf("huge string: %v, want vmem.ErrCorrupt", err)
		}
		long = binary.AppendUvarint(binary.LittleEndian.AppendUint64(nil, 1), 200<<20)
		_, err = LoadMap[uint64, string](d, bytes.NewReader(snapForge(snapfmt.Header{Kind: snapfmt.KindMap, Fingerprint: sfp, Count: 1}, long)))
		if !errors.Is(err, vmem.ErrCorrupt) {
			t.Errorf("200 MiB string in a short stream: %v, want vmem.ErrCorrupt", err)
		}
	})
}

// snapFuzzDevice opens a host device for a fuzz target.
func snapFuzzDevice(f *testing.F) *vmem.Device {
	d, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { d.Close() })
	return d
}

func snapFuzzErr(t *testing.T, d *vmem.Device, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, vmem.ErrCorrupt) && !errors.Is(err, vmem.ErrTypeMismatch) && !errors.Is(err, vmem.ErrOutOfMemory) {
		t.Fatalf("unexpected error kind: %v", err)
	}
	for tier := vmem.Tier(0); tier <= vmem.Host; tier++ {
		if st := d.Info().Tiers[tier]; st.Blocks != 0 {
			t.Fatalf("%s tier: %d blocks leaked", tier, st.Blocks)
		}
	}
}

// FuzzLoadMap loads arbitrary bytes as a Map[uint64, string]: an error, or
// a map whose snapshot loads back to the same entries.
func FuzzLoadMap(f *testing.F) {
	d := snapFuzzDevice(f)
	for _, n := range []int{0, 1, 5} {
		m, _ := NewMap[uint64, string](d)
		for i := range n {
			m.Put(uint64(i*7), snapStr(i))
		}
		var buf bytes.Buffer
		m.Save(&buf)
		m.Close()
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := LoadMap[uint64, string](d, bytes.NewReader(data))
		if err == nil {
			want := maps.Collect(m.All())
			var buf bytes.Buffer
			if err := m.Save(&buf); err != nil {
				t.Fatal(err)
			}
			m.Close()
			l, err := LoadMap[uint64, string](d, &buf)
			if err != nil {
				t.Fatalf("re-saved map does not load: %v", err)
			}
			if !maps.Equal(maps.Collect(l.All()), want) {
				t.Fatal("re-saved map differs")
			}
			l.Close()
		}
		snapFuzzErr(t, d, err)
	})
}
