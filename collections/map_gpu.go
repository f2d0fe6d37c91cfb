package collections

// Batch operations on the GPU: Map.GetBatch and Map.PutBatch.
//
// A Get of one key costs a VRAM line (a PCIe round trip); a GPU kernel
// probes a million keys next to the slots, at the GPU's memory speed, so
// a batch pays one GPU round trip (a fixed cost) plus moving its keys and
// values over the bus once by DMA (docs/physics.md).
//
// What the kernels need to know is which slots are full: the control
// bytes, which live in host memory. The GPU works on a device copy of
// them (the mirror, one VRAM block per segment, 1.1-2 bytes an entry),
// not on the host bytes over the bus (a scattered PCIe read per probe)
// and not on occupancy written into the lines (which would make every Put
// and Delete write VRAM twice). The mirror is brought in step lazily: it
// records the table and the write count (Map.version) it copies; any
// write through the CPU paths (Put, Delete, Clear, growth) makes it stale
// by changing one or the other, at no cost to them, and the next batch
// copies the control bytes over by DMA (one copy per segment, which grows
// with the map) before its kernel. PutBatch keeps it in step itself: the
// kernel claims slots in the mirror and the CPU sets the same bytes on
// the host from the kernel's results. So Get and Put are untouched; a run
// of batches after a run of single writes pays one copy.
//
// The hash: for keys of 4, 8 and 16 bytes with the built-in hash, the
// kernel computes the Map's own mixer (map.glsl is mapMix and mapHome to
// the bit); other fixed-size keys (WithHasher, other sizes) are hashed by
// the CPU and the hashes sent with the keys. Keys are compared as bytes,
// so only types whose == is byte equality run on the GPU (no floats, no
// padding); string values, and records whose key, value or stride is
// not a whole number of 4-byte words, take the CPU paths (getMany,
// putMany). String keys run on the GPU for lookups only (getMode): the
// CPU hashes them and sends record images (putKeys).

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/vmem"
)

// mapGPU is a Map's device-side state: the mirror of the control bytes.
type mapGPU struct {
	mu     sync.Mutex
	t      *mapTable     // the table the mirror copies; nil: none
	ver    uint64        // Map.version the mirror is in step with
	inStep bool          // the mirror holds t's control bytes as of ver
	mirror []block.Block // per segment of t

	comb  mapComb       // lookups waiting for a shared round (map_combine.go)
	stats mapBatchStats // how batch lookups were answered
}

// Push constants of map_get.comp and map_put.comp (same names, same
// order; vmem checks them against the SPIR-V).
type (
	mapGetPush struct {
		keys, hashes, segs, vals, found, seed, nb, nbAll uint64
		n, ks, vs, stride, valOff, pp, shift, hmode      uint32
	}
	mapPutPush struct {
		scr, vals, segs, seed, nb, nbAll                          uint64
		n, ks, vs, stride, valOff, pp, shift, hmode, phase, tsize uint32
	}
)

var (
	mapGetKernel = newKernel("map_get", mapGetPush{})
	mapPutKernel = newKernel("map_put", mapPutPush{})
)

// mapGPUChunk bounds the keys of one kernel round (a variable so that
// tests can make rounds small).
var mapGPUChunk = 1 << 21

// gpuMode reports whether the batch kernels take this Map, and how keys
// are hashed (4, 8, 16: by the kernel; 0: by the CPU).
func (m *Map[K, V]) gpuMode() (uint32, bool) {
	var k K
	var v V
	ks, vs := unsafe.Sizeof(k), unsafe.Sizeof(v)
	if m.strK || m.strV || m.r.lines != 1 || ks == 0 || ks > 64 || ks%4 != 0 || vs%4 != 0 ||
		m.r.stride%4 != 0 || m.r.valOff%4 != 0 {
		return 0, false
	}
	switch m.hk {
	case mapHash4:
		return 4, true
	case mapHash8:
		return 8, true
	case mapHash16:
		return 16, true
	case mapHashMem:
		return 0, true
	case mapHashUser:
		return 0, m.keysMemEqual()
	}
	return 0, false
}

