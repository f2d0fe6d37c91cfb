package collections

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// mapDiff drives a map and a Go map model with the same random operations
// and compares them as it goes.
type mapDiff[K comparable, V comparable] struct {
	t     testing.TB
	m     *Map[K, V]
	model map[K]V
	genK  func(*rand.Rand) K
	genV  func(*rand.Rand) V
	r     *rand.Rand
}

func newMapDiff[K comparable, V comparable](t testing.TB, d *vmem.Device, seed uint64, genK func(*rand.Rand) K, genV func(*rand.Rand) V, opts ...MapOption) *mapDiff[K, V] {
	t.Helper()
	m, err := NewMap[K, V](d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return &mapDiff[K, V]{t: t, m: m, model: map[K]V{}, genK: genK, genV: genV, r: rand.New(rand.NewPCG(seed, 7))}
}

func (x *mapDiff[K, V]) put(k K, v V) {
	x.t.Helper()
	if err := x.m.Put(k, v); err != nil {
		x.t.Fatalf("Put(%v): %v", k, err)
	}
	x.model[k] = v
}

func (x *mapDiff[K, V]) get(k K) {
	x.t.Helper()
	got, ok := x.m.Get(k)
	want, wok := x.model[k]
	if ok != wok || got != want {
		x.t.Fatalf("Get(%v) = %v, %v; want %v, %v", mapShort(k), mapShort(got), ok, mapShort(want), wok)
	}
}

func (x *mapDiff[K, V]) del(k K) {
	x.t.Helper()
	_, had := x.model[k]
	if k != k {
		had = false // a NaN key is never found
	}
	old, got, err := x.m.Delete(k)
	if err != nil {
		x.t.Fatalf("Delete(%v): %v", mapShort(k), err)
	}
	if got != had || old != x.model[k] && k == k {
		x.t.Fatalf("Delete(%v) = %v, %v, want %v, %v", mapShort(k), mapShort(old), got, mapShort(x.model[k]), had)
	}
	delete(x.model, k)
}

func (x *mapDiff[K, V]) putMany(n int) {
	x.t.Helper()
	ks := make([]K, n)
	vs := make([]V, n)
	for i := range ks {
		if i > 0 && x.r.IntN(8) == 0 {
			ks[i] = ks[x.r.IntN(i)] // duplicates: the later value wins
		} else {
			ks[i] = x.genK(x.r)
		}
		vs[i] = x.genV(x.r)
	}
	if err := x.m.putMany(ks, vs); err != nil {
		x.t.Fatalf("PutMany(%d): %v", n, err)
	}
	for i := range ks {
		x.model[ks[i]] = vs[i]
	}
}

func (x *mapDiff[K, V]) getMany(n int) {
	x.t.Helper()
	ks := make([]K, n)
	for i := range ks {
		ks[i] = x.genK(x.r)
	}
	vs := make([]V, n)
	found := make([]bool, n)
	cnt := x.m.getMany(ks, vs, found)
	want := 0
	for i, k := range ks {
		w, ok := x.model[k]
		if ok != found[i] || vs[i] != w {
			x.t.Fatalf("GetMany[%d](%v) = %v, %v; want %v, %v", i, mapShort(k), mapShort(vs[i]), found[i], mapShort(w), ok)
		}
		if ok {
			want++
		}
	}
	if cnt != want {
		x.t.Fatalf("GetMany found %d, want %d", cnt, want)
	}
}

// compare checks Len and the full contents through All, Keys and Values.
func (x *mapDiff[K, V]) compare() {
	x.t.Helper()
	if x.m.Len() != len(x.model) {
		x.t.Fatalf("Len = %d, want %d", x.m.Len(), len(x.model))
	}
	seen := make(map[K]bool, len(x.model))
	nan := 0
	for k, v := range x.m.All() {
		if k != k {
			nan++
			continue
		}
		if seen[k] {
			x.t.Fatalf("All produced %v twice", mapShort(k))
		}
		seen[k] = true
		if w, ok := x.model[k]; !ok || w != v {
			x.t.Fatalf("All produced %v: %v; model has %v, %v", mapShort(k), mapShort(v), mapShort(w), ok)
		}
	}
	if err := x.m.Err(); err != nil {
		x.t.Fatalf("All: %v", err)
	}
	if len(seen)+nan != len(x.model) {
		x.t.Fatalf("All produced %d entries (%d NaN), want %d", len(seen)+nan, nan, len(x.model))
	}
	nk := 0
	for range keysOf(x.m.All()) {
		nk++
	}
	nv := 0
	for range valuesOf(x.m.All()) {
		nv++
	}
	if nk != len(x.model) || nv != len(x.model) {
		x.t.Fatalf("Keys gave %d, Values %d, want %d", nk, nv, len(x.model))
	}
	if err := x.m.check(); err != nil {
		x.t.Fatal(err)
	}
}

// run performs steps random operations.
func (x *mapDiff[K, V]) run(steps int) {
	x.t.Helper()
	r := x.r
	for step := 0; step < steps; step++ {
		switch op := r.IntN(1000); {
		case op < 420:
			x.put(x.genK(r), x.genV(r))
		case op < 620:
			x.get(x.genK(r))
		case op < 800:
			x.del(x.genK(r))
		case op < 850:
			x.putMany(r.IntN(300))
		case op < 900:
			x.getMany(r.IntN(300))
		case op < 920:
			x.compare()
		case op < 923:
			x.m.Clear()
			clear(x.model)
		default:
			// A key known to be there, so hits are common too.
			for k := range x.model {
				x.get(k)
				if r.IntN(3) == 0 {
					x.put(k, x.genV(r))
				}
				break
			}
		}
		if x.m.Len() != len(x.model) {
			x.t.Fatalf("step %d: Len = %d, want %d", step, x.m.Len(), len(x.model))
		}
	}
	x.compare()
}

func (x *mapDiff[K, V]) close() {
	x.t.Helper()
	if err := x.m.Close(); err != nil {
		x.t.Fatal(err)
	}
}

// mapShort prints long strings briefly in failure messages.
func mapShort(v any) any {
	if s, ok := v.(string); ok && len(s) > 40 {
		return fmt.Sprintf("%q...(%d bytes)", s[:20], len(s))
	}
	return v
}

// Key and value generators.

func genU64(space uint64) func(*rand.Rand) uint64 {
	return func(r *rand.Rand) uint64 { return r.Uint64N(space) * 0x9E3779B97F4A7C15 }
}

var mapPrefixes = []string{"", "user:", "user:0000000000/", strings.Repeat("p", 40), strings.Repeat("shared-", 200)}

// genStr makes strings that share prefixes, of lengths 0 to maxLen, from a
// limited space so that keys repeat. A key is a function of its id.
func genStr(space, maxLen int) func(*rand.Rand) string {
	cache := map[int]string{}
	return func(r *rand.Rand) string {
		id := r.IntN(space)
		if s, ok := cache[id]; ok {
			return s
		}
		rr := rand.New(rand.NewPCG(uint64(id), 3))
		n := rr.IntN(maxLen + 1)
		if rr.IntN(3) > 0 {
			n = rr.IntN(min(maxLen, 60) + 1)
		}
		b := []byte(mapPrefixes[id%len(mapPrefixes)])
		b = fmt.Appendf(b, "%d/", id)
		for len(b) < n {
			b = append(b, byte('a'+rr.IntN(26)))
		}
		cache[id] = string(b)
		return cache[id]
	}
}

func genVStr(maxLen int) func(*rand.Rand) string {
	return func(r *rand.Rand) string {
		n := r.IntN(maxLen + 1)
		if r.IntN(2) == 0 {
			n = r.IntN(30)
		}
		return strings.Repeat(string(rune('A'+r.IntN(26))), n)
	}
}

type mapPadded struct {
	A uint8
	B uint32 // three bytes of padding before
	C uint16
}

type mapBig [100]byte

func mapSteps(long, short int) int {
	if testing.Short() || buildconst.Invariants {
		return short
	}
	return long
}

func TestMapDifferential(t *testing.T) {
	steps := mapSteps(6000, 1200)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, seg := range []uint64{0, 4} {
			opts := []MapOption{}
			if seg != 0 {
				opts = append(opts, mapWithSegmentBuckets(seg), mapWithBatchLines(2))
			}
			t.Run(fmt.Sprintf("seg=%d", seg), func(t *testing.T) {
				t.Run("u64", func(t *testing.T) {
					x := newMapDiff(t, d, 1, genU64(3000), func(r *rand.Rand) uint64 { return r.Uint64() }, opts...)
					defer x.close()
					x.run(steps)
				})
				t.Run("str-u64", func(t *testing.T) {
					x := newMapDiff(t, d, 2, genStr(1500, 4096), func(r *rand.Rand) uint64 { return r.Uint64() }, opts...)
					defer x.close()
					x.run(steps / 2)
				})
				t.Run("str-str", func(t *testing.T) {
					x := newMapDiff(t, d, 3, genStr(800, 300), genVStr(200), opts...)
					defer x.close()
					x.run(steps / 2)
				})
				t.Run("u32-str", func(t *testing.T) {
					x := newMapDiff(t, d, 4, func(r *rand.Rand) uint32 { return uint32(r.IntN(1000)) }, genVStr(100), opts...)
					defer x.close()
					x.run(steps / 2)
				})
			})
		}
		t.Run("f64", func(t *testing.T) {
			x := newMapDiff(t, d, 5, func(r *rand.Rand) float64 {
				switch r.IntN(40) {
				case 0:
					return math.NaN()
				case 1:
					return math.Copysign(0, -1)
				case 2:
					return 0
				}
				return float64(r.IntN(500)) / 4
			}, func(r *rand.Rand) int8 { return int8(r.IntN(256)) })
			defer x.close()
			x.run(steps / 2)
		})
		t.Run("padded-big", func(t *testing.T) {
			// Records of two lines; keys with padding bytes.
			x := newMapDiff(t, d, 6, func(r *rand.Rand) mapPadded {
				return mapPadded{A: uint8(r.IntN(8)), B: uint32(r.IntN(100)), C: 7}
			}, func(r *rand.Rand) mapBig {
				var b mapBig
				b[0], b[99] = byte(r.IntN(256)), byte(r.IntN(256))
				return b
			}, mapWithSegmentBuckets(8))
			defer x.close()
			x.run(steps / 2)
		})
		t.Run("tiny", func(t *testing.T) {
			// Eight slots a line; zero-size values (a set).
			x := newMapDiff(t, d, 7, func(r *rand.Rand) uint16 { return uint16(r.IntN(2000)) }, func(*rand.Rand) struct{} { return struct{}{} })
			defer x.close()
			x.run(steps / 2)
		})
		t.Run("byte-array-key", func(t *testing.T) {
			x := newMapDiff(t, d, 8, func(r *rand.Rand) [20]byte {
				var k [20]byte
				k[r.IntN(20)] = byte(r.IntN(40))
				return k
			}, func(r *rand.Rand) [3]uint64 { return [3]uint64{r.Uint64(), 1, 2} })
			defer x.close()
			x.run(steps / 2)
		})
	})
}

