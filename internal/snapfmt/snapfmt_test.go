package snapfmt

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 5<<20+3)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for _, cut := range []int{0, 1, 7, 4096, 1 << 20, len(buf) - 1, len(buf)} {
		a, b := buf[:cut], buf[cut:]
		if got, want := Combine(Sum(a), Sum(b), int64(len(b))), Sum(buf); got != want {
			t.Errorf("cut %d: Combine %08x, Sum %08x", cut, got, want)
		}
	}
	for _, n := range []int{0, 1, 2<<20 - 1, 2 << 20, 3<<20 + 5, len(buf)} {
		if got, want := Checksum(buf[:n]), Sum(buf[:n]); got != want {
			t.Errorf("Checksum of %d bytes %08x, Sum %08x", n, got, want)
		}
	}
}

// TestCombineSmall checks Combine on every split of short random strings,
// lengths 0 to 300: every bit pattern of small lengths.
func TestCombineSmall(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 300; n++ {
		buf := make([]byte, n)
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		for cut := 0; cut <= n; cut++ {
			if got, want := Combine(Sum(buf[:cut]), Sum(buf[cut:]), int64(n-cut)), Sum(buf); got != want {
				t.Fatalf("%d bytes cut at %d: Combine %08x, Sum %08x", n, cut, got, want)
			}
		}
	}
}

// TestCombineParts joins the CRCs of equal parts (the last one shorter or
// not) and checks the result against the CRC of the whole.
func TestCombineParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 1<<16+100)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for _, part := range []int{1, 4, 16, 2048, 4096} {
		for _, n := range []int{1, part, part + 1, 3*part - 1, 5 * part, len(buf)} {
			n = min(n, len(buf))
			var sums []uint32
			last := 0
			for o := 0; o < n; o += part {
				e := min(o+part, n)
				sums = append(sums, Sum(buf[o:e]))
				last = e - o
			}
			if got, want := CombineParts(sums, part, last), Sum(buf[:n]); got != want {
				t.Errorf("%d bytes in parts of %d: %08x, want %08x", n, part, got, want)
			}
		}
	}
	if got := CombineParts(nil, 16, 0); got != Sum(nil) {
		t.Errorf("no parts: %08x", got)
	}
}

func BenchmarkCombineParts(b *testing.B) {
	sums := make([]uint32, 8192)
	for b.Loop() {
		CombineParts(sums, 2048, 2048)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(sums)), "ns/part")
}

func BenchmarkCombine(b *testing.B) {
	for b.Loop() {
		Combine(0x12345678, 0x9abcdef0, 1<<20)
	}
}

type fpA struct{ X, Y uint32 }
type fpB struct{ Y, X uint32 }
type fpC struct{ X uint64 }

func TestFingerprint(t *testing.T) {
	types := []reflect.Type{
		reflect.TypeFor[uint64](), reflect.TypeFor[int64](), reflect.TypeFor[float64](),
		reflect.TypeFor[uint32](), reflect.TypeFor[fpA](), reflect.TypeFor[fpB](), reflect.TypeFor[fpC](),
		reflect.TypeFor[[2]uint32](), reflect.TypeFor[[8]byte](), reflect.TypeFor[string](),
	}
	seen := map[uint64]reflect.Type{}
	for _, ty := range types {
		fp := Fingerprint(KindSlice, ty)
		if o, ok := seen[fp]; ok {
			t.Errorf("%v and %v share fingerprint %x", o, ty, fp)
		}
		seen[fp] = ty
		if Fingerprint(KindSlice, ty) != fp {
			t.Errorf("%v: fingerprint not stable", ty)
		}
		if Fingerprint(KindRing, ty) == fp {
			t.Errorf("%v: kind not part of the fingerprint", ty)
		}
	}
	u := reflect.TypeFor[uint64]()
	if Fingerprint(KindMap, u, reflect.TypeFor[string]()) == Fingerprint(KindMap, reflect.TypeFor[string](), u) {
		t.Error("key and value order not part of the fingerprint")
	}
}

