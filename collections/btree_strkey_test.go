package collections

import (
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/btree"
	"github.com/govram/govram/collections/internal/strarena"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// String keys: a differential harness against google/btree over a pool of
// awkward strings (shared long prefixes, every length around the 8-byte
// prefix, long keys, 0x00 and 0xff bytes, invalid UTF-8), with both value
// kinds and with orders given by a less function.

type bsItem struct {
	k string
	v uint64
}

// bsPool returns the keys a run draws from, deterministic for a seed.
func bsPool(seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 99))
	p := []string{"", "\x00", "\xff", "\x00\x00", "\xff\xff", "a", "a\x00", "a\xff"}
	for n := 1; n <= 17; n++ {
		p = append(p, strings.Repeat("a", n), strings.Repeat("\x00", n), strings.Repeat("\xff", n),
			strings.Repeat("a", n-1)+"\x00", strings.Repeat("a", n-1)+"b", strings.Repeat("ab", n)[:n])
	}
	// Around the prefix: equal first 8 bytes, then every kind of tail.
	for _, tail := range []string{"", "\x00", "\x01", "\xff", "i", "ij", "\x00\x00", "ijklmnop", "ijklmnopq", strings.Repeat("z", 300)} {
		p = append(p, "abcdefgh"+tail, "abcdefg"+tail)
	}
	for _, w := range []string{"app", "apple", "apples", "applesauce", "application", "applications", "apply", "applying", "Apple", "APPLE", "banana", "band", "bandana", "bandwidth", "internationalization", "internationalize", "international"} {
		p = append(p, w)
	}
	hosts := []string{"https://www.example.com", "https://www.example.org", "http://example.com", "https://www.example.com.evil"}
	for range 80 {
		h := hosts[rng.IntN(len(hosts))]
		p = append(p, fmt.Sprintf("%s/products/%d/items?id=%d&sort=%s", h, rng.IntN(20), rng.IntN(1000), []string{"asc", "desc"}[rng.IntN(2)]))
	}
	for range 60 {
		p = append(p, fmt.Sprintf("/usr/local/lib/go/src/%s/%s_%d.go", []string{"net/http", "net/url", "net", "runtime", "runtime/internal"}[rng.IntN(5)], "file", rng.IntN(50)))
	}
	// Long keys sharing most of their bytes, one a prefix of another.
	long := strings.Repeat("0123456789abcdef", 256) // 4 KiB
	for range 20 {
		n := 1024 + rng.IntN(3072)
		p = append(p, long[:n], long[:n]+"\x00", long[:n-1]+"\xff", long[:n/2]+"!"+long[:n/3])
	}
	// Bytes of every value, invalid UTF-8 among them.
	for range 120 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		p = append(p, string(b))
	}
	p = append(p, "\xc3\x28", "\xe2\x82\x28", "\xf0\x28\x8c\xbc", "\x80", "a\x80b")
	slices.Sort(p)
	return slices.Compact(p)
}