func TestMapBasic(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[string, int64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if _, ok := m.Get("x"); ok {
			t.Fatal("empty map has x")
		}
		long := strings.Repeat("k", 5000)
		for i, k := range []string{"", "a", "hello", long} {
			if err := m.Put(k, int64(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Put("a", 10); err != nil {
			t.Fatal(err)
		}
		for k, want := range map[string]int64{"": 0, "a": 10, "hello": 2, long: 3} {
			if v, ok := m.Get(k); !ok || v != want {
				t.Fatalf("Get(%q) = %d, %v", mapShort(k), v, ok)
			}
		}
		if _, ok := m.Get(long[:4999]); ok {
			t.Fatal("found a prefix of a long key")
		}
		if old, ok, err := m.Delete("a"); m.Len() != 3 || old != 10 || !ok || err != nil {
			t.Fatalf("Delete(a) = %d, %v, %v; Len %d", old, ok, err, m.Len())
		}
		if old, ok, err := m.Delete("a"); m.Len() != 3 || old != 0 || ok || err != nil {
			t.Fatalf("second Delete(a) = %d, %v, %v", old, ok, err)
		}
		m.Clear()
		if m.Len() != 0 {
			t.Fatal("Clear")
		}
		if _, ok := m.Get("hello"); ok {
			t.Fatal("found after Clear")
		}
	})
}

// TestMapGrowth fills maps well past several growths, with keys that
// arrive in order (the worst case for clustering in a table ordered by
// hash, were the hash weak).
func TestMapGrowth(t *testing.T) {
	n := mapSteps(60000, 5000)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[uint64, uint64](d, mapWithSegmentBuckets(1024))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		for i := uint64(0); i < uint64(n); i++ {
			if err := m.Put(i, i*3); err != nil {
				t.Fatal(err)
			}
		}
		for i := uint64(0); i < uint64(n); i++ {
			if v, ok := m.Get(i); !ok || v != i*3 {
				t.Fatalf("Get(%d) = %d, %v", i, v, ok)
			}
		}
		if err := m.check(); err != nil {
			t.Fatal(err)
		}
		// The load stays within the bounds the host-memory budget needs.
		if load := float64(m.Len()) / float64(m.t.nb*uint64(m.r.p)); load < 0.4 || load > 0.88 {
			t.Fatalf("load %.2f after growth", load)
		}
		// With a uniform hash (4-slot buckets, load 0.77, 19,495
		// buckets) the longest displacement of 400 seeded runs was 22-76
		// buckets, its tail falling about fivefold each 10 buckets; a
		// hash that clusters ordered keys puts it in the thousands.
		if m.t.maxDisp > 192 {
			t.Fatalf("maxDisp %d: the hash clusters", m.t.maxDisp)
		}
	})
}