func writeSnap(t *testing.T, bs uint32, body []byte, count uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Kind: KindMap, BlockSize: bs, Fingerprint: 42, Count: count})
	if err != nil {
		t.Fatal(err)
	}
	// Odd-sized writes cross block boundaries.
	for p := body; len(p) > 0; {
		k := min(len(p), 37)
		if _, err := w.Write(p[:k]); err != nil {
			t.Fatal(err)
		}
		p = p[k:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestStream(t *testing.T) {
	body := make([]byte, 1000)
	for i := range body {
		body[i] = byte(i * 7)
	}
	for _, bs := range []uint32{1, 64, 999, 1000, 1001, 4096} {
		data := writeSnap(t, bs, body, 3)
		for _, src := range []io.Reader{bytes.NewReader(data), bytes.NewBuffer(data)} {
			r, err := NewReader(src, KindMap, 42)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(body))
			if _, err := r.ReadFull(got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, body) {
				t.Fatalf("block size %d: body differs", bs)
			}
			if err := r.End(); err != nil {
				t.Fatalf("block size %d: %v", bs, err)
			}
		}
		if _, err := NewReader(bytes.NewReader(data), KindMap, 43); !errors.Is(err, ErrTypeMismatch) {
			t.Errorf("fingerprint mismatch: %v", err)
		}
		if _, err := NewReader(bytes.NewReader(data), KindRing, 42); !errors.Is(err, ErrTypeMismatch) {
			t.Errorf("kind mismatch: %v", err)
		}
	}
	// Every cut and every bit flip of a small stream is caught.
	data := writeSnap(t, 64, body[:150], 3)
	read := func(b []byte) error {
		r, err := NewReader(bytes.NewReader(b), KindMap, 42)
		if err != nil {
			return err
		}
		got := make([]byte, 150)
		if _, err := r.ReadFull(got); err != nil {
			return err
		}
		return r.End()
	}
	for cut := range len(data) {
		if err := read(data[:cut]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut %d: %v", cut, err)
		}
	}
	for bit := range 8 * len(data) {
		b := bytes.Clone(data)
		b[bit/8] ^= 1 << (bit % 8)
		if err := read(b); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bit %d: %v", bit, err)
		}
	}
	// Swapped blocks keep their own CRCs; the trailer catches them.
	swapped := bytes.Clone(data)
	blk := FrameHeaderSize + 64
	copy(swapped[HeaderSize:], data[HeaderSize+blk:HeaderSize+2*blk])
	copy(swapped[HeaderSize+blk:], data[HeaderSize:HeaderSize+blk])
	if err := read(swapped); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("swapped blocks: %v", err)
	}
}

func TestHeaderBounds(t *testing.T) {
	h := Header{Kind: KindSlice, BlockSize: MaxBlockSize + 1}
	b := h.Encode()
	if _, err := DecodeHeader(b[:]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("block size over the maximum: %v", err)
	}
	// A forged block length within bounds, in a stream that ends: the
	// reader's buffer grows only with the bytes that came.
	h = Header{Kind: KindMap, BlockSize: MaxBlockSize, Fingerprint: 1, Count: 1}
	b = h.Encode()
	s := append(b[:], 0, 0, 0, 4, 0, 0, 0, 0) // a 64 MiB block
	s = append(s, make([]byte, 100)...)
	r, err := NewReader(bytes.NewReader(s), KindMap, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.NextBlock(nil)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated 64 MiB block: %v", err)
	}
	if cap(r.buf) > 1<<20 {
		t.Errorf("buffer grew to %d bytes for 100 bytes of data", cap(r.buf))
	}
	// Wrap matches both sentinels.
	mine := errors.New("mine")
	if w := Wrap(err, mine, nil); !errors.Is(w, mine) || !errors.Is(w, ErrCorrupt) {
		t.Errorf("Wrap: %v", w)
	}
}

func FuzzReader(f *testing.F) {
	f.Add(writeSnapF(f, 16, []byte("hello, snapshot world")))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), KindMap, 42)
		if err != nil {
			return
		}
		io.Copy(io.Discard, readerOnly{r})
		r.End()
	})
}

func writeSnapF(f *testing.F, bs uint32, body []byte) []byte {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{Kind: KindMap, BlockSize: bs, Fingerprint: 42, Count: 1})
	w.Write(body)
	w.Close()
	return buf.Bytes()
}
