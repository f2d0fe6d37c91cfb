package lines

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/lineio"
)

func ptr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

func fill(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// forEachLineio runs f under every lineio variant the CPU has: the batcher
// reads and writes through it.
func forEachLineio(t *testing.T, f func(t *testing.T)) {
	for _, k := range lineio.Kinds() {
		t.Run(k, func(t *testing.T) {
			prev := lineio.Kind
			if err := lineio.SetKind(k); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = lineio.SetKind(prev) }()
			f(t)
		})
	}
}

// model is the plain byte-slice twin of a batcher over mem: want is what
// memory must hold after the next flush, and what Get must return now.
type model struct {
	t    testing.TB
	b    *Batcher
	mem  []byte
	want []byte
}

func newModel(t testing.TB, r *rand.Rand, lines, maxLines int) *model {
	mem := mapRegion(t, lines*LineSize)
	fill(r, mem)
	b, err := NewBatcher(ptr(mem), uintptr(len(mem)), maxLines)
	if err != nil {
		t.Fatal(err)
	}
	return &model{t: t, b: b, mem: mem, want: slices.Clone(mem)}
}

func (m *model) put(off int, data []byte) {
	m.t.Helper()
	err := m.b.Put(uintptr(off), data)
	if off+len(data) > len(m.mem) {
		if !errors.Is(err, ErrRange) {
			m.t.Fatalf("Put(%d, %d bytes) past the end: err = %v", off, len(data), err)
		}
		return
	}
	if err != nil {
		m.t.Fatalf("Put(%d, %d bytes): %v", off, len(data), err)
	}
	copy(m.want[off:], data)
}

func (m *model) putUint64(off int, v uint64) {
	m.t.Helper()
	err := m.b.PutUint64(uintptr(off), v)
	if off+8 > len(m.mem) {
		if !errors.Is(err, ErrRange) {
			m.t.Fatalf("PutUint64(%d) past the end: err = %v", off, err)
		}
		return
	}
	if err != nil {
		m.t.Fatal(err)
	}
	binary.NativeEndian.PutUint64(m.want[off:], v)
}

func (m *model) get(off, n int) {
	m.t.Helper()
	got := make([]byte, n)
	err := m.b.Get(uintptr(off), got)
	if off+n > len(m.mem) {
		if !errors.Is(err, ErrRange) {
			m.t.Fatalf("Get(%d, %d) past the end: err = %v", off, n, err)
		}
		return
	}
	if err != nil {
		m.t.Fatal(err)
	}
	if !bytes.Equal(got, m.want[off:off+n]) {
		m.t.Fatalf("Get(%d, %d) differs from the model", off, n)
	}
}

func (m *model) flush() {
	m.t.Helper()
	m.b.Flush()
	if m.b.Pending() != 0 {
		m.t.Fatalf("%d lines pending after Flush", m.b.Pending())
	}
	if !bytes.Equal(m.mem, m.want) {
		i := 0
		for m.mem[i] == m.want[i] {
			i++
		}
		m.t.Fatalf("after Flush, memory differs from the model at byte %d (line %d)", i, i/LineSize)
	}
}

func TestBatcherDifferential(t *testing.T) {
	forEachLineio(t, func(t *testing.T) {
		for _, maxLines := range []int{1, 3, 16, 100, 0} {
			t.Run(fmt.Sprint("maxLines=", maxLines), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(maxLines), 42))
				m := newModel(t, r, 256, maxLines)
				size := len(m.mem)
				buf := make([]byte, 5*LineSize)
				for range 20000 {
					switch op := r.IntN(100); {
					case op < 45: // small stores, clustered to merge
						n := 1 + r.IntN(24)
						off := r.IntN(size - n + 1)
						if r.IntN(2) == 0 {
							off = r.IntN(16)*LineSize + r.IntN(LineSize-n+1)
						}
						fill(r, buf[:n])
						m.put(off, buf[:n])
					case op < 55: // whole lines and multi-line spans
						n := LineSize * (1 + r.IntN(4))
						off := r.IntN(size/LineSize-n/LineSize+1) * LineSize
						if r.IntN(3) == 0 {
							n += r.IntN(50)
							off = r.IntN(size - n + 1)
						}
						fill(r, buf[:n])
						m.put(off, buf[:n])
					case op < 65:
						m.putUint64(r.IntN(size-7), r.Uint64())
					case op < 88:
						n := 1 + r.IntN(300)
						m.get(r.IntN(size-n+1), n)
					case op < 90: // out of range
						m.put(size-r.IntN(8), buf[:9])
						m.get(size-r.IntN(8), 9)
						m.putUint64(size-r.IntN(7), 1)
					case op < 92:
						m.get(0, size) // everything, pending or not
					default:
						m.flush()
					}
					if r.IntN(500) == 0 {
						m.b.check()
					}
				}
				m.flush()
				m.b.check()
				st := m.b.Stats()
				if st.Lines != st.FullLines+st.PartialLines || st.Flushes == 0 {
					t.Fatalf("inconsistent stats %+v", st)
				}
				if maxLines > 0 && maxLines < 100 && st.AutoFlushes == 0 {
					t.Fatalf("maxLines %d never filled: %+v", maxLines, st)
				}
			})
		}
	})
}