// TestMapSpill gives the mapped tier too little room, so the slots (and
// string bytes) spill into the private tier, reached only by DMA.
func TestMapSpill(t *testing.T) {
	var lim [3]uint64
	lim[vmem.Mapped] = 256 << 10
	// Every access to the private tier is a DMA round trip (milliseconds
	// on lavapipe): a short run covers the paths.
	steps := mapSteps(800, 300)
	vmemtest.Each(t, vmem.Options{Limits: lim, ChunkSize: 64 << 10}, func(t *testing.T, d *vmem.Device) {
		t.Run("u64", func(t *testing.T) {
			x := newMapDiff(t, d, 11, genU64(20000), func(r *rand.Rand) uint64 { return r.Uint64() }, mapWithSegmentBuckets(256))
			defer x.close()
			x.putMany(12000)
			x.run(steps)
			spilled := false
			for _, sg := range x.m.t.segs {
				spilled = spilled || sg.Kind == access.DMA
			}
			if !spilled {
				t.Fatal("no segment spilled into the private tier")
			}
		})
		t.Run("str", func(t *testing.T) {
			x := newMapDiff(t, d, 12, genStr(2000, 2000), genVStr(300), mapWithSegmentBuckets(64))
			defer x.close()
			x.run(steps)
		})
	})
}