// bsRandomOps returns n operations' worth of random bytes.
func bsRandomOps(rng *rand.Rand, n int) []byte {
	b := make([]byte, 5*n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// bsVal maps the model's values to a tree's.
type bsVal[V any] struct {
	val func(uint64) V
	vOf func(V) uint64
}

var (
	bsU64 = bsVal[uint64]{func(v uint64) uint64 { return v }, func(v uint64) uint64 { return v }}
	bsStr = bsVal[string]{
		func(v uint64) string {
			if v%7 == 0 {
				return ""
			}
			return strconv.FormatUint(v, 10) + strings.Repeat("v", int(v%29))
		},
		func(v string) uint64 { n, _ := strconv.ParseUint(strings.TrimRight(v, "v"), 10, 64); return n },
	}
)

// bsOrder is the order of a run: the tree's constructor and the model's.
type bsOrder[K any] struct {
	name string
	less func(a, b string) bool // nil: <
}

var bsOrders = []bsOrder[string]{
	{"bytes", nil},
	{"reverse", func(a, b string) bool { return a > b }},
	{"fold", func(a, b string) bool { return strings.ToLower(a) < strings.ToLower(b) }},
}

func bsMake[V any](d *vmem.Device, less func(a, b string) bool, opts ...BTreeOption) (*BTree[string, V], error) {
	if less == nil {
		return NewBTreeOrdered[string, V](d, opts...)
	}
	return NewBTree[string, V](d, less, opts...)
}

// bsRun runs the operations encoded in data on a string-keyed tree and on
// google/btree.
func bsRun[V any](t testing.TB, d *vmem.Device, vc bsVal[V], less func(a, b string) bool, opts []BTreeOption, pool []string, data []byte) {
	tr, err := bsMake[V](d, less, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	lessK := less
	if lessK == nil {
		lessK = func(a, b string) bool { return a < b }
	}
	m := btree.NewG(8, func(a, b bsItem) bool { return lessK(a.k, b.k) })
	r := &btReader{b: data}
	step := 0
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("step %d: %s", step, fmt.Sprintf(format, args...))
	}
	key := func() string {
		i := int(r.u16())
		if i&0xf000 == 0xf000 && len(r.b) > 0 {
			// A fresh key from the input's own bytes.
			n := min(int(r.byte())%20, len(r.b))
			k := string(r.b[:n])
			r.b = r.b[n:]
			return k
		}
		return pool[i%len(pool)]
	}
	canon := func(v uint64) uint64 { return vc.vOf(vc.val(v)) }
	var vseq uint64
	for ; len(r.b) > 0; step++ {
		op := r.byte()
		switch op % 16 {
		case 0, 1, 2, 3:
			k := key()
			vseq++
			v := canon(vseq*1_000_003 + uint64(len(k)))
			old, rep, err := tr.ReplaceOrInsert(k, vc.val(v))
			if err != nil {
				fail("ReplaceOrInsert: %v", err)
			}
			// The tree keeps the stored key on an overwrite.
			it := bsItem{k, v}
			if mo, ok := m.Get(it); ok {
				it.k = mo.k
			}
			mo, mrep := m.ReplaceOrInsert(it)
			if rep != mrep || (rep && vc.vOf(old) != mo.v) {
				fail("ReplaceOrInsert(%q) = %d,%v; model %d,%v", k, vc.vOf(old), rep, mo.v, mrep)
			}
		case 4:
			k := key()
			old, ok, err := tr.Delete(k)
			if err != nil {
				fail("Delete: %v", err)
			}
			mo, mok := m.Delete(bsItem{k: k})
			if ok != mok || (ok && vc.vOf(old) != mo.v) {
				fail("Delete(%q) = %d,%v; model %d,%v", k, vc.vOf(old), ok, mo.v, mok)
			}
		case 5, 6:
			k := key()
			v, ok := tr.Get(k)
			mv, mok := m.Get(bsItem{k: k})
			if ok != mok || (ok && vc.vOf(v) != mv.v) {
				fail("Get(%q) = %d,%v; model %d,%v", k, vc.vOf(v), ok, mv.v, mok)
			}
			if tr.Has(k) != mok {
				fail("Has(%q) != %v", k, mok)
			}
		case 7, 8, 9:
			bsEdges(tr, m, vc, op%16, r, fail)
		case 10, 11:
			a, b := key(), key()
			bsCompareScan(tr, m, vc, lessK, op/16%8, a, b, int(r.byte()), fail)
		case 12:
			bsBulk(tr, m, vc, lessK, pool, r, fail)
		case 13:
			bsGetBatch(tr, m, vc, key, r, fail)
		case 14:
			if r.byte() < 3 {
				if err := tr.Clear(); err != nil {
					fail("Clear: %v", err)
				}
				m.Clear(false)
			}
		default:
			bsCompareScan(tr, m, vc, lessK, op/16%8, "", "", -1, fail)
		}
		if tr.Len() != m.Len() {
			fail("Len %d, model %d", tr.Len(), m.Len())
		}
		if step%32 == 0 {
			if err := bsVerify(tr); err != nil {
				fail("%v", err)
			}
		}
	}
	for which := range byte(8) {
		bsCompareScan(tr, m, vc, lessK, which, "", "", -1, fail)
	}
	if err := bsVerify(tr); err != nil {
		fail("%v", err)
	}
	if err := tr.Err(); err != nil {
		fail("Err: %v", err)
	}
}

// bsBulk bulk-loads keys above the maximum (or, at times, not above it,
// which must be refused).
func bsBulk[V any](tr *BTree[string, V], m *btree.BTreeG[bsItem], vc bsVal[V], less func(a, b string) bool, pool []string, r *btReader, fail func(string, ...any)) {
	n := int(r.byte() % 48)
	var keys []string
	mx, haveMax := m.Max()
	below := r.byte()&3 == 0 && haveMax
	for _, k := range pool {
		if !haveMax || below || less(mx.k, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	keys = slices.CompactFunc(keys, func(a, b string) bool { return !less(a, b) && !less(b, a) })
	if len(keys) > n {
		off := int(r.byte()) % (len(keys) - n + 1)
		keys = keys[off : off+n]
	}
	vals := make([]V, len(keys))
	for i, k := range keys {
		vals[i] = vc.val(uint64(len(k))*7 + uint64(i))
	}
	err := tr.BulkLoad(keys, vals)
	if len(keys) > 0 && haveMax && !less(mx.k, keys[0]) {
		if !errors.Is(err, ErrUnsorted) {
			fail("BulkLoad below the maximum: %v", err)
		}
		return
	}
	if err != nil {
		fail("BulkLoad: %v", err)
	}
	for i, k := range keys {
		m.ReplaceOrInsert(bsItem{k, vc.vOf(vals[i])})
	}
}

// bsCompareScan runs one scan on both and compares them: each of
// google/btree's callbacks against its govram form (a break in the loop
// where the callback returns false); limit < 0 is unbounded.
func bsCompareScan[V any](tr *BTree[string, V], m *btree.BTreeG[bsItem], vc bsVal[V], less func(a, b string) bool, which byte, a, b string, limit int, fail func(string, ...any)) {
	if less(b, a) {
		a, b = b, a
	}
	var got, want, runs []bsItem
	// take collects seq's entries into dst, breaking out of the loop
	// before the first key for which until (if not nil) holds and after
	// limit entries, as the model's callback stops.
	take := func(dst *[]bsItem, seq iter.Seq2[string, V], until func(string) bool) {
		for k, v := range seq {
			if until != nil && until(k) {
				break
			}
			*dst = append(*dst, bsItem{k, vc.vOf(v)})
			if limit >= 0 && len(*dst) >= limit {
				break
			}
		}
	}
	mt := func(it bsItem) bool {
		want = append(want, it)
		return limit < 0 || len(want) < limit
	}
	// runsOf collects the runs under All and Range, with their keys
	// converted from the stored records.
	runsOf := func(lo, hi *string) {
		next, stop, _ := tr.runsOf("Range", lo, hi)
		defer stop()
		for {
			keys, vals := next()
			if keys == nil {
				return
			}
			if len(keys) == 0 || len(keys) != len(vals) {
				fail("a run of %d keys and %d values", len(keys), len(vals))
			}
			for i := range keys {
				runs = append(runs, bsItem{keys[i], vc.vOf(vals[i])})
				if limit >= 0 && len(runs) >= limit {
					return
				}
			}
		}
	}
	notBelow := func(p string) func(string) bool { return func(k string) bool { return !less(k, p) } }
	notAbove := func(p string) func(string) bool { return func(k string) bool { return !less(p, k) } }
	A, B := bsItem{k: a}, bsItem{k: b}
	switch which {
	case 0:
		take(&got, tr.All(), nil)
		m.Ascend(mt)
		runsOf(nil, nil)
	case 1:
		take(&got, tr.Range(a, b), nil)
		m.AscendRange(A, B, mt)
		runsOf(&a, &b)
	case 2:
		take(&got, tr.Ascend(a), nil)
		m.AscendGreaterOrEqual(A, mt)
	case 3:
		take(&got, tr.All(), notBelow(b)) // AscendLessThan
		m.AscendLessThan(B, mt)
	case 4:
		take(&got, tr.Backward(), nil)
		m.Descend(mt)
	case 5:
		take(&got, tr.Descend(b), notAbove(a)) // DescendRange
		m.DescendRange(B, A, mt)
	case 6:
		take(&got, tr.Descend(b), nil)
		m.DescendLessOrEqual(B, mt)
		take(&runs, tr.Backward(), notAbove(a)) // DescendGreaterThan
		var w []bsItem
		m.DescendGreaterThan(A, func(it bsItem) bool { w = append(w, it); return limit < 0 || len(w) < limit })
		if !slices.Equal(runs, w) {
			fail("Backward until %q: %d items, model %d", a, len(runs), len(w))
		}
		runs = nil
	case 7:
		take(&got, tr.Range(a, b), nil)
		m.AscendRange(A, B, mt)
		var keys []bsItem
		for k, v := range tr.All() {
			keys = append(keys, bsItem{k, vc.vOf(v)})
		}
		var all []bsItem
		m.Ascend(func(it bsItem) bool { all = append(all, it); return true })
		if !slices.Equal(keys, all) {
			fail("All: %d items, model %d", len(keys), len(all))
		}
		i := 0
		for k := range keysOf(tr.All()) {
			if i >= len(all) || k != all[i].k {
				fail("Keys: item %d = %q", i, k)
			}
			i++
		}
	}
	if which <= 1 && !slices.Equal(runs, want) {
		fail("scan %d runs(%q, %q, limit %d): %d items, model %d", which, a, b, limit, len(runs), len(want))
	}
	if !slices.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		fail("scan %d(%q, %q, limit %d): %d items, model %d; first difference at %d", which, a, b, limit, len(got), len(want), i)
	}
}

// bsVerify checks the tree's invariants and its key arena: every stored
// key of a leaf and every orphan is a live string, counted once, and every
// separator of the index holds one of them (none was freed under it).
func bsVerify[K, V any](tr *BTree[K, V]) error {
	s := tr.sk
	if err := s.in.verify(); err != nil {
		return err
	}
	live := map[strarena.Handle]bool{}
	for r := range s.in.All() {
		if r.h&^btSKSlots == btSKProbe {
			return fmt.Errorf("a search record %#x was stored", r.h)
		}
		if btSKStored(r) {
			live[r.h] = true
		} else if r.h.Len() > btSKInline {
			return fmt.Errorf("record %#x: long key not stored", r.h)
		}
	}
	for _, h := range s.orphans {
		if live[h] {
			return fmt.Errorf("orphan %#x is a leaf's key", h)
		}
		live[h] = true
	}
	if st := s.arena.Stats(); st.Strings != len(live) {
		return fmt.Errorf("key arena holds %d strings, leaves and orphans %d", st.Strings, len(live))
	}
	x := &s.in.idx
	if x.height > 0 {
		for _, h := range btSKSeparators(x, x.root, x.height-1, nil) {
			if !live[h] {
				return fmt.Errorf("separator %#x names a freed key", h)
			}
		}
	}
	if err := s.arena.Check(); err != nil {
		return err
	}
	if s.wH != 0 || s.wS != "" {
		return errors.New("writer context left set")
	}
	return nil
}

// TestBTreeStrKeyDifferential runs random operation streams on
// string-keyed trees, ordered by < and by less functions, with integer and
// string values, on every device, against google/btree.
func TestBTreeStrKeyDifferential(t *testing.T) {
	ops, seeds := 1500, 3
	if testing.Short() {
		ops, seeds = 400, 2
	}
	if buildconst.Invariants {
		ops, seeds = 600, 1
	}
	defer func(n int) { btSKSweepMin = n }(btSKSweepMin)
	btSKSweepMin = 8 // sweeps often
	for _, d := range btDevices(t) {
		t.Run(btDevName(d), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			for seed := range seeds {
				pool := bsPool(uint64(seed))
				for oi, o := range bsOrders {
					opts := btOptsFor(byte(seed*3 + oi))
					t.Run(fmt.Sprintf("%d/%s", seed, o.name), func(t *testing.T) {
						data := bsRandomOps(rng, ops)
						bsRun(t, d, bsU64, o.less, opts, pool, data)
						bsRun(t, d, bsStr, o.less, opts, pool, data)
					})
				}
			}
			vmemtest.CheckNoLeaks(t, d)
		})
	}
}

func FuzzBTreeStrKey(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 5))
	for c := range 12 {
		f.Add(append([]byte{byte(c), byte(c)}, bsRandomOps(rng, 200)...))
	}
	devs := btDevices(f)
	pool := bsPool(0)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		d := devs[int(data[0]>>3)%len(devs)]
		less := bsOrders[int(data[0])%len(bsOrders)].less
		opts := btOptsFor(data[1])
		if data[0]&4 == 0 {
			bsRun(t, d, bsU64, less, opts, pool, data[2:])
		} else {
			bsRun(t, d, bsStr, less, opts, pool, data[2:])
		}
		vmemtest.CheckNoLeaks(t, d)
	})
}

