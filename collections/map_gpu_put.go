package collections

// Map.PutBatch on the GPU (the mirror and the kernels: see map_gpu.go).

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/vmem"
)

// PutBatch stores vals[i] for keys[i], in order,
// so a key given twice keeps its later value. vals must be at least as
// long as keys (else an error matching vmem.ErrRange).
//
// On a GPU, for fixed-size keys and values (see docs/gpu.md), one kernel
// keeps the last store of each key, probes the table, and reports how
// many keys are new; the CPU grows the table if they need room; then the
// kernel overwrites the values of the keys found and inserts the others,
// claiming slots in the device copy of the control bytes, and the CPU
// sets the same control bytes on the host from the kernel's answer. Two
// round trips per two million keys. Elsewhere the existing keys are found
// by batched line loads on all cores and the stores written in one sorted
// batch.
//
// Errors: vmem.ErrClosed; vmem.ErrOutOfMemory when the table must grow and cannot,
// or there is no room for the device copy of the control bytes: the keys
// not yet stored are then unchanged (a batch of up to two million keys is
// stored all or nothing); vmem.ErrDeviceLost (the map's contents are then
// undefined, as the device's).
func (m *Map[K, V]) PutBatch(keys []K, vals []V) error {
	if m.sh != nil {
		return m.sh.PutBatch(keys, vals)
	}
	if m.closed {
		return vmem.ErrClosed
	}
	if len(vals) < len(keys) {
		return fmt.Errorf("collections: PutBatch: %d keys but %d values: %w", len(keys), len(vals), vmem.ErrRange)
	}
	if m.writing {
		m.badWrite()
	}
	hmode, ok := m.gpuMode()
	if !ok || len(keys) == 0 {
		return m.putMany(keys, vals)
	}
	m.writing = true
	err := func() error {
		defer m.writeDone()
		m.tierWriteMany(keys)
		if err := m.settle(); err != nil { // recorded Puts come first
			return err
		}
		return m.gpuPut(hmode, keys, vals)
	}()
	if errors.Is(err, kern.ErrNoKernels) {
		return m.putMany(keys, vals)
	}
	m.putBatchDone()
	if buildconst.Invariants {
		m.mustCheck()
	}
	return err
}

// putBatchDone moves the version after gpuPut's kernels: gpuPut kept the
// device mirror of the control bytes in step where it could (g.inStep),
// so the mirror stays valid. Moved before the kernels, the version would
// make every batch copy the whole mirror again (a copy that grows with
// the map).
func (m *Map[K, V]) putBatchDone() {
	m.version++
	g := &m.gpu
	g.mu.Lock()
	if g.inStep {
		g.ver = m.version
	}
	g.mu.Unlock()
}

// mapPutLayout is the scratch layout of map_put (its twin is in
// map_put.comp): offsets of the keys, hashes, dedup slots, states,
// locations, counters, dedup table and winners, and the total.
type mapPutLayout struct {
	k, h, d, s, l, c, t, w, total uint64
}

func mapPutLayoutFor(n, ks, tsize uint64) mapPutLayout {
	var y mapPutLayout
	y.h = mapRoundUp64(n*ks, 16)
	y.d = y.h + n*8
	y.s = y.d + mapRoundUp64(n*4, 16)
	y.l = y.s + mapRoundUp64(n*4, 16)
	y.c = y.l + n*8
	y.t = y.c + 64
	y.w = y.t + tsize*4
	y.total = y.w + tsize*4
	return y
}

// gpuPut is PutBatch on the GPU, a chunk at a time. ErrNoKernels means
// nothing was changed. The caller has stored what was pending (settle):
// the kernels read and write memory, not the batcher.
func (m *Map[K, V]) gpuPut(hmode uint32, keys []K, vals []V) error {
	kb, err := kdev(m.dev).NewBatch()
	if err != nil {
		return err
	}
	defer kb.Close()
	var zk K
	var zv V
	ks, vs := uint64(unsafe.Sizeof(zk)), uint64(unsafe.Sizeof(zv))
	c := uint64(min(len(keys), mapGPUChunk))
	tsize := uint64(1) << bits.Len64(2*c-1)
	scr, err := kb.Scratch(mapPutLayoutFor(c, ks, tsize).total)
	if err != nil {
		return err
	}
	// Staging: keys, hashes, values, states, locations, counters.
	var o mapPutStage
	o.h = mapRoundUp64(c*ks, 64)
	o.v = o.h + c*8
	o.s = o.v + mapRoundUp64(c*vs, 64)
	o.l = o.s + mapRoundUp64(c*4, 64)
	o.c = o.l + c*8
	st, err := kb.Staging(o.c + 64)
	if err != nil {
		return err
	}
	// The values go to the device with the keys: read from pinned memory
	// by the kernel, each would cost a trip over the bus.
	if vs > 0 {
		if o.dv, err = kb.Scratch(c * vs); err != nil {
			return err
		}
	}
	for lo := 0; lo < len(keys); lo += int(c) {
		hi := min(lo+int(c), len(keys))
		if err := m.gpuPutChunk(kb, hmode, keys[lo:hi], vals[lo:hi], scr, st, tsize, o); err != nil {
			if lo > 0 && errors.Is(err, kern.ErrNoKernels) {
				// Earlier chunks are stored: not a reason for the CPU path.
				err = fmt.Errorf("collections: PutBatch: %v", err)
			}
			return err
		}
	}
	return nil
}

