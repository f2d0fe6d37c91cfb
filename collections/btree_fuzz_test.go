package collections

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/btree"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// The differential harness: a byte string decodes into a configuration
// and a list of operations, run side by side on a BTree and on
// google/btree (the model); every result and every iteration is compared.

type btItem struct{ k, v uint64 }

func btItemLess(a, b btItem) bool { return a.k < b.k }

// btCodec maps the model's uint64 keys and values to a tree's types.
type btCodec[K, V any] struct {
	name string
	key  func(uint64) K
	kOf  func(K) uint64
	val  func(uint64) V
	vOf  func(V) uint64
	make func(d *vmem.Device, opts ...BTreeOption) (*BTree[K, V], error)
}

// Test key and value types of awkward sizes: 12-byte keys straddle lines
// and take a generic less; 12-byte values pack 5 to a line; 100-byte values
// take two lines each; empty values take none.
type btK12 [3]uint32
type btName string
type btV12 [3]uint32
type btV100 struct {
	A uint64
	B [23]uint32
}

func btK12Less(a, b btK12) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

var (
	btCodecU64 = btCodec[uint64, uint64]{
		name: "u64",
		key:  func(k uint64) uint64 { return k }, kOf: func(k uint64) uint64 { return k },
		val: func(v uint64) uint64 { return v }, vOf: func(v uint64) uint64 { return v },
		make: func(d *vmem.Device, o ...BTreeOption) (*BTree[uint64, uint64], error) {
			return NewBTreeOrdered[uint64, uint64](d, o...)
		},
	}
	btCodecI64 = btCodec[int64, btV12]{
		name: "i64-v12",
		key:  func(k uint64) int64 { return int64(k) - 1<<40 }, kOf: func(k int64) uint64 { return uint64(k + 1<<40) },
		val: func(v uint64) btV12 { return btV12{uint32(v), uint32(v >> 32), 7} },
		vOf: func(v btV12) uint64 { return uint64(v[0]) | uint64(v[1])<<32 },
		make: func(d *vmem.Device, o ...BTreeOption) (*BTree[int64, btV12], error) {
			return NewBTreeOrdered[int64, btV12](d, o...)
		},
	}
	btCodecK12 = btCodec[btK12, btV100]{
		name: "k12-v100",
		key:  func(k uint64) btK12 { return btK12{uint32(k >> 32), uint32(k), 5} },
		kOf:  func(k btK12) uint64 { return uint64(k[0])<<32 | uint64(k[1]) },
		val:  func(v uint64) btV100 { return btV100{A: v, B: [23]uint32{22: uint32(v)}} },
		vOf:  func(v btV100) uint64 { return v.A },
		make: func(d *vmem.Device, o ...BTreeOption) (*BTree[btK12, btV100], error) {
			return NewBTree[btK12, btV100](d, btK12Less, o...)
		},
	}
	btCodecStr = btCodec[uint64, btName]{
		name: "u64-string",
		key:  func(k uint64) uint64 { return k }, kOf: func(k uint64) uint64 { return k },
		val: func(v uint64) btName {
			if v%11 == 0 {
				return "" // the empty string takes no arena space
			}
			return btName(strconv.FormatUint(v, 10) + strings.Repeat("x", int(v%37)))
		},
		vOf: func(v btName) uint64 {
			n, _ := strconv.ParseUint(strings.TrimRight(string(v), "x"), 10, 64)
			return n
		},
		make: func(d *vmem.Device, o ...BTreeOption) (*BTree[uint64, btName], error) {
			return NewBTreeOrdered[uint64, btName](d, o...)
		},
	}
	btCodecSet = btCodec[uint32, struct{}]{
		name: "u32-set",
		key:  func(k uint64) uint32 { return uint32(k) }, kOf: func(k uint32) uint64 { return uint64(k) },
		val: func(uint64) struct{} { return struct{}{} }, vOf: func(struct{}) uint64 { return 0 },
		make: func(d *vmem.Device, o ...BTreeOption) (*BTree[uint32, struct{}], error) {
			return NewBTreeOrdered[uint32, struct{}](d, o...)
		},
	}
)