// mapGPUStr is the hash mode of string keys: the CPU hashes each key and
// sends it as the image of its record's first bytes (hash, length, inline
// bytes), which the kernel compares up to the key's length.
const mapGPUStr = 1

// mapStrImgMax bounds a string key's image: its record's hash and key
// field (at most two lines less the value).
const mapStrImgMax = 2 * 64

// getMode is gpuMode for lookups, which also take string keys (mapGPUStr)
// when values are fixed-size. Only the batch lookup has this mode; the
// other kernels' callers ask gpuMode.
func (m *Map[K, V]) getMode() (uint32, bool) {
	if !m.strK {
		return m.gpuMode()
	}
	var v V
	if m.strV || unsafe.Sizeof(v)%4 != 0 || m.r.stride%4 != 0 || m.r.valOff%4 != 0 ||
		m.r.hashOff != 0 || m.r.keyOff != 8 || m.r.keyOff+m.r.keyW > mapStrImgMax {
		return 0, false
	}
	return mapGPUStr, true
}

// locMode reports whether the lookup kernel can find the slots of this
// Map's string keys for a batch of writes (locations, and a string
// value's field, copied word by word).
func (m *Map[K, V]) locMode() bool {
	return m.strK && m.r.stride%4 == 0 && m.r.valOff%4 == 0 && m.r.valW%4 == 0 &&
		m.r.hashOff == 0 && m.r.keyOff == 8 && m.r.keyOff+m.r.keyW <= mapStrImgMax
}

// keysMemEqual reports whether K's == is byte equality.
func (m *Map[K, V]) keysMemEqual() bool {
	return mapMemHashable(reflect.TypeFor[K]())
}

// gpuDrop frees the mirror of t, which is being freed. freeTable calls it.
func (m *Map[K, V]) gpuDrop(t *mapTable) {
	g := &m.gpu
	g.mu.Lock()
	if g.t == t {
		m.gpuFreeMirror()
	}
	g.mu.Unlock()
}

func (m *Map[K, V]) gpuFreeMirror() {
	g := &m.gpu
	for _, b := range g.mirror {
		kdev(m.dev).Free(b)
		m.held.Forget(b)
	}
	g.mirror, g.t, g.inStep = nil, nil, false
}

// gpuMirror makes the mirror fit t and records into kb the copies that
// bring it in step, if it is not. The caller holds m.gpu.mu and runs kb
// before any kernel reads the mirror. It reports whether it recorded
// copies. On error (out of memory) nothing is recorded and the map is
// unchanged.
func (m *Map[K, V]) gpuMirror(kb kern.Batch, t *mapTable) (bool, error) {
	g := &m.gpu
	if g.t != t {
		m.gpuFreeMirror()
		var mir []block.Block
		for i := range t.segs {
			size := mapRoundUp(uintptr(t.segs[i].n)*uintptr(m.r.p)+8, 64)
			b, err := kdev(m.dev).Alloc(block.Private, uint64(size), 64)
			if err != nil && errors.Is(err, vmem.ErrOutOfMemory) {
				b, err = kdev(m.dev).Alloc(block.Mapped, uint64(size), 64)
			}
			if err != nil {
				for _, b := range mir {
					kdev(m.dev).Free(b)
				}
				return false, err
			}
			mir = append(mir, b)
		}
		m.held.Add(mir...)
		g.mirror, g.t = mir, t
	}
	if g.inStep && g.ver == m.version {
		return false, nil
	}
	for i := range t.segs {
		sg := &t.segs[i]
		kb.CopyBlock(g.mirror[i], 0, sg.fpBlk, 0, sg.n*uint64(m.r.p)+8)
	}
	return true, nil
}

// gpuSegs writes the segment table (slots address, mirror address) into
// staging memory at p.
func (m *Map[K, V]) gpuSegs(t *mapTable, p unsafe.Pointer) {
	s := unsafe.Slice((*uint64)(p), 2*len(t.segs))
	kd := kdev(m.dev)
	for i := range t.segs {
		s[2*i] = kd.BlockAddr(t.segs[i].slots, 0)
		s[2*i+1] = kd.BlockAddr(m.gpu.mirror[i], 0)
	}
}