// mapPutStage is the staging layout of gpuPut: offsets of the keys (0),
// hashes, values, states, locations and counters; and the device address
// of the values' device-local copy.
type mapPutStage struct{ h, v, s, l, c, dv uint64 }

// gpuPutChunk stores one chunk: round one dedups, syncs the mirror and
// classifies; the CPU grows the table if the new keys need room; round two
// (re-classifying after a growth) applies; the CPU sets the control bytes.
func (m *Map[K, V]) gpuPutChunk(kb kern.Batch, hmode uint32, keys []K, vals []V, scr uint64, st kern.Staging, tsize uint64, o mapPutStage) error {
	var zk K
	var zv V
	ks, vs := uint64(unsafe.Sizeof(zk)), uint64(unsafe.Sizeof(zv))
	n := uint64(len(keys))
	c := mapPutChunk[K, V]{m: m, kb: kb, hmode: hmode, keys: keys, vals: vals,
		scr: scr, st: st, tsize: tsize, o: o, y: mapPutLayoutFor(n, ks, tsize),
		n: n, ks: ks, vs: vs, base: st.Ptr}
	c.stage()

	t, segs, fresh, err := c.roundOne()
	if err != nil {
		return err
	}

	// Room for the new keys; the map is unchanged if there is none.
	if t.growthLeft < fresh {
		if err := m.grow(m.n+fresh, false); err != nil {
			return err
		}
		t = m.t
		if segs, err = c.classify(t); err != nil {
			return err
		}
	}

	states, locs, disp, err := c.roundTwo(t, segs)
	if err != nil {
		return err
	}
	if over := c.setControl(t, states, locs, disp); over == 0 {
		return nil
	}
	return c.putOverflow(states)
}

// mapPutChunk is one chunk of gpuPut on its way: the chunk's keys and
// values, the kernel batch with its scratch and staging (and their
// layouts), and the sizes the kernel's push constants carry.
type mapPutChunk[K comparable, V any] struct {
	m         *Map[K, V]
	kb        kern.Batch
	hmode     uint32
	keys      []K
	vals      []V
	scr       uint64
	st        kern.Staging
	tsize     uint64
	o         mapPutStage
	y         mapPutLayout
	n, ks, vs uint64
	base      unsafe.Pointer // st.Ptr
}

// stage copies the chunk's keys and values into staging, with their
// hashes where the kernel does not compute them (hmode 0).
func (c *mapPutChunk[K, V]) stage() {
	m, keys, n, base := c.m, c.keys, c.n, c.base
	mapParCopy(base, unsafe.Pointer(&keys[0]), n*c.ks)
	if c.vs > 0 {
		mapParCopy(unsafe.Add(base, c.o.v), unsafe.Pointer(&c.vals[0]), n*c.vs)
	}
	if c.hmode == 0 {
		hs := unsafe.Slice((*uint64)(unsafe.Add(base, c.o.h)), n)
		par.Ranges(int(n), 1<<14, func(a, b int) {
			for i := a; i < b; i++ {
				hs[i] = m.hash(&keys[i])
			}
		})
	}
}

// push returns the kernel's push constants for phase against table t.
func (c *mapPutChunk[K, V]) push(t *mapTable, phase uint32, segs uint64) *mapPutPush {
	m := c.m
	return &mapPutPush{scr: c.scr, vals: c.o.dv, segs: segs, seed: m.seed, nb: t.nb, nbAll: t.nbAll,
		n: uint32(c.n), ks: uint32(c.ks), vs: uint32(c.vs), stride: uint32(m.r.stride), valOff: uint32(m.r.valOff),
		pp: uint32(m.r.p), shift: uint32(t.shift), hmode: c.hmode, phase: phase, tsize: uint32(c.tsize)}
}

// classify records the mirror's copies (if it is out of step) and
// phase 2 against table t; it returns the segment table's address.
func (c *mapPutChunk[K, V]) classify(t *mapTable) (uint64, error) {
	m, kb, g := c.m, c.kb, &c.m.gpu
	segB := uint64(len(t.segs)) * 16
	segs, err := kb.Staging(segB)
	if err != nil {
		return 0, err
	}
	// Every probe reads the segment table: from VRAM, not over the bus.
	segD, err := kb.Scratch(segB)
	if err != nil {
		return 0, err
	}
	g.mu.Lock()
	_, err = m.gpuMirror(kb, t)
	g.mu.Unlock()
	if err != nil {
		return 0, err
	}
	m.gpuSegs(t, segs.Ptr)
	kb.Upload(segD, segs, 0, segB)
	kb.Barrier()
	kb.Dispatch(mapPutKernel, c.n, c.push(t, 2, segD))
	kb.Barrier()
	return segD, nil
}

