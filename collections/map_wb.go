package collections

import (
	"errors"
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/vmem"
)

// Puts behind (docs/map.md, "Puts are deferred on a GPU"). Overwriting a
// key in place costs a VRAM round trip to find its slot (a Put of a key
// whose fingerprint matches costs many times a Go map's Put: docs/map.md).
// On a GPU a Put therefore only records the pair in host memory; the pairs
// are stored together when the buffer fills, and before anything else
// reads or writes the map: Get, Len, iteration and every other method see
// every Put made before them. Fixed-size keys and values are stored by one
// PutBatch on the GPU (two kernel round trips shared by the whole buffer,
// little per key); pairs with strings by the CPU's batch path, whose probes
// of the present keys overlap (a string key's record is compared where it
// lives, so the GPU's images of string keys do not apply to writes).
//
// A recorded string's bytes are copied into a byte log in the same
// off-heap block as the pairs, and the recorded key or value points there:
// the block is not scanned by the garbage collector, so it holds no
// pointer into the Go heap.
//
// A Put is recorded only while the table has room for every recorded pair
// as a new key, so applying them needs no growth: a Put that needs one
// takes the direct path, which grows the table or fails with
// vmem.ErrOutOfMemory, leaving the map unchanged, as before.

// mapWBBytes bounds the buffer's keys and values; mapWBMax its pairs.
// Fewer than mapWBDirect pairs (a read right after a few Puts) are stored
// the direct way: a batch's two kernel round trips cost about as much as
// a hundred direct Puts.
const (
	mapWBBytes  = 4 << 20
	mapWBMax    = 1 << 16
	mapWBDirect = 128
)

// mapWBFail, when set (by tests), is the error of every batch that stores
// recorded Puts.
var mapWBFail error

// mapWB holds the Puts not yet stored, in host-tier memory (off the Go
// heap), allocated on the first Put.
type mapWB[K comparable, V any] struct {
	keys []K
	vals []V
	log  []byte      // the bytes of recorded strings (maps with strings)
	blk  block.Block // holds keys, vals and log
	max  int         // pairs held before they are stored
	off  bool        // Puts go straight to the table
	// noGrow is the table whose early growth failed: not tried again on it.
	noGrow *mapTable

	batches int // applied by a PutBatch (tests)
	located int // of which the slots were found by a GPU round (tests)
}

func (m *Map[K, V]) wbInit() {
	_, ok := m.gpuMode()
	if !ok && !m.strK && !m.strV || !kdev(m.dev).OnGPU() || m.cfg.plain || m.cfg.noWB {
		m.wb.off = true
		return
	}
	var zk K
	var zv V
	m.wb.max = min(mapWBMax, max(mapWBBytes/int(unsafe.Sizeof(zk)+unsafe.Sizeof(zv)), 64))
}