// GetBatch looks up every key: vals[i] gets the value of
// keys[i] (the zero value if absent) and, when found is not nil, found[i]
// whether it is there. vals and found must be at least as long as keys
// (else an error matching vmem.ErrRange).
//
// On a GPU, for fixed-size keys and values (see docs/gpu.md), the keys go
// to pinned host memory, one kernel probes the table where it lies and
// writes the answers back, and the CPU copies them out: one round trip per
// two million keys. The first batch after single writes (Put, Delete,
// Clear) first copies the control bytes to the device (about 1.1-2 bytes
// an entry, by DMA). Small batches, and every batch elsewhere, are answered
// by line loads overlapped over GOMAXPROCS goroutines. Errors: vmem.ErrClosed,
// vmem.ErrOutOfMemory (no room for the device copy of the control bytes; the
// map is unchanged), vmem.ErrDeviceLost.
//
// GetBatch is a read: it may run together with other reads.
func (m *Map[K, V]) GetBatch(keys []K, vals []V, found []bool) error {
	if m.sh != nil {
		return m.sh.GetBatch(keys, vals, found)
	}
	if m.closed {
		return vmem.ErrClosed
	}
	if len(vals) < len(keys) || (found != nil && len(found) < len(keys)) {
		return fmt.Errorf("collections: GetBatch: %d keys, %d values, %d found flags: %w", len(keys), len(vals), len(found), vmem.ErrRange)
	}
	if err := m.dev.Err(); err != nil {
		return err // a lost device, whichever path the batch would take
	}
	if m.pending.Load() {
		m.flushForRead()
	}
	t := m.t
	if t == nil || m.writing {
		m.badRead()
	}
	if len(keys) == 0 {
		return nil
	}
	if hmode, ok := m.batchGPU(t, len(keys)); ok {
		err := m.combGet(t, hmode, keys, vals, found)
		if !errors.Is(err, kern.ErrNoKernels) {
			m.gpu.stats.gpuPath.Add(1)
			return err
		}
	}
	m.gpu.stats.cpuPath.Add(1)
	before := m.Err()
	m.getManyCPU(t, keys, vals, found)
	if err := m.Err(); err != nil && before == nil {
		return err
	}
	return nil
}

// A batch of at least mapGetPartMin keys per part is cut into up to
// mapGetParts parts, each run by a goroutine of its own with its own
// buffers, so that the CPU's copies for one part overlap the transfers and
// kernel of another (one part at a time leaves the GPU idle while the CPU
// copies, and the CPU idle while the GPU works). Two: in runs of 10^6
// keys (BenchmarkMapGetBatch with VMEM_BENCH_PARTS), four parts gained
// little over one or two against a 10^7-entry map and lost against a
// 10^8-entry one (docs/gpu.md; all with the GPU just out of a long idle
// spell, before the benchmarks warmed it; not re-measured warm).
//
// String keys take four parts: each round also builds key images and
// orders them on the CPU, which the other parts' transfers and kernels
// overlap (measured against one, two and seven parts in docs/gpu.md;
// seven need more buffers than the device keeps for reuse).
var (
	mapGetParts    = 2
	mapGetStrParts = 4
	mapGetPartMin  = 1 << 17
	mapGetStrRound = 1 << 18 // keys of a string round at most
)

func (m *Map[K, V]) gpuGet(t *mapTable, hmode uint32, keys []K, vals []V, found []bool) error {
	most := mapGetParts
	if hmode == mapGPUStr {
		most = mapGetStrParts
	}
	parts := min(most, len(keys)/mapGetPartMin)
	if parts <= 1 {
		return m.gpuGetPart(t, hmode, keys, vals, found)
	}
	per := (len(keys) + parts - 1) / parts
	errs := make([]error, parts)
	par.Go(parts, func(p int) {
		lo, hi := p*per, min((p+1)*per, len(keys))
		var f []bool
		if found != nil {
			f = found[lo:hi]
		}
		errs[p] = m.gpuGetPart(t, hmode, keys[lo:hi], vals[lo:hi], f)
	})
	for _, err := range errs {
		if errors.Is(err, kern.ErrNoKernels) {
			return err // the caller answers the whole batch on the CPU
		}
	}
	return errors.Join(errs...)
}