// inStep records whether the mirror is in step with the map's version.
func (c *mapPutChunk[K, V]) inStep(ok bool) {
	m, g := c.m, &c.m.gpu
	g.mu.Lock()
	g.ver, g.inStep = m.version, ok
	g.mu.Unlock()
}

// roundOne uploads the chunk, dedups it and classifies it against the
// current table. It returns that table, the segment table's address and
// the number of keys new to the map.
func (c *mapPutChunk[K, V]) roundOne() (*mapTable, uint64, int, error) {
	kb, st, n, y, o := c.kb, c.st, c.n, c.y, c.o
	kb.Upload(c.scr+y.k, st, 0, n*c.ks)
	if c.vs > 0 {
		kb.Upload(o.dv, st, o.v, n*c.vs)
	}
	if c.hmode == 0 {
		kb.Upload(c.scr+y.h, st, o.h, n*8)
	}
	t := c.m.t
	kb.Barrier()
	kb.Dispatch(mapPutKernel, c.tsize, c.push(t, 0, 0))
	kb.Barrier()
	kb.Dispatch(mapPutKernel, n, c.push(t, 1, 0))
	segs, err := c.classify(t)
	if err != nil {
		return nil, 0, 0, err
	}
	kb.CopyTo(st, o.c, c.scr+y.c, 16)
	if err := kb.Run(); err != nil {
		if !errors.Is(err, kern.ErrNoKernels) {
			c.inStep(false)
		}
		return nil, 0, 0, err
	}
	c.inStep(true)
	fresh := int(*(*uint32)(unsafe.Add(c.base, o.c)))
	return t, segs, fresh, nil
}

// roundTwo applies the chunk to table t and brings back each key's state
// and location, and the longest displacement.
func (c *mapPutChunk[K, V]) roundTwo(t *mapTable, segs uint64) ([]uint32, []uint64, uint64, error) {
	kb, st, n, y, o, base := c.kb, c.st, c.n, c.y, c.o, c.base
	kb.Dispatch(mapPutKernel, n, c.push(t, 3, segs))
	kb.Barrier()
	kb.CopyTo(st, o.s, c.scr+y.s, n*4)
	kb.CopyTo(st, o.l, c.scr+y.l, n*8)
	kb.CopyTo(st, o.c, c.scr+y.c, 16)
	if err := kb.Run(); err != nil {
		c.inStep(false)
		return nil, nil, 0, err
	}
	c.inStep(true)
	states := unsafe.Slice((*uint32)(unsafe.Add(base, o.s)), n)
	locs := unsafe.Slice((*uint64)(unsafe.Add(base, o.l)), n)
	disp := uint64(*(*uint32)(unsafe.Add(base, o.c+4)))
	return states, locs, disp, nil
}

// setControl sets the control bytes the kernel claimed in t and the
// table's counts; it returns the number of keys whose probe ran off the
// table's tail.
func (c *mapPutChunk[K, V]) setControl(t *mapTable, states []uint32, locs []uint64, disp uint64) int {
	m, n := c.m, c.n
	// The same control bytes on the host (distinct bytes: no two
	// goroutines write one).
	var mu sync.Mutex
	var ins, tomb, over int
	par.Ranges(int(n), 1<<15, func(a, b int) {
		var in, tb, ov int
		for i := a; i < b; i++ {
			s := states[i]
			switch s & 0xff {
			case 3:
				l := locs[i]
				t.setFP(l>>3, int(l&7), byte(s>>8), m.r.p)
				in++
				if s>>16&1 != 0 {
					tb++
				}
			case 4:
				ov++
			}
		}
		mu.Lock()
		ins, tomb, over = ins+in, tomb+tb, over+ov
		mu.Unlock()
	})
	t.growthLeft -= ins - tomb
	t.tombs -= tomb
	t.maxDisp = max(t.maxDisp, disp)
	m.n += ins
	return over
}

// putOverflow stores the keys whose probe ran off the table's tail by
// the CPU (which rebuilds the table with a longer tail). The mirror falls
// out of step.
func (c *mapPutChunk[K, V]) putOverflow(states []uint32) error {
	m, keys, vals := c.m, c.keys, c.vals
	c.inStep(false)
	for i := range states {
		if states[i]&0xff == 4 {
			if err := m.put(&keys[i], &vals[i], m.hash(&keys[i])); err != nil {
				return err
			}
		}
	}
	return nil
}
