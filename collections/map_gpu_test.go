package collections

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// mapGPUGet runs GetBatch over ks and checks every answer against the
// model.
func mapGPUGet[K comparable, V comparable](x *mapDiff[K, V], ks []K) {
	x.t.Helper()
	vs := make([]V, len(ks)+1)
	found := make([]bool, len(ks)+1)
	var junk V
	for i := range vs {
		vs[i] = x.genV(x.r) // stale contents: GetBatch must overwrite misses
		found[i] = true
	}
	junk = vs[len(ks)]
	if err := x.m.GetBatch(ks, vs, found); err != nil {
		x.t.Fatalf("GetBatch(%d keys): %v", len(ks), err)
	}
	for i, k := range ks {
		w, ok := x.model[k]
		if ok != found[i] || vs[i] != w {
			x.t.Fatalf("GetBatch[%d of %d](%v) = %v, %v; want %v, %v", i, len(ks), mapShort(k), mapShort(vs[i]), found[i], mapShort(w), ok)
		}
	}
	if vs[len(ks)] != junk || !found[len(ks)] {
		x.t.Fatalf("GetBatch wrote past its keys")
	}
	// found may be nil.
	if err := x.m.GetBatch(ks, vs, nil); err != nil {
		x.t.Fatal(err)
	}
}

// mapGPUPut runs PutBatch and applies it to the model.
func mapGPUPut[K comparable, V comparable](x *mapDiff[K, V], ks []K, vs []V) {
	x.t.Helper()
	if err := x.m.PutBatch(ks, vs); err != nil {
		x.t.Fatalf("PutBatch(%d keys): %v", len(ks), err)
	}
	for i := range ks {
		x.model[ks[i]] = vs[i]
	}
	if x.m.Len() != len(x.model) {
		x.t.Fatalf("after PutBatch(%d): Len = %d, want %d", len(ks), x.m.Len(), len(x.model))
	}
	mapGPUCheckMirror(x.t, x.m)
}

// mapGPUCheckMirror checks that a mirror said to be in step holds the
// host's control bytes.
func mapGPUCheckMirror[K comparable, V any](t testing.TB, m *Map[K, V]) {
	t.Helper()
	g := &m.gpu
	if g.t == nil || !g.inStep || g.ver != m.version {
		return
	}
	if g.t != m.t {
		t.Fatal("mirror of a table that is not the map's")
	}
	for i := range m.t.segs {
		sg := &m.t.segs[i]
		n := sg.n * uint64(m.r.p)
		buf := make([]byte, n)
		if err := kdev(m.dev).Read(buf, g.mirror[i], 0); err != nil {
			t.Fatal(err)
		}
		host := sg.fpBlk.Bytes()[:n]
		for j := range buf {
			if buf[j] != host[j] {
				t.Fatalf("segment %d byte %d: mirror %#x, host %#x", i, j, buf[j], host[j])
			}
		}
	}
}

// mapGPUKeys draws n keys with duplicates (one in eight repeats an earlier
// key) and keys known to the model (hits).
func mapGPUKeys[K comparable, V comparable](x *mapDiff[K, V], n int) []K {
	ks := make([]K, n)
	var known []K
	for k := range x.model {
		known = append(known, k)
		if len(known) > 256 {
			break
		}
	}
	for i := range ks {
		switch r := x.r.IntN(8); {
		case i > 0 && r == 0:
			ks[i] = ks[x.r.IntN(i)]
		case len(known) > 0 && r < 4:
			ks[i] = known[x.r.IntN(len(known))]
		default:
			ks[i] = x.genK(x.r)
		}
	}
	return ks
}

// mapGPURun interleaves batches with single writes.
func mapGPURun[K comparable, V comparable](x *mapDiff[K, V], steps int, sizes []int) {
	x.t.Helper()
	r := x.r
	for step := 0; step < steps; step++ {
		n := sizes[r.IntN(len(sizes))]
		switch op := r.IntN(100); {
		case op < 30:
			ks := mapGPUKeys(x, n)
			vs := make([]V, n)
			for i := range vs {
				vs[i] = x.genV(r)
			}
			mapGPUPut(x, ks, vs)
		case op < 60:
			mapGPUGet(x, mapGPUKeys(x, n))
		case op < 75:
			for range r.IntN(20) {
				x.put(x.genK(r), x.genV(r))
			}
		case op < 90:
			for range r.IntN(20) {
				x.del(x.genK(r))
			}
			for k := range x.model {
				x.del(k)
				break
			}
		case op < 92:
			x.m.Clear()
			clear(x.model)
		default:
			x.compare()
		}
	}
	x.compare()
}