// btOptsFor picks a tree shape from a byte: small leaves, extents and index
// nodes reach splits and merges at every level within a few hundred keys.
func btOptsFor(c byte) []BTreeOption {
	var o []BTreeOption
	switch c % 4 {
	case 0:
		o = append(o, btWithLeafEntries(4), btWithExtentLeaves(4), btWithFan(4))
	case 1:
		o = append(o, btWithLeafEntries(5), btWithExtentLeaves(8), btWithFan(5))
	case 2:
		o = append(o, btWithLeafEntries(8), btWithExtentLeaves(2), btWithFan(6))
	}
	if c&4 != 0 {
		o = append(o, WithBTreeTier(vmem.Private))
	}
	if c&8 != 0 {
		o = append(o, btWithNaive())
	}
	return o
}

func btWithFan(n int) BTreeOption { return btOpt(func(c *btConfig) { c.fan = n }) }

// btWithLeafEntries sets how many entries a leaf holds (3 to 255), so
// that small trees have many leaves and levels.
func btWithLeafEntries(n int) BTreeOption { return btOpt(func(c *btConfig) { c.leafEntries = n }) }

// btWithExtentLeaves sets how many leaves an extent holds (rounded up to a
// power of two, at least 2), so that small trees span several extents.
func btWithExtentLeaves(n int) BTreeOption { return btOpt(func(c *btConfig) { c.extent = n }) }

func btWithNaive() BTreeOption { return btOpt(func(c *btConfig) { c.naive = true }) }

// btReader decodes operation arguments, yielding zeros when exhausted.
type btReader struct{ b []byte }

func (r *btReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *btReader) u16() uint64 { return uint64(r.byte()) | uint64(r.byte())<<8 }

// key draws keys from a small range so that operations collide, with an
// occasional large one.
func (r *btReader) key() uint64 {
	k := r.u16()
	if k&0x8000 != 0 {
		return k<<12 | k
	}
	return k & 511
}

// btRun runs the operations encoded in data on tree tr and the model.
func btRun[K, V any](t testing.TB, c btCodec[K, V], tr *BTree[K, V], data []byte) {
	m := btree.NewG(8, btItemLess)
	r := &btReader{b: data}
	step := 0
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s step %d: %s", c.name, step, fmt.Sprintf(format, args...))
	}
	var vseq uint64
	canon := func(v uint64) uint64 { return c.vOf(c.val(v)) }
	for ; len(r.b) > 0; step++ {
		op := r.byte()
		switch op % 16 {
		case 0, 1, 2, 3:
			k := r.key()
			vseq++
			v := canon(vseq*1_000_003 + k)
			old, rep, err := tr.ReplaceOrInsert(c.key(k), c.val(v))
			if err != nil {
				fail("ReplaceOrInsert: %v", err)
			}
			mo, mrep := m.ReplaceOrInsert(btItem{k, v})
			if rep != mrep || (rep && c.vOf(old) != mo.v) {
				fail("ReplaceOrInsert(%d) = %d,%v; model %d,%v", k, c.vOf(old), rep, mo.v, mrep)
			}
		case 4, 5:
			k := r.key()
			old, ok, err := tr.Delete(c.key(k))
			if err != nil {
				fail("Delete: %v", err)
			}
			mo, mok := m.Delete(btItem{k: k})
			if ok != mok || (ok && c.vOf(old) != mo.v) {
				fail("Delete(%d) = %d,%v; model %d,%v", k, c.vOf(old), ok, mo.v, mok)
			}
		case 6:
			k := r.key()
			v, ok := tr.Get(c.key(k))
			mv, mok := m.Get(btItem{k: k})
			if ok != mok || (ok && c.vOf(v) != mv.v) {
				fail("Get(%d) = %d,%v; model %d,%v", k, c.vOf(v), ok, mv.v, mok)
			}
			if tr.Has(c.key(k)) != mok {
				fail("Has(%d) != %v", k, mok)
			}
		case 7:
			k, v, ok, err := tr.DeleteMin()
			mi, mok := m.DeleteMin()
			if err != nil || ok != mok || (ok && (c.kOf(k) != mi.k || c.vOf(v) != mi.v)) {
				fail("DeleteMin = %d,%d,%v,%v; model %v,%v", c.kOf(k), c.vOf(v), ok, err, mi, mok)
			}
		case 8:
			k, v, ok, err := tr.DeleteMax()
			mi, mok := m.DeleteMax()
			if err != nil || ok != mok || (ok && (c.kOf(k) != mi.k || c.vOf(v) != mi.v)) {
				fail("DeleteMax = %d,%d,%v,%v; model %v,%v", c.kOf(k), c.vOf(v), ok, err, mi, mok)
			}
		case 9:
			btRunMinMax(c, tr, m, fail)
		case 10, 11:
			a, b := r.key(), r.key()
			limit := int(r.byte())
			which := op / 16 % 8
			btCompareScan(t, c, tr, m, which, a, b, limit, fail)
		case 12:
			// A bulk load of ascending keys above the maximum.
			btRunBulkLoad(c, tr, m, r, canon, fail)
		case 13:
			if r.byte() < 16 {
				if err := tr.Clear(); err != nil {
					fail("Clear: %v", err)
				}
				m.Clear(false)
			}
		default:
			btCompareScan(t, c, tr, m, op/16%8, 0, 0, -1, fail)
		}
		if tr.Len() != m.Len() {
			fail("Len %d, model %d", tr.Len(), m.Len())
		}
	}
	btCompareScan(t, c, tr, m, 0, 0, 0, -1, fail)
	btCompareScan(t, c, tr, m, 4, 0, 0, -1, fail)
	if err := tr.verify(); err != nil {
		fail("invariant: %v", err)
	}
	if err := tr.Err(); err != nil {
		fail("Err: %v", err)
	}
}