// TestMapOOM makes each allocation of a growth fail in turn: Put reports
// vmem.ErrOutOfMemory and the map is unchanged, then works on.
func TestMapOOM(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, strs := range []bool{false, true} {
			for nth := int64(1); nth <= 6; nth++ {
				t.Run(fmt.Sprintf("str=%v/alloc%d", strs, nth), func(t *testing.T) {
					if strs {
						x := newMapDiff(t, d, 20, genStr(1000, 400), genVStr(100), mapWithSegmentBuckets(4))
						defer x.close()
						mapOOMRun(t, x, nth)
					} else {
						x := newMapDiff(t, d, 21, genU64(1e6), func(r *rand.Rand) uint64 { return r.Uint64() }, mapWithSegmentBuckets(4))
						defer x.close()
						mapOOMRun(t, x, nth)
					}
				})
			}
		}
	})
}

func mapOOMRun[K comparable, V comparable](t *testing.T, x *mapDiff[K, V], nth int64) {
	// Fill to just below a growth.
	for x.m.t.growthLeft > 1 {
		x.put(x.genK(x.r), x.genV(x.r))
	}
	failed := false
	for tries := 0; tries < 20 && !failed; tries++ {
		k, v := x.genK(x.r), x.genV(x.r)
		if _, ok := x.model[k]; ok {
			continue
		}
		before := x.m.t
		kdev(x.m.dev).InjectFaults(kern.Faults{FailAlloc: nth})
		err := x.m.Put(k, v)
		kdev(x.m.dev).InjectFaults(kern.Faults{})
		switch {
		case errors.Is(err, vmem.ErrOutOfMemory):
			failed = true
			if x.m.t != before {
				t.Fatal("a failed growth replaced the table")
			}
		case err != nil:
			t.Fatalf("Put: %v", err)
		default:
			x.model[k] = v
		}
		x.compare()
	}
	if !failed && nth == 2 {
		// The first allocation of a growth (mapped slots) falls back to
		// the private tier; the second (host control bytes) cannot.
		t.Fatal("no Put failed")
	}
	x.run(200)
}