// mapGPUSizes: empty, around a quad of keys, around workgroups of 256
// invocations (1024 keys for map_get), and over a chunk.
var mapGPUSizes = []int{0, 1, 3, 4, 5, 255, 256, 257, 1023, 1024, 1025, 2047}

func mapGPUSmallChunks(t *testing.T) {
	old, oldPart := mapGPUChunk, mapGetPartMin
	mapGPUChunk, mapGetPartMin = 700, 300 // several rounds, and parts on goroutines
	t.Cleanup(func() { mapGPUChunk, mapGetPartMin = old, oldPart })
}

type mapGPUKey12 struct{ A, B, C uint32 }

type mapGPUVal12 struct{ X, Y, Z uint32 }

func TestMapBatchDifferential(t *testing.T) {
	steps := mapSteps(120, 40)
	// Every GetBatch on the kernels, whatever its size (small batches
	// cover the kernel's boundaries; the path choice is tested apart).
	oldMin := mapBatchGPUMin
	mapBatchGPUMin = 1
	defer func() { mapBatchGPUMin = oldMin }()
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		before := kdev(d).KernelDispatches()
		t.Run("u64", func(t *testing.T) {
			x := newMapDiff(t, d, 1, genU64(3000), genU64(1<<62))
			defer x.close()
			mapGPURun(x, steps, mapGPUSizes)
		})
		t.Run("u32-chunks-segments", func(t *testing.T) {
			mapGPUSmallChunks(t)
			x := newMapDiff(t, d, 2, func(r *rand.Rand) uint32 { return uint32(r.IntN(5000)) },
				func(r *rand.Rand) uint32 { return r.Uint32() }, mapWithSegmentBuckets(64), mapWithBatchLines(64))
			defer x.close()
			mapGPURun(x, steps, mapGPUSizes)
		})
		t.Run("k16", func(t *testing.T) {
			x := newMapDiff(t, d, 3, func(r *rand.Rand) [2]uint64 { return [2]uint64{uint64(r.IntN(40)), uint64(r.IntN(50))} },
				func(r *rand.Rand) uint64 { return r.Uint64() })
			defer x.close()
			mapGPURun(x, steps, mapGPUSizes)
		})
		t.Run("k12-cpu-hash", func(t *testing.T) {
			x := newMapDiff(t, d, 4, func(r *rand.Rand) mapGPUKey12 { return mapGPUKey12{uint32(r.IntN(30)), uint32(r.IntN(30)), 7} },
				func(r *rand.Rand) mapGPUVal12 { return mapGPUVal12{r.Uint32(), 1, r.Uint32()} })
			defer x.close()
			mapGPURun(x, steps, mapGPUSizes)
		})
		t.Run("hasher", func(t *testing.T) {
			x := newMapDiff(t, d, 5, genU64(2000), func(r *rand.Rand) uint32 { return r.Uint32() },
				WithHasher(func(k uint64) uint64 { return k % 97 }))
			defer x.close()
			mapGPURun(x, steps, mapGPUSizes)
		})
		t.Run("string-keys", func(t *testing.T) {
			x := newMapDiff(t, d, 6, genStr(500, 20), genU64(100))
			defer x.close()
			mapGPURun(x, steps/2, mapGPUSizes)
			mapGPUUsed(t, x.m)
		})
		t.Run("string-keys-boundary", func(t *testing.T) {
			// Keys about the inline bound (100 bytes for these records)
			// and past it (answered by the CPU), differing in their last
			// byte; 12-byte values.
			mapGPUSmallChunks(t)
			x := newMapDiff(t, d, 7, genStrEdge(100), func(r *rand.Rand) mapGPUVal12 { return mapGPUVal12{r.Uint32(), 2, r.Uint32()} })
			defer x.close()
			if mapStrInline(x.m.r.keyW) != 100 {
				t.Fatalf("inline bound %d: the generator's lengths are chosen for 100", mapStrInline(x.m.r.keyW))
			}
			mapGPURun(x, steps/2, mapGPUSizes)
			mapGPUUsed(t, x.m)
		})
		t.Run("string-both-cpu", func(t *testing.T) {
			x := newMapDiff(t, d, 8, genStr(300, 30), genStr(50, 40))
			defer x.close()
			mapGPURun(x, steps/4, mapGPUSizes)
		})
		if kdev(d).KernelsAvailable() && kdev(d).KernelDispatches() == before {
			t.Error("no kernel ran on a device that runs kernels")
		}
	})
}