// bsEdges runs DeleteMin or DeleteMax (op 7, 8: a quarter of the time, so
// that the tree grows), or Min and Max (op 9).
func bsEdges[V any](tr *BTree[string, V], m *btree.BTreeG[bsItem], vc bsVal[V], op byte, r *btReader, fail func(string, ...any)) {
	if op == 9 {
		k, v, ok := tr.Min()
		mi, mok := m.Min()
		if ok != mok || (ok && (k != mi.k || vc.vOf(v) != mi.v)) {
			fail("Min = %q,%d,%v; model %q,%v", k, vc.vOf(v), ok, mi.k, mok)
		}
		k, v, ok = tr.Max()
		mi, mok = m.Max()
		if ok != mok || (ok && (k != mi.k || vc.vOf(v) != mi.v)) {
			fail("Max = %q,%d,%v; model %q,%v", k, vc.vOf(v), ok, mi.k, mok)
		}
		return
	}
	if r.byte() >= 64 {
		return // rarer than inserts, so that the tree grows
	}
	var err error
	var k string
	var v V
	var ok bool
	var mi bsItem
	var mok bool
	if op == 7 {
		k, v, ok, err = tr.DeleteMin()
		mi, mok = m.DeleteMin()
	} else {
		k, v, ok, err = tr.DeleteMax()
		mi, mok = m.DeleteMax()
	}
	if err != nil || ok != mok || (ok && (k != mi.k || vc.vOf(v) != mi.v)) {
		fail("DeleteMin/Max(%d) = %q,%d,%v,%v; model %q,%v", op, k, vc.vOf(v), ok, err, mi.k, mok)
	}
}

// bsGetBatch looks up a batch of keys.
func bsGetBatch[V any](tr *BTree[string, V], m *btree.BTreeG[bsItem], vc bsVal[V], key func() string, r *btReader, fail func(string, ...any)) {
	keys := make([]string, int(r.byte()%24))
	for i := range keys {
		keys[i] = key()
	}
	vals := make([]V, len(keys))
	found := make([]bool, len(keys))
	if err := tr.GetBatch(keys, vals, found); err != nil {
		fail("GetBatch: %v", err)
	}
	for i, k := range keys {
		mv, mok := m.Get(bsItem{k: k})
		if found[i] != mok || (mok && vc.vOf(vals[i]) != mv.v) {
			fail("GetBatch[%d] %q = %d,%v; model %d,%v", i, k, vc.vOf(vals[i]), found[i], mv.v, mok)
		}
	}
}
