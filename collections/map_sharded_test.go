package collections

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// shMapDiff runs random operations on a Map on a pool and on a Go map.
func shMapDiff[K comparable, V comparable](t *testing.T, p *vmem.Pool, steps int, genK func(*rand.Rand) K, genV func(*rand.Rand) V, opts ...MapOption) {
	s, err := NewMap[K, V](p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	model := map[K]V{}
	r := rand.New(rand.NewPCG(7, uint64(steps)))
	sr := &shMapRun[K, V]{t: t, s: s, model: model, r: r, genK: genK, genV: genV}
	for step := range steps {
		switch op := r.IntN(10); op {
		case 0, 1: // Put
			k, v := genK(r), genV(r)
			if err := s.Put(k, v); err != nil {
				t.Fatal(err)
			}
			model[k] = v
		case 2: // Get
			ks := sr.keysOf(1, true)
			v, ok := s.Get(ks[0])
			sr.checkGet(step, "Get", ks, []V{v}, []bool{ok}, -1)
		case 3: // Delete
			k := sr.keysOf(1, true)[0]
			_, want := model[k]
			if old, got, err := s.Delete(k); got != want || err != nil || old != model[k] {
				t.Fatalf("step %d: Delete(%v) = %v, %v, %v, want %v, %v", step, k, old, got, err, model[k], want)
			}
			delete(model, k)
		case 4, 5: // PutMany / PutBatch, with repeated keys
			sr.putMany(op)
		case 6, 7: // GetMany / GetBatch
			sr.getMany(step, op)
		case 8: // Clear, rarely
			if r.IntN(20) == 0 {
				s.Clear()
				clear(model)
			}
		case 9:
			if s.Len() != len(model) {
				t.Fatalf("step %d: Len %d, model %d", step, s.Len(), len(model))
			}
		}
		if step%100 == 99 {
			sr.full(step)
		}
	}
	sr.full(steps)
	if len(model) > 100*len(s.sh.shards) {
		for d, l := range s.sh.shardLens() {
			if l == 0 {
				t.Errorf("shard %d is empty: %v", d, s.sh.shardLens())
			}
		}
	}
}

// shMapRun is the state of shMapDiff: the map, its model, the
// random source and the generators of keys and values.
type shMapRun[K comparable, V comparable] struct {
	t     *testing.T
	s     *Map[K, V]
	model map[K]V
	r     *rand.Rand
	genK  func(*rand.Rand) K
	genV  func(*rand.Rand) V
}

// keysOf returns n keys: new ones, or (present) about half of them from
// the model.
func (d *shMapRun[K, V]) keysOf(n int, present bool) []K {
	r := d.r
	ks := make([]K, n)
	var have []K
	if present {
		for k := range d.model {
			have = append(have, k)
			if len(have) > 500 {
				break
			}
		}
	}
	for i := range ks {
		if len(have) > 0 && r.IntN(2) == 0 {
			ks[i] = have[r.IntN(len(have))]
		} else {
			ks[i] = d.genK(r)
		}
	}
	return ks
}

// checkGet checks looked-up values, found flags (if any) and the count
// found (if n >= 0) against the model.
func (d *shMapRun[K, V]) checkGet(step int, what string, ks []K, vs []V, found []bool, n int) {
	t := d.t
	t.Helper()
	cnt := 0
	for i, k := range ks {
		want, ok := d.model[k]
		if found != nil && found[i] != ok {
			t.Fatalf("step %d %s: key %v found %v, want %v", step, what, k, found[i], ok)
		}
		if vs[i] != want {
			t.Fatalf("step %d %s: key %v = %v, want %v", step, what, k, vs[i], want)
		}
		if ok {
			cnt++
		}
	}
	if n >= 0 && n != cnt {
		t.Fatalf("step %d %s: %d found, want %d", step, what, n, cnt)
	}
}

// full checks Len, the shards' lengths, All and Err against the model.
func (d *shMapRun[K, V]) full(step int) {
	t, s, model := d.t, d.s, d.model
	t.Helper()
	if s.Len() != len(model) {
		t.Fatalf("step %d: Len %d, model %d", step, s.Len(), len(model))
	}
	sum := 0
	for _, l := range s.sh.shardLens() {
		sum += l
	}
	if sum != len(model) {
		t.Fatalf("step %d: shard lengths %v", step, s.sh.shardLens())
	}
	seen := map[K]bool{}
	for k, v := range s.All() {
		if seen[k] {
			t.Fatalf("step %d: All gave %v twice", step, k)
		}
		seen[k] = true
		if want, ok := model[k]; !ok || want != v {
			t.Fatalf("step %d: All gave %v=%v, model %v %v", step, k, v, want, ok)
		}
	}
	if len(seen) != len(model) {
		t.Fatalf("step %d: All gave %d entries, want %d", step, len(seen), len(model))
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

// putMany stores a random batch, with repeated keys, with PutMany (op 4)
// or PutBatch (op 5).
func (d *shMapRun[K, V]) putMany(op int) {
	ks := d.keysOf(d.r.IntN(400), true)
	vs := make([]V, len(ks))
	for i := range vs {
		vs[i] = d.genV(d.r)
	}
	var err error
	if op == 4 {
		err = d.s.putMany(ks, vs)
	} else {
		err = d.s.PutBatch(ks, vs)
	}
	if err != nil {
		d.t.Fatal(err)
	}
	for i, k := range ks {
		d.model[k] = vs[i]
	}
}

// getMany looks up a random batch with GetMany (op 6) or GetBatch (op 7,
// with and without found flags) and checks it against the model.
func (d *shMapRun[K, V]) getMany(step, op int) {
	t, s := d.t, d.s
	ks := d.keysOf(d.r.IntN(400), true)
	vs := make([]V, len(ks))
	found := make([]bool, len(ks))
	if op == 6 {
		n := s.getMany(ks, vs, found)
		d.checkGet(step, "GetMany", ks, vs, found, n)
	} else {
		if err := s.GetBatch(ks, vs, found); err != nil {
			t.Fatal(err)
		}
		d.checkGet(step, "GetBatch", ks, vs, found, -1)
		clear(vs)
		if err := s.GetBatch(ks, vs, nil); err != nil {
			t.Fatal(err)
		}
		d.checkGet(step, "GetBatch(nil)", ks, vs, nil, -1)
	}
}

func shSteps(p *vmem.Pool) int {
	n := 600
	if testing.Short() {
		n = 250
	}
	if p.Devices()[0].Info().Backend == vmem.BackendVulkan {
		n /= 2
	}
	if buildconst.Race {
		n /= 3
	}
	if buildconst.Invariants {
		n /= 10 // every write then walks the whole structure
	}
	return n
}

func TestShardedMapModel(t *testing.T) {
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		t.Run("uint64", func(t *testing.T) {
			shMapDiff(t, p, shSteps(p), func(r *rand.Rand) uint64 { return r.Uint64N(5000) }, func(r *rand.Rand) uint64 { return r.Uint64() })
		})
		t.Run("int32/hasher", func(t *testing.T) {
			shMapDiff(t, p, shSteps(p)/2, func(r *rand.Rand) int32 { return int32(r.IntN(3000)) - 1000 }, func(r *rand.Rand) [3]uint32 { return [3]uint32{r.Uint32(), 1, 2} },
				WithHasher(func(k int32) uint64 { return uint64(k) * 31 }), WithCapacity(1000))
		})
		t.Run("string", func(t *testing.T) {
			shMapDiff(t, p, shSteps(p)/2, func(r *rand.Rand) string { return fmt.Sprintf("key-%d", r.IntN(2000)) }, func(r *rand.Rand) string { return fmt.Sprint(r.Uint32()) })
		})
	})
}

// TestShardedMapFaults makes one shard's device fail its allocations: a
// Put or batch that needs room there fails with vmem.ErrOutOfMemory and that
// shard is unchanged; the map stays usable.
func TestShardedMapFaults(t *testing.T) {
	// On Vulkan a table that does not fit the mapped tier retries in the
	// private one; a tiny private limit makes the injected failure final.
	var o vmem.Options
	o.Limits[vmem.Private] = 64
	shEachPool(t, o, func(t *testing.T, p *vmem.Pool) {
		// Puts store at once: a recorded Put's batch would take the fault
		// in its own allocations and store the Puts one by one instead
		// (TestMapPutBehindFaults).
		s, err := NewMap[uint64, uint64](p, mapWithDirectPuts())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		model := map[uint64]uint64{}
		for i := range uint64(300) {
			if err := s.Put(i, i); err != nil {
				t.Fatal(err)
			}
			model[i] = i
		}
		last := len(s.sh.shards) - 1
		// A single Put that must grow the last shard's table fails and
		// changes nothing.
		kdev(p.Devices()[last]).InjectFaults(kern.Faults{FailAlloc: 1})
		// (In invariants builds the walk after a write allocates too and
		// may take the fault instead, so the loop is bounded.)
		failed := false
		for k := uint64(1 << 40); k < 1<<40+20_000 && !failed; k++ {
			if s.sh.shardOf(&k) != last {
				continue
			}
			before := s.sh.shardLens()
			err := s.Put(k, 1)
			if err == nil {
				model[k] = 1
				continue
			}
			if !errors.Is(err, vmem.ErrOutOfMemory) {
				t.Fatalf("Put with a failing allocation: %v, want vmem.ErrOutOfMemory", err)
			}
			failed = true
			if _, ok := s.Get(k); ok || !slices.Equal(s.sh.shardLens(), before) {
				t.Fatalf("the failed Put changed the map: %v, was %v", s.sh.shardLens(), before)
			}
		}
		if !failed && !buildconst.Invariants {
			t.Fatal("no Put met the injected fault")
		}
		for k, v := range model {
			if got, ok := s.Get(k); !ok || got != v {
				t.Fatalf("after the failed Put: key %d = %d %v, want %d", k, got, ok, v)
			}
		}
		// A batch that meets the fault fails; every key holds its old or
		// its new value. (On Vulkan the first allocation may be the GPU
		// copy of the control bytes, which falls back to another tier, so
		// the batch may also succeed.)
		kdev(p.Devices()[last]).InjectFaults(kern.Faults{FailAlloc: 1})
		nk := 20000
		if buildconst.Invariants {
			nk = 4000 // every store then walks the table
		}
		keys := make([]uint64, nk)
		vals := make([]uint64, len(keys))
		for i := range keys {
			keys[i] = uint64(i)
			vals[i] = uint64(i) + 1_000_000
		}
		err = s.PutBatch(keys, vals)
		if err != nil && !errors.Is(err, vmem.ErrOutOfMemory) || err == nil && p.Devices()[0].Info().Backend == vmem.BackendHost {
			t.Fatalf("PutBatch with a failing device: %v, want vmem.ErrOutOfMemory", err)
		}
		got := make([]uint64, len(keys))
		found := make([]bool, len(keys))
		s.getMany(keys, got, found)
		for i, k := range keys {
			old, had := model[k]
			if !(found[i] && got[i] == vals[i]) && !(found[i] == had && got[i] == old) {
				t.Fatalf("key %d = %d %v: neither old (%d %v) nor new", k, got[i], found[i], old, had)
			}
		}
		// The fault fired once: the map works again.
		if err := s.PutBatch(keys, vals); err != nil {
			t.Fatalf("PutBatch after the fault: %v", err)
		}
		for _, k := range keys {
			model[k] = k + 1_000_000
		}
		if s.Len() != len(model) {
			t.Fatalf("Len %d, want %d", s.Len(), len(model))
		}
	})
}

func TestShardedMapClose(t *testing.T) {
	p := shOpenPool(t, shPoolKinds()[0], vmem.Options{})
	if _, err := NewMap[*int, int](p); !errors.Is(err, vmem.ErrPointerType) {
		t.Errorf("NewMap[*int]: %v", err)
	}
	if _, err := NewMap[int, int](p, WithHasher(func(string) uint64 { return 0 })); err == nil {
		t.Error("NewMap on a pool took a hasher of the wrong key type")
	}
	s, err := NewMap[int, int](p, WithCapacity(100))
	if err != nil {
		t.Fatal(err)
	}
	s.Put(1, 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 0 {
		t.Error("Len after Close")
	}
	if err := s.Put(1, 1); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("Put after Close: %v", err)
	}
	if err := s.GetBatch([]int{1}, make([]int, 1), nil); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("GetBatch after Close: %v", err)
	}
	if _, panicked := vmemtest.Panics(func() { s.Get(1) }); !panicked {
		t.Error("Get after Close did not panic")
	}
	if err := s.GetBatch([]int{1, 2}, make([]int, 1), nil); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("GetBatch with short vals after Close: %v", err)
	}
}