// btRunMinMax compares Min and Max of the tree and the model.
func btRunMinMax[K, V any](c btCodec[K, V], tr *BTree[K, V], m *btree.BTreeG[btItem], fail func(string, ...any)) {
	k, v, ok := tr.Min()
	mi, mok := m.Min()
	if ok != mok || (ok && (c.kOf(k) != mi.k || c.vOf(v) != mi.v)) {
		fail("Min = %d,%d,%v; model %v,%v", c.kOf(k), c.vOf(v), ok, mi, mok)
	}
	k, v, ok = tr.Max()
	mi, mok = m.Max()
	if ok != mok || (ok && (c.kOf(k) != mi.k || c.vOf(v) != mi.v)) {
		fail("Max = %d,%d,%v; model %v,%v", c.kOf(k), c.vOf(v), ok, mi, mok)
	}
}

// btRunBulkLoad bulk-loads ascending keys read from r, above the maximum or
// (refused) not, into the tree and the model.
func btRunBulkLoad[K, V any](c btCodec[K, V], tr *BTree[K, V], m *btree.BTreeG[btItem], r *btReader, canon func(uint64) uint64, fail func(string, ...any)) {
	n := int(r.byte())
	base := uint64(0)
	if mi, ok := m.Max(); ok {
		base = mi.k + 1
	}
	if r.byte()&1 == 0 && m.Len() > 0 {
		// Keys that do not lie above the maximum are refused.
		base = 0
	}
	keys := make([]K, n)
	vals := make([]V, n)
	mk := make([]uint64, n)
	for i := range n {
		mk[i] = base
		if i > 0 {
			mk[i] = mk[i-1] + uint64(1+i%3)
		}
		keys[i], vals[i] = c.key(mk[i]), c.val(mk[i]*7)
	}
	err := tr.BulkLoad(keys, vals)
	mi, haveMax := m.Max()
	if n > 0 && haveMax && mk[0] <= mi.k {
		if !errors.Is(err, ErrUnsorted) {
			fail("BulkLoad below the maximum: %v", err)
		}
		return
	}
	if err != nil {
		fail("BulkLoad: %v", err)
	}
	for i := range n {
		m.ReplaceOrInsert(btItem{mk[i], canon(mk[i] * 7)})
	}
}