func TestBatcherPartialLineWritesOnlyDirtyBytes(t *testing.T) {
	mem := mapRegion(t, 4*LineSize)
	b, err := NewBatcher(ptr(mem), uintptr(len(mem)), 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(8, []byte("abcdefgh")); err != nil {
		t.Fatal(err)
	}
	if err := b.PutUint64(40, 0x0102030405060708); err != nil {
		t.Fatal(err)
	}
	// Someone else (the GPU, say) writes the rest of the line meanwhile.
	for i := range LineSize {
		mem[i] = 0xEE
	}
	b.Flush()
	for i, c := range mem[:LineSize] {
		dirty := i >= 8 && i < 16 || i >= 40 && i < 48
		if !dirty && c != 0xEE {
			t.Fatalf("byte %d rewritten: %#x", i, c)
		}
	}
	if string(mem[8:16]) != "abcdefgh" || binary.NativeEndian.Uint64(mem[40:]) != 0x0102030405060708 {
		t.Fatalf("dirty bytes not written: % x", mem[:LineSize])
	}
	if st := b.Stats(); st.PartialLines != 1 || st.FullLines != 0 || st.Merged != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBatcherGetSeesMemoryAndPending(t *testing.T) {
	mem := mapRegion(t, 8*LineSize)
	for i := range mem {
		mem[i] = byte(i)
	}
	b, _ := NewBatcher(ptr(mem), uintptr(len(mem)), 0)
	_ = b.Put(3*LineSize+10, []byte{0xAA, 0xBB})
	mem[3*LineSize+20] = 0xCC // changed behind the batcher: Get must see it
	got := make([]byte, 6*LineSize)
	if err := b.Get(LineSize, got); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(mem[LineSize : 7*LineSize])
	want[2*LineSize+10], want[2*LineSize+11] = 0xAA, 0xBB
	if !bytes.Equal(got, want) {
		t.Fatal("Get differs")
	}
	if v, err := GetValue[[2]byte](b, 3*LineSize+10); err != nil || v != [2]byte{0xAA, 0xBB} {
		t.Fatalf("GetValue = %v, %v", v, err)
	}
	if err := PutValue(b, 5*LineSize, [4]uint16{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	if v, _ := GetValue[[4]uint16](b, 5*LineSize); v != [4]uint16{1, 2, 3, 4} {
		t.Fatalf("GetValue after PutValue = %v", v)
	}
	if v, _ := b.GetUint64(5 * LineSize); v != binary.NativeEndian.Uint64([]byte{1, 0, 2, 0, 3, 0, 4, 0}) {
		t.Fatalf("GetUint64 = %#x", v)
	}
}

func TestBatcherFlushWhenFull(t *testing.T) {
	mem := mapRegion(t, 16*LineSize)
	b, _ := NewBatcher(ptr(mem), uintptr(len(mem)), 4)
	line := bytes.Repeat([]byte{7}, LineSize)
	for i := range 4 {
		_ = b.Put(uintptr(i*LineSize), line)
	}
	if b.Pending() != 4 || mem[0] != 0 {
		t.Fatal("flushed too early")
	}
	_ = b.Put(4*LineSize, line[:1]) // a fifth line: the first four go out
	if b.Pending() != 1 || !bytes.Equal(mem[:4*LineSize], bytes.Repeat(line, 4)) || mem[4*LineSize] != 0 {
		t.Fatalf("pending %d after the batch filled", b.Pending())
	}
	if st := b.Stats(); st.AutoFlushes != 1 || st.FullLines != 4 {
		t.Fatalf("stats %+v", st)
	}
	// A store spanning lines that fills the batch midway still lands whole.
	_ = b.Put(5*LineSize+32, bytes.Repeat([]byte{9}, 4*LineSize))
	b.Flush()
	for i := 5*LineSize + 32; i < 9*LineSize+32; i++ {
		if mem[i] != 9 {
			t.Fatalf("byte %d = %d", i, mem[i])
		}
	}
	b.check()
}

func TestBatcherDiscard(t *testing.T) {
	mem := mapRegion(t, 4*LineSize)
	b, _ := NewBatcher(ptr(mem), uintptr(len(mem)), 0)
	_ = b.Put(0, []byte{1, 2, 3})
	b.Discard()
	b.Flush()
	if mem[0] != 0 || b.Pending() != 0 {
		t.Fatal("Discard wrote or kept something")
	}
	_ = b.Put(0, []byte{4})
	if v, _ := b.GetUint64(0); byte(v) != 4 {
		t.Fatal("batcher unusable after Discard")
	}
	b.check()
}

func TestNewBatcherErrors(t *testing.T) {
	mem := mapRegion(t, 4*LineSize)
	if _, err := NewBatcher(ptr(mem[8:]), 64, 0); !errors.Is(err, ErrAlign) {
		t.Errorf("unaligned base: %v", err)
	}
	if _, err := NewBatcher(nil, 64, 0); err == nil {
		t.Error("nil base accepted")
	}
	for _, n := range []int{-1, MaxMaxLines + 1} {
		if _, err := NewBatcher(ptr(mem), 64, n); err == nil {
			t.Errorf("maxLines %d accepted", n)
		}
	}
	b, err := NewBatcher(ptr(mem), 100, 0) // size not a multiple of 64
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(96, make([]byte, 5)); !errors.Is(err, ErrRange) {
		t.Errorf("Put past size: %v", err)
	}
	if err := b.Put(^uintptr(0), make([]byte, 2)); !errors.Is(err, ErrRange) {
		t.Errorf("Put at overflowing offset: %v", err)
	}
	if err := b.Put(100, nil); err != nil {
		t.Errorf("empty Put at the end: %v", err)
	}
	if err := b.Put(64, bytes.Repeat([]byte{1}, 36)); err != nil {
		t.Fatal(err)
	}
	b.Flush() // the last line is partial: only its 36 bytes are written
	if mem[99] != 1 || mem[100] != 0 {
		t.Fatal("tail line written wrongly")
	}
	if b.Base() != ptr(mem) || b.Size() != 100 || b.MaxLines() != DefaultMaxLines {
		t.Fatal("accessors")
	}
}

func TestBatcherAllocationFree(t *testing.T) {
	if buildconst.Invariants {
		t.Skip("the invariant walk allocates")
	}
	mem := mapRegion(t, 1024*LineSize)
	b, _ := NewBatcher(ptr(mem), uintptr(len(mem)), 300)
	r := rand.New(rand.NewPCG(1, 1))
	var line [LineSize]byte
	var out [24]byte
	allocs := testing.AllocsPerRun(100, func() {
		for range 400 { // more than maxLines: includes automatic flushes
			off := uintptr(r.IntN(1023 * LineSize))
			_ = b.Put(off, line[:1+r.IntN(LineSize)])
			_ = b.PutUint64(off, 5)
			_ = b.Get(off, out[:])
			_, _ = GetValue[uint32](b, off)
			_ = PutValue(b, off, uint16(3))
		}
		b.Flush()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run", allocs)
	}
}

func TestFlushOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	const spanMin = sortMinSpan / LineSize
	for _, tc := range []struct {
		n      int
		span   uint64
		sorted bool
	}{
		{1, 1, false},
		{100, 1 << 10, false},                   // inside sortMinSpan
		{9000, spanMin - 1, false},              // still inside
		{8191, spanMin, false},                  // too sparse
		{8192, spanMin, true},                   // just dense enough: one pass
		{20000, 1 << 23, true},                  // one pass
		{70000, 1 << 25, true},                  // two passes
		{5000, MaxRegion / LineSize / 2, false}, // widest region, sparse
	} {
		b, _ := NewBatcher(unsafe.Pointer(&struct{ _ [64]byte }{}), 64, 1<<17)
		seen := map[uint64]bool{}
		for len(seen) < tc.n {
			// Both ends present so that the span is what the case says.
			l := r.Uint64N(tc.span)
			switch len(seen) {
			case 0:
				l = 0
			case 1:
				l = tc.span - 1
			}
			if !seen[l] {
				seen[l] = true
				b.line[b.n] = l + 7
				b.n++
			}
		}
		keys, mask := b.flushOrder()
		if got := mask != fullMask; got != tc.sorted {
			t.Fatalf("n=%d span=%d: sorted = %v, want %v", tc.n, tc.span, got, tc.sorted)
		}
		slots := map[uint64]bool{}
		prevBucket, prevSlot := uint64(0), -1
		for i, k := range keys {
			s := k & mask
			slots[s] = true
			if !tc.sorted {
				if s != uint64(i) {
					t.Fatalf("n=%d: unsorted order is not insertion order", tc.n)
				}
				continue
			}
			bucket := (b.line[s] - 7) >> sortBucketShift
			if i > 0 && (bucket < prevBucket || bucket == prevBucket && int(s) < prevSlot) {
				t.Fatalf("n=%d span=%d: key %d out of order (bucket %d after %d)", tc.n, tc.span, i, bucket, prevBucket)
			}
			prevBucket, prevSlot = bucket, int(s)
		}
		if len(slots) != tc.n || len(keys) != tc.n {
			t.Fatalf("n=%d: slots lost", tc.n)
		}
	}
}

// TestBatcherSortedFlush runs a batch dense enough to be sorted (and so
// written through the staging buffer) over a 300 MiB region, of which only
// the pages written are ever backed.
func TestBatcherSortedFlush(t *testing.T) {
	const size = 300 << 20
	mem := mapRegion(t, size)
	b, err := NewBatcher(ptr(mem), size, 1<<14)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	want := map[int][]byte{} // offset -> bytes written there last
	var buf [LineSize]byte
	for range 12000 {
		line := r.IntN(size / LineSize)
		o, n := 0, LineSize
		if r.IntN(4) == 0 { // a quarter of the lines partial
			o = r.IntN(LineSize - 8)
			n = 1 + r.IntN(LineSize-o)
		}
		fill(r, buf[:n])
		off := line*LineSize + o
		if err := b.Put(uintptr(off), buf[:n]); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			want[off+i] = []byte{buf[i]}
		}
	}
	// Lines stored twice merge; the batch holds what it holds.
	if b.Pending() < 11500 || b.Stats().AutoFlushes != 0 {
		t.Fatalf("pending %d, stats %+v", b.Pending(), b.Stats())
	}
	b.Flush()
	st := b.Stats()
	if st.SortedFlushes != 1 || st.FullLines == 0 || st.PartialLines == 0 {
		t.Fatalf("stats %+v: want one sorted flush with full and partial lines", st)
	}
	lines := map[int]bool{}
	for off, v := range want {
		if mem[off] != v[0] {
			t.Fatalf("byte %d = %#x, want %#x", off, mem[off], v[0])
		}
		lines[off/LineSize] = true
	}
	// Bytes of touched lines that were never stored stay zero.
	for l := range lines {
		for i := l * LineSize; i < (l+1)*LineSize; i++ {
			if _, ok := want[i]; !ok && mem[i] != 0 {
				t.Fatalf("byte %d written though never stored", i)
			}
		}
	}
	b.check()
}

func ExampleBatcher() {
	// Stand-in for a mapping of VRAM: 4 KiB, 64-byte aligned.
	buf := make([]byte, 4096+LineSize)
	mem := buf[-uintptr(unsafe.Pointer(&buf[0]))&(LineSize-1):][:4096]

	b, err := NewBatcher(unsafe.Pointer(&mem[0]), uintptr(len(mem)), 0)
	if err != nil {
		panic(err)
	}
	_ = b.PutUint64(128, 42)                    // 8 bytes of line 2
	_ = b.Put(256, bytes.Repeat([]byte{1}, 64)) // all of line 4
	_ = b.PutUint64(136, 43)                    // line 2 again: merged

	v, _ := b.GetUint64(136)
	fmt.Println("pending lines:", b.Pending(), "read back:", v, "in memory:", mem[136])
	b.Flush()
	st := b.Stats()
	fmt.Println("in memory:", mem[136], "full lines:", st.FullLines, "partial:", st.PartialLines)
	// Output:
	// pending lines: 2 read back: 43 in memory: 0
	// in memory: 43 full lines: 1 partial: 1
}