func TestMapDeviceLost(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		for i := uint64(0); m.t.growthLeft > 0; i++ {
			m.Put(i, i)
		}
		kdev(d).InjectFaults(kern.Faults{FailSubmit: 1})
		var perr error
		for i := uint64(1 << 40); perr == nil && i < 1<<40+100; i++ {
			perr = m.Put(i, i)
		}
		if !errors.Is(perr, vmem.ErrDeviceLost) && d.Info().Backend == vmem.BackendVulkan {
			t.Fatalf("Put on a lost device: %v", perr)
		}
	})
}

// TestMapIterateMutate writes in the loop body of All: deletes ahead of
// the iteration, overwrites, and inserts enough to make the table grow
// (several times) in the middle of the iteration.
// Writes in every body, or in one in 37 (entries read from the snapshot
// between writes), with 1 MiB chunks (the whole map in one) or chunks of a
// few buckets (entries near chunk edges, growth between chunks).
func TestMapIterateMutate(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, chunk := range []int{mapIterBytes, 2 << 10} {
			for _, every := range []int{1, 37} {
				for _, strK := range []bool{false, true} {
					t.Run(fmt.Sprintf("chunk=%d/every=%d/str=%v", chunk, every, strK), func(t *testing.T) {
						defer func(old int) { mapIterBytes = old }(mapIterBytes)
						mapIterBytes = chunk
						if strK {
							mapIterMutate(t, d, every, func(i int) string { return fmt.Sprintf("key-%d-%s", i, strings.Repeat("x", i%90)) })
						} else {
							mapIterMutate(t, d, every, func(i int) uint64 { return uint64(i) })
						}
					})
				}
			}
		}
	})
}