// TestMapBatchGrowth fills a small map by PutBatch alone, so that batches
// grow it, with duplicates within each batch.
func TestMapBatchGrowth(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		x := newMapDiff(t, d, 9, genU64(1<<40), genU64(1<<40), WithCapacity(10))
		defer x.close()
		for _, n := range []int{5, 100, 1000, 3000, 2047, 4096} {
			ks := mapGPUKeys(x, n)
			vs := make([]uint64, n)
			for i := range vs {
				vs[i] = x.r.Uint64()
			}
			mapGPUPut(x, ks, vs)
			x.compare()
			mapGPUGet(x, ks)
		}
		// Last write wins: the same key many times in one batch.
		ks := make([]uint64, 1000)
		vs := make([]uint64, 1000)
		for i := range ks {
			ks[i], vs[i] = uint64(i%7), uint64(i)
		}
		mapGPUPut(x, ks, vs)
		for k := range uint64(7) {
			want := (999-k)/7*7 + k // the last index i with i%7 == k
			if v, ok := x.m.Get(k); !ok || v != want {
				t.Fatalf("Get(%d) = %d, %v after PutBatch; want %d", k, v, ok, want)
			}
		}
		x.compare()
	})
}

func TestMapBatchErrors(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.GetBatch(make([]uint64, 3), make([]uint64, 2), nil); !errors.Is(err, vmem.ErrRange) {
			t.Fatalf("GetBatch with short vals: %v", err)
		}
		if err := m.GetBatch(make([]uint64, 3), make([]uint64, 3), make([]bool, 1)); !errors.Is(err, vmem.ErrRange) {
			t.Fatalf("GetBatch with short found: %v", err)
		}
		if err := m.PutBatch(make([]uint64, 3), make([]uint64, 2)); !errors.Is(err, vmem.ErrRange) {
			t.Fatalf("PutBatch with short vals: %v", err)
		}
		if err := m.GetBatch(nil, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := m.PutBatch(nil, nil); err != nil || m.Len() != 0 {
			t.Fatal(err, m.Len())
		}
		m.Close()
		if err := m.GetBatch(nil, nil, nil); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("GetBatch after Close: %v", err)
		}
		if err := m.PutBatch(nil, nil); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("PutBatch after Close: %v", err)
		}
	})
}

// TestMapBatchOOM: an allocation failing at any point of a PutBatch that
// must grow the map (or of the first GetBatch, which copies the control
// bytes to the device) gives vmem.ErrOutOfMemory and leaves the map unchanged.
func TestMapBatchOOM(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for nth := int64(1); nth <= 6; nth++ {
			t.Run(fmt.Sprint(nth), func(t *testing.T) {
				x := newMapDiff(t, d, uint64(nth), genU64(1<<40), genU64(1<<40), WithCapacity(100))
				defer x.close()
				for i := range 80 {
					x.put(uint64(i), uint64(i))
				}
				ks := make([]uint64, 500)
				vs := make([]uint64, 500)
				for i := range ks {
					ks[i], vs[i] = uint64(i*3), uint64(i)
				}
				kdev(d).InjectFaults(kern.Faults{FailAlloc: nth})
				err := x.m.PutBatch(ks, vs)
				kdev(d).InjectFaults(kern.Faults{})
				// A failed allocation may have been retried in another tier.
				switch {
				case err == nil:
					for i := range ks {
						x.model[ks[i]] = vs[i]
					}
				case !errors.Is(err, vmem.ErrOutOfMemory):
					t.Fatalf("PutBatch: %v", err)
				}
				x.compare()
				mapGPUGet(x, ks)
				// A fresh mirror: the first GetBatch after single writes.
				x.put(1, 2)
				x.model[1] = 2
				kdev(d).InjectFaults(kern.Faults{FailAlloc: 1})
				x.m.gpu.mu.Lock()
				x.m.gpuFreeMirror()
				x.m.gpu.mu.Unlock()
				err = x.m.GetBatch(ks, vs, nil)
				kdev(d).InjectFaults(kern.Faults{})
				if err != nil && !errors.Is(err, vmem.ErrOutOfMemory) {
					t.Fatalf("GetBatch with a failing allocation: %v", err)
				}
				x.compare()
			})
		}
	})
}

