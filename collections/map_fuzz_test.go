package collections

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// The fuzz target decodes bytes into operations (the runtime's map fuzz
// test does the same) and runs them on a Map and a Go map, for uint64 keys
// and for string keys and values with shared prefixes and lengths up to
// 4 KiB, on every backend present.

var (
	mapFuzzOnce sync.Once
	mapFuzzDevs []*vmem.Device
)

// mapFuzzDevices opens one device per backend for the whole run: opening
// a Vulkan device per input would dominate the fuzzing.
func mapFuzzDevices(tb testing.TB) []*vmem.Device {
	mapFuzzOnce.Do(func() {
		for _, b := range vmemtest.Backends() {
			d, err := vmem.Open(vmem.Options{Backend: b})
			if err != nil {
				if b == vmem.BackendVulkan && !vmemtest.RequireVulkan() {
					continue
				}
				tb.Fatalf("open %s: %v", b, err)
			}
			mapFuzzDevs = append(mapFuzzDevs, d)
		}
	})
	return mapFuzzDevs
}

// mapFuzzReader hands out the input's bytes, then zeros.
type mapFuzzReader struct{ b []byte }

func (r *mapFuzzReader) next() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// mapFuzzStr is the string key with id id: one of the shared prefixes, the
// id, then letters up to a length of 0 to 4096 bytes.
func mapFuzzStr(id int) string {
	rr := rand.New(rand.NewPCG(uint64(id), 5))
	n := rr.IntN(64)
	if id%7 == 0 {
		n = rr.IntN(4097)
	}
	if id == 0 {
		return ""
	}
	var b bytes.Buffer
	b.WriteString(mapPrefixes[id%len(mapPrefixes)])
	fmt.Fprintf(&b, "%d", id)
	for b.Len() < n {
		b.WriteByte(byte('a' + rr.IntN(3)))
	}
	return b.String()
}

func mapFuzzRun[K comparable, V comparable](t *testing.T, d *vmem.Device, data []byte, key func(id int) K, val func(b byte) V) {
	var opts []MapOption
	if len(data) > 0 && data[0]&1 == 1 {
		opts = append(opts, mapWithSegmentBuckets(2))
	}
	m, err := NewMap[K, V](d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	x := &mapDiff[K, V]{t: t, m: m, model: map[K]V{}, r: rand.New(rand.NewPCG(1, 2))}
	r := &mapFuzzReader{data}
	id := func() int { return int(r.next()) | int(r.next()&3)<<8 }
	for len(r.b) > 0 {
		switch op := r.next() % 16; {
		case op < 6:
			x.put(key(id()), val(r.next()))
		case op < 9:
			x.get(key(id()))
		case op < 11:
			x.del(key(id()))
		case op == 11:
			// A run of new keys: growth.
			n, base := int(r.next())*4, 1024+int(r.next())*1024
			if buildconst.Invariants {
				n /= 4 // every write walks the whole table
			}
			ks, vs := make([]K, n), make([]V, n)
			for i := range ks {
				ks[i], vs[i] = key(base+i), val(byte(i))
			}
			if err := m.putMany(ks, vs); err != nil {
				t.Fatal(err)
			}
			for i := range ks {
				x.model[ks[i]] = vs[i]
			}
		case op == 12:
			n := int(r.next())
			ks := make([]K, n)
			for i := range ks {
				ks[i] = key(id())
			}
			vs, fs := make([]V, n), make([]bool, n)
			m.getMany(ks, vs, fs)
			for i, k := range ks {
				if w, ok := x.model[k]; ok != fs[i] || w != vs[i] {
					t.Fatalf("GetMany(%v) = %v, %v; want %v, %v", mapShort(k), mapShort(vs[i]), fs[i], mapShort(w), ok)
				}
			}
		case op == 13:
			x.compare()
		case op == 14:
			if r.next() < 32 {
				m.Clear()
				clear(x.model)
			}
		default:
			// Delete while iterating.
			sel := r.next()
			i := 0
			for k := range m.All() {
				if i++; (i+int(sel))%3 == 0 {
					x.del(k)
				}
			}
		}
		if m.Len() != len(x.model) {
			t.Fatalf("Len = %d, want %d", m.Len(), len(x.model))
		}
	}
	x.compare()
}

func FuzzMap(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 13, 11, 40, 1, 13, 9, 1, 0, 10, 1, 0, 13})
	f.Add([]byte{1, 11, 255, 3, 15, 0, 12, 200, 13, 14, 0, 13, 11, 100, 7, 13})
	f.Add(bytes.Repeat([]byte{0, 7, 1, 3, 2, 11, 9, 4}, 40))
	f.Add([]byte(strings.Repeat("\x0b\xff\x01\x0f\x02", 8)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			data = data[:4096]
		}
		for _, d := range mapFuzzDevices(t) {
			mapFuzzRun(t, d, data,
				func(id int) uint64 { return uint64(id) * 0x9E3779B97F4A7C15 },
				func(b byte) uint64 { return uint64(b) << 3 })
			mapFuzzRun(t, d, data, mapFuzzStr,
				func(b byte) string { return strings.Repeat("v", int(b)*int(b)/16) })
			vmemtest.CheckNoLeaks(t, d)
		}
	})
}