// btCompareScan runs one scan on both and compares the sequences: each of
// google/btree's callbacks against its govram form (a break in the loop
// where the callback returns false). limit < 0 is unbounded; bounds a, b
// are model keys.
func btCompareScan[K, V any](t testing.TB, c btCodec[K, V], tr *BTree[K, V], m *btree.BTreeG[btItem], which byte, a, b uint64, limit int, fail func(string, ...any)) {
	var got, want []btItem
	// take collects seq's entries, breaking out of the loop before the
	// first key for which until (if not nil) holds and after limit
	// entries, as the model's callback stops.
	take := func(seq iter.Seq2[K, V], until func(k uint64) bool) {
		for k, v := range seq {
			mk := c.kOf(k)
			if until != nil && until(mk) {
				break
			}
			got = append(got, btItem{mk, c.vOf(v)})
			if limit >= 0 && len(got) >= limit {
				break
			}
		}
	}
	mt := func(it btItem) bool {
		want = append(want, it)
		return limit < 0 || len(want) < limit
	}
	atOrAbove := func(p uint64) func(uint64) bool { return func(k uint64) bool { return k >= p } }
	atOrBelow := func(p uint64) func(uint64) bool { return func(k uint64) bool { return k <= p } }
	ka, kb := c.key(a), c.key(b)
	name := ""
	var runs []btItem
	switch which {
	case 0:
		name = "All"
		take(tr.All(), nil)
		m.Ascend(mt)
		runs = btRunsOf(c, tr, nil, nil, limit, fail)
	case 1:
		name = "Range"
		take(tr.Range(ka, kb), nil)
		m.AscendRange(btItem{k: a}, btItem{k: b}, mt)
		runs = btRunsOf(c, tr, &ka, &kb, limit, fail)
	case 2:
		name = "Ascend"
		take(tr.Ascend(ka), nil)
		m.AscendGreaterOrEqual(btItem{k: a}, mt)
	case 3:
		name = "All until b" // AscendLessThan
		take(tr.All(), atOrAbove(b))
		m.AscendLessThan(btItem{k: b}, mt)
	case 4:
		name = "Backward"
		take(tr.Backward(), nil)
		m.Descend(mt)
	case 5:
		name = "Descend until a" // DescendRange
		take(tr.Descend(kb), atOrBelow(a))
		m.DescendRange(btItem{k: b}, btItem{k: a}, mt)
	case 6:
		name = "Descend"
		take(tr.Descend(kb), nil)
		m.DescendLessOrEqual(btItem{k: b}, mt)
	case 7:
		name = "Backward until a/Range/All/Backward/Ascend/Descend" // DescendGreaterThan
		take(tr.Backward(), atOrBelow(a))
		m.DescendGreaterThan(btItem{k: a}, mt)
		btCompareSeqs(c, tr, m, a, b, ka, kb, limit, fail)
	}
	if which <= 1 && !slices.Equal(runs, want) {
		fail("%s runs(%d, %d, limit %d): %d items, model %d", name, a, b, limit, len(runs), len(want))
	}
	if !slices.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		var g, w btItem
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		fail("%s(%d, %d, limit %d): %d items, model %d; first difference at %d: %v, model %v", name, a, b, limit, len(got), len(want), i, g, w)
	}
}

// btRunsOf collects the runs that All (lo, hi nil) and Range hand their
// loop bodies, stopping at limit as the sequences do; it checks that runs
// are non-empty and that keys and values pair up.
func btRunsOf[K, V any](c btCodec[K, V], tr *BTree[K, V], lo, hi *K, limit int, fail func(string, ...any)) []btItem {
	var out []btItem
	next, stop, _ := tr.runsOf("Range", lo, hi)
	defer stop()
	for {
		keys, vals := next()
		if keys == nil {
			return out
		}
		if len(keys) == 0 || len(keys) != len(vals) {
			fail("a run of %d keys and %d values", len(keys), len(vals))
		}
		for i := range keys {
			out = append(out, btItem{c.kOf(keys[i]), c.vOf(vals[i])})
			if limit >= 0 && len(out) >= limit {
				return out
			}
		}
	}
}