func mapIterMutate[K comparable](t *testing.T, d *vmem.Device, every int, key func(int) K) {
	m, err := NewMap[K, int](d, mapWithSegmentBuckets(16))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	n := mapSteps(3000, 400)
	for i := 0; i < n; i++ {
		m.Put(key(i), i)
	}
	produced := map[K]int{}
	deleted := map[K]bool{}
	next := n
	for k, v := range m.All() {
		if deleted[k] {
			t.Fatalf("produced %v after deleting it", k)
		}
		produced[k]++
		if v < n && key(v) != k {
			t.Fatalf("%v produced with value %d", k, v)
		}
		if len(produced)%every != 0 {
			continue
		}
		// Delete a key (maybe not yet reached), overwrite one, add some.
		victim := key(rand.IntN(n))
		if _, done := produced[victim]; !done {
			m.Delete(victim)
			deleted[victim] = true
		}
		// New keys may be produced too: stop adding at some point, or the
		// iteration never ends.
		for j := 0; j < 3 && next < 4*n; j++ {
			m.Put(key(next), next)
			next++
		}
	}
	for i := 0; i < n; i++ {
		k := key(i)
		c := produced[k]
		switch {
		case deleted[k] && c != 0:
			t.Fatalf("%v: deleted before reached, produced %d times", k, c)
		case !deleted[k] && c != 1:
			t.Fatalf("%v: produced %d times", k, c)
		}
	}
	for k, c := range produced {
		if c != 1 {
			t.Fatalf("%v produced %d times", k, c)
		}
	}
	if err := m.check(); err != nil {
		t.Fatal(err)
	}
}

func TestMapIterateStop(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, _ := NewMap[int, int](d)
		defer m.Close()
		for i := 0; i < 1000; i++ {
			m.Put(i, i)
		}
		c := 0
		for range m.All() {
			if c++; c == 10 {
				break
			}
		}
		if c != 10 {
			t.Fatal(c)
		}
	})
}

// TestMapConcurrentReaders runs readers in parallel (Get, GetMany, All)
// between writes, the contract the race detector enforces: the first
// readers after a write race to flush its pending stores.
func TestMapConcurrentReaders(t *testing.T) {
	rounds := mapSteps(20, 5)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		var mu sync.RWMutex
		for round := 0; round < rounds; round++ {
			mu.Lock()
			base := uint64(round * 1000)
			for i := base; i < base+1000; i++ {
				m.Put(i, i+1)
			}
			mu.Unlock()
			var wg sync.WaitGroup
			for g := 0; g < 8; g++ {
				wg.Go(func() {
					mu.RLock()
					defer mu.RUnlock()
					switch g % 3 {
					case 0:
						for i := uint64(0); i < base+1000; i += 7 {
							if v, ok := m.Get(i); !ok || v != i+1 {
								t.Errorf("Get(%d) = %d, %v", i, v, ok)
								return
							}
						}
					case 1:
						ks := make([]uint64, 5000)
						for i := range ks {
							ks[i] = uint64(i * 3)
						}
						vs := make([]uint64, len(ks))
						fs := make([]bool, len(ks))
						m.getMany(ks, vs, fs)
						for i, k := range ks {
							if fs[i] != (k < base+1000) || (fs[i] && vs[i] != k+1) {
								t.Errorf("GetMany(%d) = %d, %v", k, vs[i], fs[i])
								return
							}
						}
					default:
						c := 0
						for range m.All() {
							c++
						}
						if c != int(base+1000) {
							t.Errorf("All gave %d", c)
						}
					}
				})
			}
			wg.Wait()
		}
	})
}

func TestMapClosed(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, _ := NewMap[string, string](d)
		m.Put("a", strings.Repeat("b", 100))
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if err := m.Put("a", "b"); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("Put after Close: %v", err)
		}
		if err := m.putMany([]string{"a"}, []string{"b"}); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("PutMany after Close: %v", err)
		}
		if m.Len() != 0 {
			t.Fatal("Len after Close")
		}
		if err := m.Clear(); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("Clear after Close: %v", err)
		}
		if _, _, err := m.Delete("a"); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("Delete after Close: %v", err)
		}
		for name, f := range map[string]func(){
			"Get":     func() { m.Get("a") },
			"GetMany": func() { m.getMany([]string{"a"}, make([]string, 1), nil) },
			"All": func() {
				for range m.All() {
				}
			},
		} {
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "after Close") {
						t.Errorf("%s after Close: panic %v", name, r)
					}
				}()
				f()
			}()
		}
	})
}