// gpuGetPart runs GetBatch's rounds for keys on one set of buffers.
func (m *Map[K, V]) gpuGetPart(t *mapTable, hmode uint32, keys []K, vals []V, found []bool) error {
	j, err := m.gpuGetBegin(t, hmode, min(len(keys), mapGPUChunk))
	if err != nil {
		return err
	}
	defer j.close()
	return j.lookup(keys, vals, found)
}

// lookup runs rounds of j's size over keys, copying each round's keys in
// and its answers out.
func (j *mapGetJob[K, V]) lookup(keys []K, vals []V, found []bool) error {
	for lo := 0; lo < len(keys); lo += j.c {
		hi := min(lo+j.c, len(keys))
		n := hi - lo
		j.putKeys(0, unsafe.Pointer(&keys[lo]), n)
		if err := j.run(n, found != nil); err != nil {
			return err
		}
		if j.vs > 0 {
			mapParCopy(unsafe.Pointer(&vals[lo]), unsafe.Pointer(unsafe.SliceData(j.vals(n))), uint64(n)*j.vs)
		}
		var f []bool
		if found != nil {
			f = found[lo:hi]
			mapParCopy(unsafe.Pointer(&f[0]), unsafe.Pointer(unsafe.SliceData(j.found(n))), uint64(n))
		}
		if j.long.Swap(0) != 0 {
			j.m.longKeys(j.t, keys[lo:hi], vals[lo:hi], f)
		}
	}
	return nil
}

// putKeys writes n keys from src (a []K's elements) into the round's key
// memory from index at: as they are, or, for string keys, as images
// (hash, length, inline bytes; a key too long to be held inline gets
// length ~0, which the kernel answers "absent", and counts in j.long).
func (j *mapGetJob[K, V]) putKeys(at int, src unsafe.Pointer, n int) {
	dst := unsafe.Add(j.st.Ptr, j.offK+uint64(at)*j.ks)
	if j.hmode != mapGPUStr {
		mapParCopy(dst, src, uint64(n)*j.ks)
		return
	}
	m := j.m
	ks := unsafe.Slice((*K)(src), n)
	inline := mapStrInline(m.r.keyW)
	w := uintptr(j.ks)
	par.Ranges(n, 1<<12, func(a, b int) {
		long := 0
		// Images are made in a buffer of this goroutine, mapGroupKeys at
		// a time, and stored into staging memory as whole lines with
		// non-temporal stores (16 images of a multiple of 4 bytes are
		// whole lines): a plain store to a line the cache does not hold
		// reads the line first, and a batch's staging memory is larger
		// than the cache. The keys before the first image that starts a
		// line, and the last few, are copied one by one. Bytes past a
		// key's length are left from earlier keys: the kernel ignores
		// them.
		var blk [mapGroupKeys * mapStrImgMax]byte
		i := a
		for ; i < b && uintptr(unsafe.Add(dst, uintptr(i)*w))%64 != 0; i++ {
			if (i-a)%mapGroupKeys == 0 {
				m.prefetchAhead(ks, a, i, b)
			}
			long += j.image(unsafe.Pointer(&blk[0]), &ks[i], at+i, inline)
			copy(mapBytesAt(unsafe.Add(dst, uintptr(i)*w), int(w)), blk[:w])
		}
		streamed := false
		for ; i+mapGroupKeys <= b; i += mapGroupKeys {
			m.prefetchAhead(ks, a, i, b)
			for q := range mapGroupKeys {
				long += j.image(unsafe.Pointer(&blk[uintptr(q)*w]), &ks[i+q], at+i+q, inline)
			}
			lineio.StoreLines(unsafe.Add(dst, uintptr(i)*w), blk[:mapGroupKeys*w])
			streamed = true
		}
		for ; i < b; i++ {
			long += j.image(unsafe.Pointer(&blk[0]), &ks[i], at+i, inline)
			copy(mapBytesAt(unsafe.Add(dst, uintptr(i)*w), int(w)), blk[:w])
		}
		if streamed {
			lineio.Fence() // the upload reads them from another thread
		}
		if long > 0 {
			j.long.Add(int64(long))
		}
	})
}