// btCompareSeqs runs the sequences (Range, Backward, All, Ascend, Descend)
// on both and compares them, the ascending ones stopped after limit items
// only when it is odd; ka and kb are the tree's forms of a and b.
func btCompareSeqs[K, V any](c btCodec[K, V], tr *BTree[K, V], m *btree.BTreeG[btItem], a, b uint64, ka, kb K, limit int, fail func(string, ...any)) {
	// The iter.Seq2 forms against the same model sequences; All and
	// Range stop after limit items when it is odd.
	lim := limit
	if limit%2 == 0 {
		lim = -1
	}
	var r []btItem
	for k, v := range tr.Range(ka, kb) {
		r = append(r, btItem{c.kOf(k), c.vOf(v)})
		if lim >= 0 && len(r) >= lim {
			break
		}
	}
	var mr []btItem
	m.AscendRange(btItem{k: a}, btItem{k: b}, func(it btItem) bool { mr = append(mr, it); return lim < 0 || len(mr) < lim })
	if !slices.Equal(r, mr) {
		fail("Range(%d, %d): %d items, model %d", a, b, len(r), len(mr))
	}
	r, mr = r[:0], mr[:0]
	for k, v := range tr.Backward() {
		r = append(r, btItem{c.kOf(k), c.vOf(v)})
		if limit >= 0 && len(r) >= limit {
			break
		}
	}
	m.Descend(func(it btItem) bool { mr = append(mr, it); return limit < 0 || len(mr) < limit })
	if !slices.Equal(r, mr) {
		fail("Backward: %d items, model %d", len(r), len(mr))
	}
	r, mr = r[:0], mr[:0]
	for k, v := range tr.All() {
		r = append(r, btItem{c.kOf(k), c.vOf(v)})
		if lim >= 0 && len(r) >= lim {
			break
		}
	}
	m.Ascend(func(it btItem) bool { mr = append(mr, it); return lim < 0 || len(mr) < lim })
	if !slices.Equal(r, mr) {
		fail("All: %d items, model %d", len(r), len(mr))
	}
	r, mr = r[:0], mr[:0]
	for k, v := range tr.Ascend(ka) {
		r = append(r, btItem{c.kOf(k), c.vOf(v)})
		if lim >= 0 && len(r) >= lim {
			break
		}
	}
	m.AscendGreaterOrEqual(btItem{k: a}, func(it btItem) bool { mr = append(mr, it); return lim < 0 || len(mr) < lim })
	if !slices.Equal(r, mr) {
		fail("Ascend(%d): %d items, model %d", a, len(r), len(mr))
	}
	r, mr = r[:0], mr[:0]
	for k, v := range tr.Descend(kb) {
		r = append(r, btItem{c.kOf(k), c.vOf(v)})
		if limit >= 0 && len(r) >= limit {
			break
		}
	}
	m.DescendLessOrEqual(btItem{k: b}, func(it btItem) bool { mr = append(mr, it); return limit < 0 || len(mr) < limit })
	if !slices.Equal(r, mr) {
		fail("Descend(%d): %d items, model %d", b, len(r), len(mr))
	}
}

// btDevices opens the devices a differential run covers: the host backend,
// the host backend with a tiny mapped tier (leaves spill into the private
// tier and go by DMA), and Vulkan where present.
func btDevices(t testing.TB) []*vmem.Device {
	t.Helper()
	devs := []*vmem.Device{
		vmemtest.Open(t, vmem.BackendHost, vmem.Options{}),
		vmemtest.Open(t, vmem.BackendHost, vmem.Options{ChunkSize: 64 << 10, Limits: [3]uint64{vmem.Mapped: 64 << 10}}),
	}
	if d, err := vmem.Open(vmem.Options{Backend: vmem.BackendVulkan}); err == nil {
		t.Cleanup(func() {
			vmemtest.CheckNoLeaks(t, d)
			d.Close()
		})
		devs = append(devs, d)
	} else if vmemtest.RequireVulkan() {
		t.Fatalf("no Vulkan device: %v", err)
	}
	return devs
}

// btCodecs is how many codecs btRunAll chooses from.
const btCodecs = 5

// btRunAll runs data with the codec its first byte picks.
func btRunAll(t testing.TB, d *vmem.Device, data []byte) {
	if len(data) < 2 {
		return
	}
	opts := btOptsFor(data[1])
	switch data[0] % btCodecs {
	case 0:
		btRunCodec(t, d, btCodecU64, opts, data[2:])
	case 1:
		btRunCodec(t, d, btCodecI64, opts, data[2:])
	case 2:
		btRunCodec(t, d, btCodecK12, opts, data[2:])
	case 3:
		btRunCodec(t, d, btCodecSet, opts, data[2:])
	case 4:
		btRunCodec(t, d, btCodecStr, opts, data[2:])
	}
}

func btRunCodec[K, V any](t testing.TB, d *vmem.Device, c btCodec[K, V], opts []BTreeOption, data []byte) {
	tr, err := c.make(d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	btRun(t, c, tr, data)
}

func btRandomOps(rng *rand.Rand, n int) []byte {
	b := make([]byte, 0, 4*n)
	for range n {
		b = append(b, byte(rng.IntN(256)))
		b = binary.LittleEndian.AppendUint16(b, uint16(rng.IntN(1024)))
		b = append(b, byte(rng.IntN(256)))
	}
	return b
}

func FuzzBTree(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 7))
	for c := range 24 {
		f.Add(append([]byte{byte(c), byte(c)}, btRandomOps(rng, 200)...))
	}
	devs := btDevices(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		// One device per input keeps executions cheap (minimizing an
		// input runs it many times); the input picks which.
		if len(data) == 0 {
			return
		}
		d := devs[int(data[0]>>2)%len(devs)]
		btRunAll(t, d, data)
		vmemtest.CheckNoLeaks(t, d)
	})
}