// TestMapNilMemory: NewMap and LoadMap on a nil Memory, a nil *Device or
// a nil *Pool fail with ErrNoDevice instead of panicking.
func TestMapNilMemory(t *testing.T) {
	for _, mem := range []vmem.Memory{nil, (*vmem.Device)(nil), (*vmem.Pool)(nil)} {
		if _, err := NewMap[int, int](mem); !errors.Is(err, vmem.ErrNoDevice) {
			t.Errorf("NewMap(%#v): %v, want ErrNoDevice", mem, err)
		}
		if _, err := LoadMap[int, int](mem, strings.NewReader("")); !errors.Is(err, vmem.ErrNoDevice) {
			t.Errorf("LoadMap(%#v): %v, want ErrNoDevice", mem, err)
		}
	}
}

// TestShardedMapConcurrentReads runs readers at once (for -race).
func TestShardedMapConcurrentReads(t *testing.T) {
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		n := 5000
		if buildconst.Invariants {
			n = 1000 // every store then walks the table
		}
		s, err := NewMap[uint64, uint64](p, WithCapacity(n))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		keys := make([]uint64, n)
		for i := range keys {
			keys[i] = uint64(i) * 977
		}
		if err := s.putMany(keys, keys); err != nil {
			t.Fatal(err)
		}
		if err := s.GetBatch(keys, make([]uint64, len(keys)), nil); err != nil {
			t.Fatal(err) // brings the GPU copies of the control bytes in step first
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 4 {
			wg.Go(func() {
				vs := make([]uint64, len(keys))
				for range 2 {
					if g%2 == 0 {
						s.getMany(keys, vs, nil)
					} else if err := s.GetBatch(keys, vs, nil); err != nil {
						errs <- err
						return
					}
					if !slices.Equal(vs, keys) {
						errs <- fmt.Errorf("reader %d: wrong values", g)
						return
					}
					for _, k := range keys[:50] {
						if v, ok := s.Get(k); !ok || v != k {
							errs <- fmt.Errorf("reader %d: Get(%d) = %d %v", g, k, v, ok)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// TestShardedMapGetBatchRounds: a batch larger than one round goes in
// several, each split over the shards straight into their buffers; the
// answers come back in the batch's order.
func TestShardedMapGetBatchRounds(t *testing.T) {
	oldChunk, oldMin, oldMax := mapGPUChunk, shPieceMin, shMaxPieces
	// Rounds of 700 keys cut into 7 uneven pieces.
	mapGPUChunk, shPieceMin, shMaxPieces = 700, 90, 7
	t.Cleanup(func() { mapGPUChunk, shPieceMin, shMaxPieces = oldChunk, oldMin, oldMax })
	shEachQueued(t, func(t *testing.T) {
		shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
			r := rand.New(rand.NewPCG(8, 9))
			// 8-byte keys and values take route's vector loops; the others
			// the loops over shardOf, and [3]uint32 keys are hashed by the CPU.
			t.Run("u64-u64", func(t *testing.T) {
				shGetBatchRounds(t, p, r, func(k uint64) uint64 { return k }, func(k uint64) uint64 { return k*3 + 1 })
			})
			t.Run("u64-3u32", func(t *testing.T) {
				shGetBatchRounds(t, p, r, func(k uint64) uint64 { return k }, func(k uint64) [3]uint32 { return [3]uint32{uint32(k), 7, uint32(k >> 3)} })
			})
			t.Run("3u32-u64", func(t *testing.T) {
				shGetBatchRounds(t, p, r, func(k uint64) [3]uint32 { return [3]uint32{uint32(k), 5, 0} }, func(k uint64) uint64 { return k ^ 0xff })
			})
		})
	})
}

// shGetBatchRounds fills a Map on a pool with 3000 keys below 6000 and looks
// up 40003 keys below 7000 with GetBatch, with and without found flags.
func shGetBatchRounds[K, V comparable](t *testing.T, p *vmem.Pool, r *rand.Rand, key func(uint64) K, val func(uint64) V) {
	s, err := NewMap[K, V](p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	model := map[K]V{}
	for range 3000 {
		k := r.Uint64N(6000)
		if err := s.Put(key(k), val(k)); err != nil {
			t.Fatal(err)
		}
		model[key(k)] = val(k)
	}
	keys := make([]K, 40003) // 58 rounds, pipelined over two sets of buffers
	for i := range keys {
		keys[i] = key(r.Uint64N(7000))
	}
	vals := make([]V, len(keys))
	found := make([]bool, len(keys))
	for _, f := range [][]bool{found, nil} {
		clear(vals)
		clear(found)
		if err := s.GetBatch(keys, vals, f); err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			want, ok := model[k]
			if vals[i] != want || (f != nil && f[i] != ok) {
				t.Fatalf("key %d (%v): got %v %v, want %v %v", i, k, vals[i], f != nil && f[i], want, ok)
			}
		}
	}
}

// TestShardedMapShardFill: the inline shard loop of 8-byte keys routes
// every key where shardOf does.
func TestShardedMapShardFill(t *testing.T) {
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		s, err := NewMap[int64, uint32](p)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		r := rand.New(rand.NewPCG(4, 4))
		keys := make([]int64, 70000)
		for i := range keys {
			keys[i] = int64(r.Uint64())
		}
		var cnt [shMaxShards]int
		sid := make([]uint8, len(keys))
		s.sh.shardFill(keys)(0, len(keys), sid, &cnt)
		var want [shMaxShards]int
		for i := range keys {
			d := s.sh.shardOf(&keys[i])
			if int(sid[i]) != d {
				t.Fatalf("key %d: shard %d, shardOf says %d", keys[i], sid[i], d)
			}
			want[d]++
		}
		if cnt != want {
			t.Fatalf("counts %v, want %v", cnt[:len(s.sh.shards)], want[:len(s.sh.shards)])
		}
	})
}

// TestShardedMapGetBatchPanic: a WithHasher function that panics while a
// later round is being split, with the devices still probing the round
// before, panics out of GetBatch only after the devices are done; the map
// stays usable and frees everything on Close (vmemtest checks for leaks).
func TestShardedMapGetBatchPanic(t *testing.T) {
	old := mapGPUChunk
	mapGPUChunk = 500
	t.Cleanup(func() { mapGPUChunk = old })
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		const bad = 1 << 40
		var armed bool
		s, err := NewMap[uint64, uint64](p, WithHasher(func(k uint64) uint64 {
			if armed && k == bad {
				panic("hasher")
			}
			return k * 0x9e3779b97f4a7c15
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		keys := make([]uint64, 3000)
		for i := range keys {
			keys[i] = uint64(i)
		}
		if err := s.PutBatch(keys, keys); err != nil {
			t.Fatal(err)
		}
		q := slices.Clone(keys)
		q[1700] = bad // in the fourth round
		vals := make([]uint64, len(q))
		armed = true
		func() {
			defer func() {
				if r := recover(); r != "hasher" {
					t.Fatalf("recovered %v, want the hasher's panic", r)
				}
			}()
			s.GetBatch(q, vals, nil)
		}()
		armed = false
		found := make([]bool, len(keys))
		if err := s.GetBatch(keys, vals, found); err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			if vals[i] != k || !found[i] {
				t.Fatalf("key %d after the panic: %d %v", k, vals[i], found[i])
			}
		}
	})
}

// TestShardedMapGetBatchFixed: rounds large enough for the one-pass split
// (fixed regions per core, unused slots probed and dropped) answer as a
// Go map does, with keys spread by the hash and with every key on one
// shard, where the regions overflow and the two-pass split takes over.
func TestShardedMapGetBatchFixed(t *testing.T) {
	oldChunk, oldMin, oldMax := mapGPUChunk, shPieceMin, shMaxPieces
	// Rounds of 2^13 keys: batches of 30000 take four, so that rounds are
	// placed and split at once.
	mapGPUChunk, shPieceMin, shMaxPieces = 1<<13, 1000, 5
	t.Cleanup(func() { mapGPUChunk, shPieceMin, shMaxPieces = oldChunk, oldMin, oldMax })
	shEachQueued(t, func(t *testing.T) {
		shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
			s, err := NewMap[uint64, uint64](p)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r := rand.New(rand.NewPCG(11, 12))
			model := map[uint64]uint64{}
			var spread, one []uint64
			for len(spread) < 30000 {
				spread = append(spread, r.Uint64())
			}
			for len(one) < 30000 {
				if k := r.Uint64(); s.sh.shardOf(&k) == 0 {
					one = append(one, k)
				}
			}
			for _, ks := range [][]uint64{spread, one} {
				vs := make([]uint64, len(ks))
				for i, k := range ks {
					vs[i] = k ^ 0x5555
					model[k] = vs[i]
				}
				if err := s.PutBatch(ks[:len(ks)/2], vs[:len(ks)/2]); err != nil { // half present
					t.Fatal(err)
				}
				for _, k := range ks[len(ks)/2:] {
					delete(model, k)
				}
			}
			if kdev(p.Devices()[0]).KernelsAvailable() && len(s.sh.shards) == 2 {
				// The split itself: regions of spread keys hold; one shard's do not.
				sh := s.sh.shards[0]
				hmode, _ := sh.gpuMode()
				j, err := sh.gpuGetBegin(sh.t, hmode, 1<<14)
				if err != nil {
					t.Fatal(err)
				}
				defer j.close()
				j2, err := s.sh.shards[1].gpuGetBegin(s.sh.shards[1].t, hmode, 1<<14)
				if err != nil {
					t.Fatal(err)
				}
				defer j2.close()
				jobs := []*mapGetJob[uint64, uint64]{j, j2}
				sid := make([]uint8, 1<<14)
				if s.sh.splitFixed(spread[:1<<14], sid, 1<<14, jobs) == nil {
					t.Fatalf("one-pass split refused keys spread by the hash")
				}
				if s.sh.splitFixed(one[:1<<14], sid, 1<<14, jobs) != nil {
					t.Fatalf("one-pass split took keys that overflow its regions")
				}
			}
			// The mixed batches overflow the regions in their first round, and
			// in their third (split while the first is placed).
			late := append(append(slices.Clone(spread[:20000]), one[:7000]...), spread[20000:23000]...)
			for _, ks := range [][]uint64{spread, one, append(slices.Clone(one[:7000]), spread[:23000]...), late} {
				vals := make([]uint64, len(ks))
				found := make([]bool, len(ks))
				if err := s.GetBatch(ks, vals, found); err != nil {
					t.Fatal(err)
				}
				for i, k := range ks {
					want, ok := model[k]
					if vals[i] != want || found[i] != ok {
						t.Fatalf("key %d (%#x): got %d %v, want %d %v", i, k, vals[i], found[i], want, ok)
					}
				}
			}
		})
	})
}

// shEachQueued runs f as a subtest with a pool Map's GetBatch queueing two
// rounds on the devices at a time, and three.
func shEachQueued(t *testing.T, f func(t *testing.T)) {
	old := shGetQueued
	t.Cleanup(func() { shGetQueued = old })
	for _, q := range []int{2, 3} {
		t.Run(fmt.Sprintf("queued%d", q), func(t *testing.T) {
			shGetQueued = q
			f(t)
		})
	}
}

// TestShardedMapStats: Stats adds up the shards' MapStats, lists them in
// Shards, and WithHostCache reaches every shard's hot tier.
func TestShardedMapStats(t *testing.T) {
	shEachPool(t, vmem.Options{}, func(t *testing.T, p *vmem.Pool) {
		const n = 2000
		s, err := NewMap[uint64, uint64](p, WithHostCache(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for i := range uint64(n) {
			if err := s.Put(i*7919+1, i); err != nil {
				t.Fatal(err)
			}
		}
		for range 50 {
			for i := range uint64(4) {
				if v, ok := s.Get(i*7919 + 1); !ok || v != i {
					t.Fatalf("Get(%d) = %d, %v", i*7919+1, v, ok)
				}
			}
		}
		st := s.Stats()
		if st.Len != n {
			t.Errorf("Stats().Len = %d, want %d", st.Len, n)
		}
		if st.DeviceBytes == 0 || st.Capacity < n {
			t.Errorf("Stats() = %+v: want DeviceBytes > 0 and Capacity >= %d", st, n)
		}
		c := st.Cache
		if c.Hits+c.Misses == 0 || c.Entries == 0 || c.Capacity == 0 || c.Bytes == 0 {
			t.Errorf("Stats().Cache = %+v: want lookups counted and entries held", c)
		}
		var sum MapStats
		per := st.Shards
		if len(per) != len(p.Devices()) {
			t.Fatalf("Stats().Shards has %d entries, want %d", len(per), len(p.Devices()))
		}
		for _, sh := range per {
			if sh.Cache.Capacity == 0 {
				t.Errorf("a shard has no hot tier: %+v", sh.Cache)
			}
			if sh.Shards != nil {
				t.Errorf("a shard's MapStats has Shards: %+v", sh.Shards)
			}
			sum.Len += sh.Len
			sum.DeviceBytes += sh.DeviceBytes
			sum.HostBytes += sh.HostBytes
			sum.Cache = sum.Cache.add(sh.Cache)
		}
		if sum.Len != st.Len || sum.DeviceBytes != st.DeviceBytes || sum.HostBytes != st.HostBytes || sum.Cache != st.Cache {
			t.Errorf("Stats() = %+v, the shards' sum %+v", st, sum)
		}
	})
}