// image writes key k's image (hash, length, inline bytes) at out, sets
// its part at x and returns 1 if the key is too long to be inline (its
// length is written as ~0).
func (j *mapGetJob[K, V]) image(out unsafe.Pointer, k *K, x, inline int) int {
	s := *(*string)(unsafe.Pointer(k))
	h := j.m.hash(k)
	*(*uint64)(out) = h
	j.part[x] = uint16(h >> (64 - mapStrPartBits))
	if len(s) > inline {
		*(*uint32)(unsafe.Add(out, 8)) = ^uint32(0)
		return 1
	}
	*(*uint32)(unsafe.Add(out, 8)) = uint32(len(s))
	copy(mapBytesAt(unsafe.Add(out, 12), len(s)), s)
	return 0
}

// longKeys answers by the CPU paths the string keys of a GPU round that
// were too long for the kernel (their tails live in the arena); found may
// be nil.
func (m *Map[K, V]) longKeys(t *mapTable, keys []K, vals []V, found []bool) {
	inline := mapStrInline(m.r.keyW)
	var idx []int
	for i := range keys {
		if len(*(*string)(unsafe.Pointer(&keys[i]))) > inline {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	sk, sv, sf := make([]K, len(idx)), make([]V, len(idx)), make([]bool, len(idx))
	for x, i := range idx {
		sk[x] = keys[i]
	}
	m.getManyCPU(t, sk, sv, sf)
	for x, i := range idx {
		vals[i] = sv[x]
		if found != nil {
			found[i] = sf[x]
		}
	}
}

// mapGetJob is GetBatch on the GPU, a round of up to c keys at a time: the
// caller writes a round's keys into keys(n) (pinned host memory), run
// probes them, and vals(n) and found(n) hold the answers until the next
// run. A Map on a pool fills the keys of every shard's job straight from its
// batch, with no copy of its own in between.
type mapGetJob[K comparable, V any] struct {
	m      *Map[K, V]
	t      *mapTable
	hmode  uint32
	kb     kern.Batch
	st     kern.Staging
	dv     uint64 // device-local twin of st, same layout
	c      int
	ks, vs uint64       // bytes of a key (string keys: of its image) and of a value
	long   atomic.Int64 // string keys of the round left to the CPU
	// loc: the rounds answer each key's location, bucket<<3|slot or ~0
	// when absent (the kernel's valOff with its top bit set), into olocs in key
	// order.
	loc   bool
	olocs []uint64
	oold  []mapOldStr // string values: the field each found key's record holds

	// String keys: each key's part of the table (its hash's top bits),
	// the keys' order by part (the kernel's order), and the answers put
	// back in key order.
	part   []uint16
	perm   []uint32
	ovals  []V
	ofound []bool
	// Offsets in st and dv: the segment table at 0, keys, hashes (hmode
	// 0), values, found bytes.
	offK, offH, offV, offF uint64
}

// gpuGetBegin brings the mirror of the control bytes in step and takes
// the memory of rounds of up to c keys against table t.
func (m *Map[K, V]) gpuGetBegin(t *mapTable, hmode uint32, c int) (*mapGetJob[K, V], error) {
	return m.gpuGetBeginQ(t, hmode, c, true)
}

// gpuGetBeginQ is gpuGetBegin; copyQ puts each round's copies on the copy
// engines (rounds that follow or run beside others gain; a lone round
// pays two more submissions for nothing).
func (m *Map[K, V]) gpuGetBeginQ(t *mapTable, hmode uint32, c int, copyQ bool) (*mapGetJob[K, V], error) {
	return m.gpuJobBegin(t, hmode, c, copyQ, false)
}

// gpuJobBegin is gpuGetBeginQ; with loc the rounds answer the keys'
// locations (olocs) instead of their values.
func (m *Map[K, V]) gpuJobBegin(t *mapTable, hmode uint32, c int, copyQ, loc bool) (*mapGetJob[K, V], error) {
	kb, err := kdev(m.dev).NewBatch()
	if err != nil {
		return nil, err
	}
	g := &m.gpu
	g.mu.Lock()
	copied, err := m.gpuMirror(kb, t)
	if err == nil && copied {
		if err = kb.Run(); err == nil {
			g.ver, g.inStep = m.version, true
		}
	}
	g.mu.Unlock()
	if err != nil {
		kb.Close()
		return nil, err
	}
	var zk K
	var zv V
	j := &mapGetJob[K, V]{m: m, t: t, hmode: hmode, kb: kb, c: max(c, 1),
		ks: uint64(unsafe.Sizeof(zk)), vs: uint64(unsafe.Sizeof(zv)), loc: loc}
	if loc {
		j.vs = 8 + uint64(m.r.valW) // the location, then a string value's field
	}
	if hmode == mapGPUStr {
		// Images of about a hundred bytes a key: rounds of a combined
		// round's size keep the staging memory near 30 MiB.
		j.c = min(j.c, mapCombRoundMax, mapGetStrRound)
		j.ks = uint64(m.r.keyOff + m.r.keyW)
		j.part, j.perm = make([]uint16, j.c), make([]uint32, j.c)
		if loc {
			j.olocs = make([]uint64, j.c)
			if m.strV {
				j.oold = make([]mapOldStr, j.c)
			}
		} else {
			j.ovals, j.ofound = make([]V, j.c), make([]bool, j.c)
		}
	}
	cc := uint64(j.c)
	j.offK = mapRoundUp64(uint64(len(t.segs))*16, 64)
	j.offH = j.offK + mapRoundUp64(cc*j.ks, 64)
	j.offV = j.offH
	switch hmode {
	case 0:
		j.offV += cc * 8
	case mapGPUStr:
		j.offV += mapRoundUp64(cc*4, 64)
	}
	j.offF = j.offV + mapRoundUp64(cc*j.vs, 64)
	size := j.offF + mapRoundUp64(cc, 4)
	if j.st, err = kb.Staging(size); err == nil {
		// The kernel works on a device-local copy with the staging layout:
		// a probe that read its key, hash or segment table over the bus
		// would wait a PCIe round trip per load (a batch of 10^6 took
		// milliseconds when it did), while one copy each way moves the
		// batch at DMA speed.
		j.dv, err = kb.Scratch(size)
	}
	if err != nil {
		kb.Close()
		return nil, err
	}
	// Rounds follow each other (GetBatch's parts, a pool Map's queued
	// rounds, combined rounds): one's upload and another's download
	// overlap a kernel.
	if copyQ {
		kb.UseCopyQueues()
	}
	m.gpuSegs(t, j.st.Ptr)
	return j, nil
}

func (j *mapGetJob[K, V]) keys(n int) []K {
	return unsafe.Slice((*K)(unsafe.Add(j.st.Ptr, j.offK)), n)
}

func (j *mapGetJob[K, V]) vals(n int) []V {
	if j.ovals != nil {
		return j.ovals[:n]
	}
	return j.stVals(n)
}

func (j *mapGetJob[K, V]) stVals(n int) []V {
	return unsafe.Slice((*V)(unsafe.Add(j.st.Ptr, j.offV)), n)
}

// found holds 0 or 1 per key, as the kernel writes them: Go's bools.
func (j *mapGetJob[K, V]) found(n int) []bool {
	if j.ofound != nil {
		return j.ofound[:n]
	}
	return j.stFound(n)
}

func (j *mapGetJob[K, V]) stFound(n int) []bool {
	return unsafe.Slice((*bool)(unsafe.Add(j.st.Ptr, j.offF)), n)
}

// run looks up the n keys written into keys(n): one upload, one kernel,
// one copy of the answers back, one round trip.
func (j *mapGetJob[K, V]) run(n int, wantFound bool) error {
	f, err := j.start(n, wantFound)
	if err != nil {
		return err
	}
	if err := f.Wait(); err != nil {
		return err
	}
	if j.hmode == mapGPUStr && j.loc {
		base, perm, valW := unsafe.Add(j.st.Ptr, j.offV), j.perm, j.m.r.valW
		par.Ranges(n, 1<<14, func(a, b int) {
			for i := a; i < b; i++ {
				row := unsafe.Add(base, uint64(i)*j.vs)
				r := *(*uint64)(row)
				j.olocs[perm[i]] = r
				if j.oold != nil && r != ^uint64(0) {
					f := unsafe.Add(row, 8)
					j.oold[perm[i]] = mapOldStr{mapStrLen(f), mapStrHandle(f, valW)}
				}
			}
		})
		return nil
	}
	if j.hmode == mapGPUStr {
		// Answers in the kernel's order back to the keys'.
		sv, sf, perm := j.stVals(n), j.stFound(n), j.perm
		par.Ranges(n, 1<<14, func(a, b int) {
			for i := a; i < b; i++ {
				j.ovals[perm[i]] = sv[i]
				if wantFound {
					j.ofound[perm[i]] = sf[i]
				}
			}
		})
	}
	return nil
}

// mapStrPartBits: a round's string keys are ordered by this many top bits
// of their hash. A GPU probing a table of many gigabytes in random order
// spends its time translating addresses (docs/gpu.md); keys in hash order
// probe neighbouring pages.
const mapStrPartBits = 14

// order sorts the round's n string keys by part (a counting sort of their
// indices) into perm and the staging memory the kernel reads.
func (j *mapGetJob[K, V]) order(n int) {
	var cnt [1 << mapStrPartBits]uint32
	for _, p := range j.part[:n] {
		cnt[p]++
	}
	sum := uint32(0)
	for i, c := range cnt {
		cnt[i] = sum
		sum += c
	}
	for i, p := range j.part[:n] {
		j.perm[cnt[p]] = uint32(i)
		cnt[p]++
	}
	mapParCopy(unsafe.Add(j.st.Ptr, j.offH), unsafe.Pointer(&j.perm[0]), uint64(n)*4)
}

// start is run without the wait: the Flight's Wait ends it.
func (j *mapGetJob[K, V]) start(n int, wantFound bool) (kern.Flight, error) {
	m, t, nn := j.m, j.t, uint64(n)
	m.gpu.stats.rounds.Add(1)
	m.gpu.stats.keys.Add(nn)
	in := j.offK + nn*j.ks
	if j.hmode == 0 {
		ks := j.keys(n)
		hs := unsafe.Slice((*uint64)(unsafe.Add(j.st.Ptr, j.offH)), n)
		par.Ranges(n, 1<<14, func(a, b int) {
			for i := a; i < b; i++ {
				hs[i] = m.hash(&ks[i])
			}
		})
		in = j.offH + nn*8
	}
	if j.hmode == mapGPUStr {
		j.order(n)
		in = j.offH + nn*4
	}
	kb, dv := j.kb, j.dv
	kb.Upload(dv, j.st, 0, in)
	kb.Barrier()
	p := mapGetPush{keys: dv + j.offK, hashes: dv + j.offH, segs: dv, vals: dv + j.offV,
		found: dv + j.offF, seed: m.seed, nb: t.nb, nbAll: t.nbAll, n: uint32(n), ks: uint32(j.ks),
		vs: uint32(j.vs), stride: uint32(m.r.stride), valOff: uint32(m.r.valOff), pp: uint32(m.r.p),
		shift: uint32(t.shift), hmode: j.hmode}
	if j.loc {
		p.valOff |= 1 << 31
	}
	kb.Dispatch(mapGetKernel, nn, &p)
	kb.Barrier()
	if j.vs > 0 {
		kb.CopyTo(j.st, j.offV, dv+j.offV, nn*j.vs)
	}
	if wantFound {
		kb.CopyTo(j.st, j.offF, dv+j.offF, mapRoundUp64(nn, 4))
	}
	return kb.Start()
}

func (j *mapGetJob[K, V]) close() { j.kb.Close() }

func mapRoundUp64(x, a uint64) uint64 { return (x + a - 1) / a * a }
