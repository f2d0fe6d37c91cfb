package collections

// Map type checks, hashing, capacity, allocation counts and the table
// layout; the differential and lifecycle tests are in map_test.go.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

func TestMapTypesRefused(t *testing.T) {
	d := vmemtest.Open(t, vmem.BackendHost, vmem.Options{})
	if _, err := NewMap[*int, int](d); !errors.Is(err, vmem.ErrPointerType) {
		t.Errorf("pointer keys: %v", err)
	}
	if _, err := NewMap[int, []int](d); !errors.Is(err, vmem.ErrPointerType) {
		t.Errorf("slice values: %v", err)
	}
	type withStr struct {
		A int
		S string
	}
	if _, err := NewMap[withStr, int](d); !errors.Is(err, vmem.ErrPointerType) || !strings.Contains(err.Error(), "S") {
		t.Errorf("a string inside a key struct: %v", err)
	}
	if _, err := NewMap[int, int](d, WithHasher(func(s string) uint64 { return 0 })); err == nil {
		t.Error("a hasher of the wrong key type was accepted")
	}
}

// TestMapHasher uses caller hashers, a constant one included: every key
// collides, probes run into the tail, and the table must extend it.
func TestMapHasher(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for name, h := range map[string]func(uint32) uint64{
			"identity": func(k uint32) uint64 { return uint64(k) },
			"constant": func(uint32) uint64 { return 42 },
		} {
			t.Run(name, func(t *testing.T) {
				x := newMapDiff(t, d, 30, func(r *rand.Rand) uint32 { return uint32(r.IntN(400)) },
					func(r *rand.Rand) uint32 { return r.Uint32() }, WithHasher(h))
				defer x.close()
				x.run(mapSteps(1500, 400))
			})
		}
	})
}

func TestMapCapacity(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		n := mapSteps(10000, 1500)
		m, err := NewMap[uint64, uint64](d, WithCapacity(n))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		t0 := m.t
		for i := uint64(0); i < uint64(n); i++ {
			m.Put(i, i)
		}
		if m.t != t0 {
			t.Fatal("the table grew within its capacity")
		}
	})
}

// TestMapNoAllocs: Get and Put of fixed-size types allocate nothing.
func TestMapNoAllocs(t *testing.T) {
	if buildconst.Invariants {
		t.Skip("invariants builds allocate in their checks")
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, _ := NewMap[uint64, uint64](d, WithCapacity(1000))
		defer m.Close()
		for i := uint64(0); i < 1000; i++ {
			m.Put(i, i)
		}
		k := uint64(0)
		if n := testing.AllocsPerRun(500, func() {
			m.Get(k % 1000)
			m.Get(k + 5000)
			m.Put(k%1000, k)
			k++
		}); n != 0 {
			t.Fatalf("%v allocations per Get+Put", n)
		}
		sm, _ := NewMap[string, uint64](d)
		defer sm.Close()
		sm.Put("short key", 1)
		long := strings.Repeat("long key ", 20)
		sm.Put(long, 2)
		if n := testing.AllocsPerRun(500, func() {
			sm.Get("short key")
			sm.Get(long)
		}); n != 0 {
			t.Fatalf("%v allocations per string-key Get", n)
		}
	})
}

// TestMapHeap: the entries do not live on the Go heap.
func TestMapHeap(t *testing.T) {
	n := mapSteps(300000, 30000)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		before := mapHeapInUse()
		m, _ := NewMap[string, uint64](d)
		defer m.Close()
		ks := make([]string, 1000)
		vs := make([]uint64, 1000)
		for i := 0; i < n; i += len(ks) {
			for j := range ks {
				ks[j] = fmt.Sprintf("user:%010d", i+j)
				vs[j] = uint64(i + j)
			}
			if err := m.putMany(ks, vs); err != nil {
				t.Fatal(err)
			}
		}
		ks, vs = nil, nil
		if grew := int64(mapHeapInUse()) - int64(before); grew > 2<<20 {
			t.Fatalf("the Go heap grew by %d bytes for %d entries", grew, n)
		}
		runtime.KeepAlive(m)
	})
}

func mapHeapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func TestMapLayout(t *testing.T) {
	for _, c := range []struct {
		name       string
		r          mapRec
		p, lines   int
		size       uintptr
		keyW, valW uintptr
	}{
		{"u64-u64", mapLayout(8, 8, 8, 8, false, false), 4, 1, 16, 0, 0},
		{"u32-u32", mapLayout(4, 4, 4, 4, false, false), 8, 1, 8, 0, 0},
		{"u64-24", mapLayout(8, 8, 24, 8, false, false), 2, 1, 32, 0, 0},
		{"u64-100", mapLayout(8, 8, 100, 1, false, false), 1, 2, 112, 0, 0},
		{"str-u64", mapLayout(16, 8, 8, 8, true, false), 1, 2, 128, 112, 0}, // URL-sized keys inline
		{"str-str", mapLayout(16, 8, 16, 8, true, true), 1, 2, 128, 80, 40},
		{"u64-str", mapLayout(8, 8, 16, 8, false, true), 1, 1, 64, 0, 56},
	} {
		r := c.r
		if r.p != c.p || r.lines != c.lines || r.size != c.size || r.keyW != c.keyW || r.valW != c.valW {
			t.Errorf("%s: p %d lines %d size %d keyW %d valW %d", c.name, r.p, r.lines, r.size, r.keyW, r.valW)
		}
		if uintptr(r.p-1)*r.stride+r.size > r.bucket {
			t.Errorf("%s: slots overflow the bucket", c.name)
		}
	}
}

func TestMapSWAR(t *testing.T) {
	g := uint64(0x80_FE_12_05_80_12_7F_00)
	if got := mapMatch(g, 0x12*mapLSB); got&0x00_00_80_00_00_80_00_00 != 0x00_00_80_00_00_80_00_00 {
		t.Fatalf("match %#x", got)
	}
	if got := mapMatchEmpty(g); got != 0x80_00_00_00_80_00_00_00 {
		t.Fatalf("empty %#x", got)
	}
	if got := mapMatchFree(g); got != 0x80_80_00_00_80_00_00_00 {
		t.Fatalf("free %#x", got)
	}
	// Matches never flag empty or deleted bytes.
	for fp := uint64(0); fp < 128; fp++ {
		if mapMatch(g, fp*mapLSB)&mapMatchFree(g) != 0 {
			t.Fatalf("fp %#x flags a free byte", fp)
		}
	}
	if !slices.Equal([]uint64{mapStartHash(0, 7), mapHome(mapStartHash(3, 7), 7), mapHome(mapStartHash(3, 7)-1, 7)}, []uint64{0, 3, 2}) {
		t.Fatal("mapStartHash")
	}
}