// TestMapBatchDeviceLost: a failed submission is an error, never a crash.
func TestMapBatchDeviceLost(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		if !kdev(d).KernelsAvailable() {
			t.Skip("no kernels")
		}
		m, err := NewMap[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		// Enough keys for the GPU path (fewer take line loads, no submission).
		ks := make([]uint64, max(mapBatchGPUMin, 3))
		for i := range ks {
			ks[i] = uint64(i)
		}
		if err := m.PutBatch(ks, ks); err != nil {
			t.Fatal(err)
		}
		kdev(d).InjectFaults(kern.Faults{FailSubmit: 1})
		if err := m.GetBatch(ks, make([]uint64, len(ks)), nil); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("GetBatch on a lost device: %v", err)
		}
		if err := m.PutBatch(ks, ks); !errors.Is(err, vmem.ErrDeviceLost) {
			t.Fatalf("PutBatch on a lost device: %v", err)
		}
	})
}

// genStrEdge draws keys of lengths about a string record's inline bound b:
// 0, 1, 7, 8, b-4 to b+4, 200 bytes, mostly the same bytes, the last from
// a small alphabet so that keys differ only there.
func genStrEdge(b int) func(*rand.Rand) string {
	lens := []int{0, 1, 7, 8, 200}
	for n := b - 4; n <= b+4; n++ {
		lens = append(lens, n)
	}
	return func(r *rand.Rand) string {
		n := lens[r.IntN(len(lens))]
		if n == 0 {
			return ""
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + i%7)
		}
		b[r.IntN(n)] = byte('A' + r.IntN(3))
		b[n-1] = byte('0' + r.IntN(10))
		return string(b)
	}
}

// mapGPUUsed fails t if m, on a device with kernels, answered no batch
// lookup on the GPU.
func mapGPUUsed[K comparable, V any](t *testing.T, m *Map[K, V]) {
	t.Helper()
	if kdev(m.dev).KernelsAvailable() && m.Stats().Batch.GPUCalls == 0 {
		t.Error("no batch lookup ran on the GPU")
	}
}

// TestMapStrGetBatchRanges: a string-key GetBatch large enough to be cut
// among several goroutines at odd places, so that each goroutine's images
// start anywhere in a line (made one by one up to the first that starts a
// line, then streamed 16 at a time, then the rest one by one), with keys
// of every length about the inline bound, checked against a Go map.
func TestMapStrGetBatchRanges(t *testing.T) {
	oldMin := mapBatchGPUMin
	mapBatchGPUMin = 1
	defer func() { mapBatchGPUMin = oldMin }()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(7))
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[string, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		r := rand.New(rand.NewPCG(11, 12))
		model := map[string]uint64{}
		key := func() string {
			b := make([]byte, 1+r.IntN(130)) // past the inline bound too
			for i := range b {
				b[i] = 'a' + byte(r.IntN(4))
			}
			return string(b)
		}
		var ks []string
		var vs []uint64
		for len(ks) < 20000 {
			k := key()
			if _, ok := model[k]; !ok {
				model[k] = r.Uint64()
				ks, vs = append(ks, k), append(vs, model[k])
			}
		}
		if err := m.PutBatch(ks, vs); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{4096*3 + 5, 28673} {
			q := make([]string, n)
			for i := range q {
				if r.IntN(3) == 0 {
					q[i] = key() // mostly absent
				} else {
					q[i] = ks[r.IntN(len(ks))]
				}
			}
			got, found := make([]uint64, n), make([]bool, n)
			for i := range got {
				got[i], found[i] = 7, true // stale: misses must be overwritten
			}
			if err := m.GetBatch(q, got, found); err != nil {
				t.Fatal(err)
			}
			for i, k := range q {
				want, ok := model[k]
				if found[i] != ok || got[i] != want {
					t.Fatalf("batch of %d, key %d (%d bytes): got %d, %v; want %d, %v", n, i, len(k), got[i], found[i], want, ok)
				}
			}
		}
		mapGPUUsed(t, m)
	})
}