// putBehind records the Put of v for k; false means it must take the
// direct path. An error is the failure of storing the pairs recorded
// before (this Put is then not recorded).
func (m *Map[K, V]) putBehind(k *K, v *V) (bool, error) {
	if m.wb.off || m.iters.Load() != 0 {
		// Iterations re-read slots that their loop body wrote: those Puts
		// go to the table at once.
		return false, nil
	}
	// The buffer follows the table's size (a quarter of its capacity, up
	// to wb.max): a small map does not hold megabytes of pinned memory.
	want := min(m.wb.max, max(2*mapWBDirect, m.t.capacity/4))
	sb := m.wbStrBytes(k, v)
	if sb > mapWBLog/4 {
		// A long string goes direct; what was recorded before it is
		// stored first, so that the map sees the Puts in order.
		if len(m.wb.keys) > 0 {
			if err := m.settle(); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	if n := len(m.wb.keys); (n > 0 && (n == cap(m.wb.keys) || len(m.wb.log)+sb > cap(m.wb.log))) || n+2 > m.t.growthLeft {
		if err := m.settle(); err != nil {
			return false, err
		}
		if !m.wb.off && want+2 > m.t.growthLeft && m.t.growthLeft < m.t.capacity/8 && m.wb.noGrow != m.t {
			// The table is nearly full: it grows now, as the next new keys
			// would make it, so that Puts keep their deferred path instead
			// of a round trip each. If it cannot, they go direct (and a Put
			// that needs the growth reports the failure).
			if err := m.grow(m.n+want+2, false); err == nil {
				m.version++
			} else {
				m.wb.noGrow = m.t
			}
		}
		if m.wb.off || 2 > m.t.growthLeft {
			return false, nil
		}
	}
	if len(m.wb.keys) == 0 && cap(m.wb.keys) < want {
		m.wbFree()
		if !m.wbAlloc(want) {
			return false, nil
		}
	}
	m.wb.keys = append(m.wb.keys, *k)
	m.wb.vals = append(m.wb.vals, *v)
	if m.strK || m.strV {
		m.wbLogStrings() // an empty string too: its pointer may be into the heap
	}
	if !m.pending.Load() {
		m.pending.Store(true)
	}
	return true, nil
}

// mapWBLog is the byte log of a map with strings: a string of more than a
// quarter of it is stored direct.
const mapWBLog = 4 << 20

// wbStrBytes is the bytes that k and v's strings take in the log.
func (m *Map[K, V]) wbStrBytes(k *K, v *V) int {
	n := 0
	if m.strK {
		n += len(*(*string)(unsafe.Pointer(k)))
	}
	if m.strV {
		n += len(*(*string)(unsafe.Pointer(v)))
	}
	return n
}

// wbLogStrings copies the strings of the pair just recorded into the log
// and points the recorded pair at the copies: the caller's strings live in
// the Go heap, which the buffer must not point into.
func (m *Map[K, V]) wbLogStrings() {
	i := len(m.wb.keys) - 1
	if m.strK {
		m.wbLogString((*string)(unsafe.Pointer(&m.wb.keys[i])))
	}
	if m.strV {
		m.wbLogString((*string)(unsafe.Pointer(&m.wb.vals[i])))
	}
}

func (m *Map[K, V]) wbLogString(sp *string) {
	s := *sp
	if len(s) == 0 {
		*sp = ""
		return
	}
	at := len(m.wb.log)
	m.wb.log = append(m.wb.log, s...) // within cap: putBehind checked
	*sp = unsafe.String(&m.wb.log[at], len(s))
}

// wbAlloc makes a buffer of n pairs (and, for a map with strings, a byte
// log); without room for it Puts go direct.
func (m *Map[K, V]) wbAlloc(n int) bool {
	var zk K
	var zv V
	kb := mapRoundUp(uintptr(n)*unsafe.Sizeof(zk), 64)
	vb := mapRoundUp(uintptr(n)*unsafe.Sizeof(zv), 64)
	var lb uintptr
	if m.strK || m.strV {
		lb = mapWBLog
	}
	blk, err := kdev(m.dev).Alloc(block.Host, uint64(kb+vb+lb+64), 64)
	if err != nil {
		m.wb.off = true
		return false
	}
	m.held.Add(blk)
	m.wb.blk = blk
	m.wb.keys = unsafe.Slice((*K)(blk.Ptr()), n)[:0]
	m.wb.vals = unsafe.Slice((*V)(unsafe.Add(blk.Ptr(), kb)), n)[:0]
	if lb > 0 {
		m.wb.log = unsafe.Slice((*byte)(unsafe.Add(blk.Ptr(), kb+vb)), lb)[:0]
	}
	return true
}

// wbFree gives the buffer back (Close, or for a larger one).
func (m *Map[K, V]) wbFree() {
	if m.wb.keys != nil {
		m.held.Forget(m.wb.blk)
		kdev(m.dev).Free(m.wb.blk)
		m.wb.keys, m.wb.vals, m.wb.log, m.wb.blk = nil, nil, nil, block.Block{}
	}
}

// wbDrop forgets the recorded Puts (Clear, Close).
func (m *Map[K, V]) wbDrop() {
	m.wb.keys, m.wb.vals, m.wb.log = m.wb.keys[:0], m.wb.vals[:0], m.wb.log[:0]
}

// settle stores everything pending: the batcher's stores, then the
// recorded Puts (which may store through the batcher again). The caller
// is a writer, or a reader holding flushMu (flushForRead).
func (m *Map[K, V]) settle() error {
	m.flushBatch()
	var err error
	if len(m.wb.keys) > 0 {
		err = m.wbApply()
		m.flushBatch()
	}
	m.pending.Store(false)
	if err != nil && m.tier != nil {
		// Recorded Puts that did not reach the table were already in the
		// tier: it would answer with values the table does not have.
		m.tier.invalidateAll()
	}
	return err
}

// flushBatch writes the batcher's pending stores.
func (m *Map[K, V]) flushBatch() {
	if t := m.t; t != nil && t.bat != nil {
		t.bat.Flush()
	}
}

// wbApply stores the recorded Puts by one PutBatch; where the kernels are
// missing, or the batch cannot get device memory for its work, one by one
// the direct way (which can grow the table). The pairs are consumed
// whatever happens: on an error (device lost, or a growth that the room
// check did not foresee failing) those not stored are lost, and the error
// is returned to the call that applied them.
func (m *Map[K, V]) wbApply() error {
	// The pairs (and the log their strings point into) stay as they are
	// until the next Put records over them: nothing else writes the buffer.
	keys, vals := m.wb.keys, m.wb.vals
	m.wbDrop()
	if len(keys) < mapWBDirect {
		return m.wbDirect(keys, vals)
	}
	hmode, ok := m.gpuMode()
	if !ok {
		// Strings: the CPU's batch path (putMany's, without its tier
		// drop: each recorded Put updated the tier already), the slots of
		// string keys found by a GPU round where the kernels take them.
		m.version++
		m.wb.batches++
		if m.strK {
			if err := m.putLocated(keys, vals); !errors.Is(err, errNoLocate) {
				return err
			}
		}
		return m.putStored(keys, vals)
	}
	err := mapWBFail // tests: the batch fails as a GPU's may
	if err == nil {
		err = m.gpuPut(hmode, keys, vals)
	}
	m.putBatchDone()
	if err == nil {
		m.wb.batches++
		return nil
	}
	if errors.Is(err, kern.ErrNoKernels) {
		m.wb.off = true
	} else if !errors.Is(err, vmem.ErrOutOfMemory) {
		return err
	}
	// The batch stored all or nothing of each chunk; storing every pair
	// again, in order, is the same as storing the rest.
	return m.wbDirect(keys, vals)
}

// wbDirect stores pairs one by one, the direct way.
func (m *Map[K, V]) wbDirect(keys []K, vals []V) error {
	m.version++
	for i := range keys {
		if err := m.put(&keys[i], &vals[i], m.hash(&keys[i])); err != nil {
			return err
		}
	}
	return nil
}

// errNoLocate: putLocated stored nothing; the CPU path stores the pairs.
var errNoLocate = errors.New("collections: no GPU round for the keys' slots")

// putLocated stores recorded pairs with string keys whose slots a GPU
// round found: the kernel probes the table for every key of the buffer at
// the GPU's speed, where the CPU's probes would read a record's two lines
// per key over PCIe (about half of a recorded Put's cost:
// docs/benchmarks.md). A key found is overwritten through the store
// batcher; with fixed-size values a key given twice gets both stores, the
// later last, and with string values only the last (the kernel returned
// the field it replaces, whose bytes the overwrite frees). A key not
// found (new, or too long for the kernel's images) is stored the direct
// way. errNoLocate, when the kernels or their memory are missing: nothing
// was stored.
func (m *Map[K, V]) putLocated(keys []K, vals []V) error {
	if !m.locMode() || mapWBFail != nil {
		return errNoLocate
	}
	t := m.t
	j, err := m.gpuJobBegin(t, mapGPUStr, min(len(keys), mapGPUChunk), false, true)
	if err != nil {
		if errors.Is(err, kern.ErrNoKernels) || errors.Is(err, vmem.ErrOutOfMemory) {
			return errNoLocate
		}
		return err
	}
	defer j.close()
	// The round brought the device's copy of the control bytes in step
	// with this version; the new keys stored below change the host's.
	defer func() { m.version++ }()
	for lo := 0; lo < len(keys); lo += j.c {
		if m.t != t {
			// A direct store grew the table: the job's rounds would probe
			// the old one. The rest go the CPU's way.
			return m.putStored(keys[lo:], vals[lo:])
		}
		hi := min(lo+j.c, len(keys))
		m.flushBatch() // a round reads what the one before stored
		j.putKeys(0, unsafe.Pointer(&keys[lo]), hi-lo)
		if err := j.run(hi-lo, false); err != nil {
			if lo == 0 && errors.Is(err, kern.ErrNoKernels) {
				return errNoLocate
			}
			return err
		}
		j.long.Store(0)
		locs := j.olocs[:hi-lo]
		var later []bool
		if m.strV {
			later = mapLaterFound(locs, ^uint64(0))
		}
		for i, r := range locs {
			k, v := &keys[lo+i], &vals[lo+i]
			if r != ^uint64(0) && later != nil && later[i] {
				continue
			}
			if r != ^uint64(0) && m.t == t {
				l := mapLoc{b: r >> 3, i: int(r & 7)}
				if m.strV {
					err = m.overwriteStr(t, l, j.oold[i], v)
				} else {
					err = m.store(t, l, m.r.valOff, unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v)))
				}
				if err != nil {
					return err
				}
				continue
			}
			if err := m.put(k, v, m.hash(k)); err != nil {
				return err
			}
		}
	}
	m.wb.located++
	return nil
}

// mapLaterFound marks the keys whose location (absent: not found) is
// found again later in locs: their Puts are replaced by the later one.
func mapLaterFound(locs []uint64, absent uint64) []bool {
	later := make([]bool, len(locs))
	seen := make(map[uint64]struct{})
	for i := len(locs) - 1; i >= 0; i-- {
		if r := locs[i]; r != absent {
			_, later[i] = seen[r]
			seen[r] = struct{}{}
		}
	}
	return later
}
