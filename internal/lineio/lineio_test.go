package lineio

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"
)

// forEachKind runs f once under every variant this CPU supports.
func forEachKind(t *testing.T, f func(t *testing.T)) {
	for _, k := range Kinds() {
		t.Run(k, func(t *testing.T) {
			withKind(t, k)
			f(t)
		})
	}
}

func withKind(tb testing.TB, k string) {
	prev := Kind
	if err := SetKind(k); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = SetKind(prev) })
}

func ptr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

func fill(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

func TestKinds(t *testing.T) {
	ks := Kinds()
	if len(ks) == 0 || ks[len(ks)-1] != "generic" {
		t.Fatalf("Kinds() = %v, want generic last", ks)
	}
	if ks[0] != Kind && !strings.Contains(strings.Join(ks, " "), Kind) {
		t.Fatalf("Kind %q not among %v", Kind, ks)
	}
	if err := SetKind("avx9000"); err == nil {
		t.Fatal("SetKind accepted an unknown variant")
	}
	t.Logf("variant in use: %s; supported: %v", Kind, ks)
}

func TestLoadStore(t *testing.T) {
	forEachKind(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		mem := mapRegion(t, 64*LineSize)
		fill(r, mem)
		for i := 0; i < 64; i++ {
			var got [LineSize]byte
			Load(&got, ptr(mem[i*LineSize:]))
			if !bytes.Equal(got[:], mem[i*LineSize:(i+1)*LineSize]) {
				t.Fatalf("Load line %d differs", i)
			}
		}
		want := slices.Clone(mem)
		for _, i := range r.Perm(64)[:20] {
			var line [LineSize]byte
			fill(r, line[:])
			Store(ptr(mem[i*LineSize:]), &line)
			copy(want[i*LineSize:], line[:])
		}
		Fence()
		if !bytes.Equal(mem, want) {
			t.Fatal("Store: memory differs from model")
		}
	})
}

func TestLoadStoreLines(t *testing.T) {
	forEachKind(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		mem := mapRegion(t, 64*LineSize)
		for n := 0; n <= 13; n++ {
			for _, hostOff := range []int{0, 1, 8, 33} {
				fill(r, mem)
				start := r.IntN(64 - n + 1)
				host := make([]byte, hostOff+n*LineSize+7)
				dst := host[hostOff : hostOff+n*LineSize]
				LoadLines(dst, ptr(mem[start*LineSize:]))
				if !bytes.Equal(dst, mem[start*LineSize:(start+n)*LineSize]) {
					t.Fatalf("LoadLines n=%d hostOff=%d differs", n, hostOff)
				}

				fill(r, host)
				want := slices.Clone(mem)
				copy(want[start*LineSize:], dst)
				StoreLines(ptr(mem[start*LineSize:]), dst)
				Fence()
				if !bytes.Equal(mem, want) {
					t.Fatalf("StoreLines n=%d hostOff=%d: memory differs", n, hostOff)
				}
			}
		}
	})
}

func TestGather(t *testing.T) {
	forEachKind(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		mem := mapRegion(t, 256*LineSize)
		fill(r, mem)
		for n := 0; n <= 13; n++ {
			srcs := make([]unsafe.Pointer, n)
			want := make([]byte, 0, n*LineSize)
			for i := range srcs {
				l := r.IntN(256)
				srcs[i] = ptr(mem[l*LineSize:])
				want = append(want, mem[l*LineSize:(l+1)*LineSize]...)
			}
			got := make([]byte, n*LineSize+1)[1:] // unaligned host buffer
			Gather(got, srcs)
			if !bytes.Equal(got, want) {
				t.Fatalf("Gather n=%d differs", n)
			}
		}
	})
}

func TestScatter(t *testing.T) {
	forEachKind(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 14))
		mem := mapRegion(t, 256*LineSize)
		for n := 0; n <= 13; n++ {
			fill(r, mem)
			want := slices.Clone(mem)
			src := make([]byte, n*LineSize+3)[3:] // unaligned host buffer
			fill(r, src)
			dsts := make([]unsafe.Pointer, n)
			for i, l := range r.Perm(256)[:n] {
				dsts[i] = ptr(mem[l*LineSize:])
				copy(want[l*LineSize:(l+1)*LineSize], src[i*LineSize:])
			}
			Scatter(dsts, src)
			Fence()
			if !bytes.Equal(mem, want) {
				t.Fatalf("Scatter n=%d: memory differs", n)
			}
		}
	})
}

// copyCase checks one Copy against copy() and that no byte outside the
// destination range changed.
func copyCase(t *testing.T, r *rand.Rand, src, dst []byte, so, do, n int) {
	t.Helper()
	fill(r, src)
	fill(r, dst)
	want := slices.Clone(dst)
	copy(want[do:do+n], src[so:so+n])
	Copy(ptr(dst[do:]), ptr(src[so:]), uintptr(n))
	if !bytes.Equal(dst, want) {
		i := 0
		for dst[i] == want[i] {
			i++
		}
		t.Fatalf("Copy(srcOff=%d, dstOff=%d, n=%d): first wrong byte at dst offset %d (range starts at %d)", so, do, n, i, do)
	}
}

func TestCopy(t *testing.T) {
	forEachKind(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		size := 3*copyChunk + 4*LineSize
		src := mapRegion(t, size)
		dst := mapRegion(t, size)
		offs := []int{0, 1, 7, 8, 31, 32, 33, 63}
		lens := []int{0, 1, 2, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 191, 192, 193,
			255, 256, 257, 1000, copyChunk - 1, copyChunk, copyChunk + 1, copyChunk + 63, 2*copyChunk + 77}
		for _, so := range offs {
			for _, do := range offs {
				for _, n := range lens {
					copyCase(t, r, src, dst, so, do, n)
				}
			}
		}
		// Random shapes, including offsets past the first line.
		for range 300 {
			n := r.IntN(3 * copyChunk)
			so := r.IntN(size - n + 1)
			do := r.IntN(size - n + 1)
			copyCase(t, r, src, dst, so, do, n)
		}
	})
}

// TestCopyHeap runs Copy on Go heap slices, where the race detector's
// pointer checks (checkptr) watch every unsafe conversion in Go code.
func TestCopyHeap(t *testing.T) {
	forEachKind(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		for range 200 {
			n := r.IntN(600)
			src := make([]byte, n+r.IntN(70))
			dst := make([]byte, n+r.IntN(70))
			so := r.IntN(len(src) - n + 1)
			do := r.IntN(len(dst) - n + 1)
			copyCase(t, r, src, dst, so, do, n)
		}
	})
}

func TestMisuse(t *testing.T) {
	mem := mapRegion(t, 4*LineSize)
	var line [LineSize]byte
	cases := map[string]func(){
		"Load unaligned":       func() { Load(&line, ptr(mem[8:])) },
		"Store unaligned":      func() { Store(ptr(mem[1:]), &line) },
		"LoadLines unaligned":  func() { LoadLines(make([]byte, 64), ptr(mem[16:])) },
		"LoadLines odd length": func() { LoadLines(make([]byte, 65), ptr(mem)) },
		"StoreLines unaligned": func() { StoreLines(ptr(mem[32:]), make([]byte, 64)) },
		"Gather wrong length":  func() { Gather(make([]byte, 64), nil) },
		"Gather unaligned":     func() { Gather(make([]byte, 64), []unsafe.Pointer{ptr(mem[4:])}) },
		"Scatter wrong length": func() { Scatter(nil, make([]byte, 64)) },
		"Scatter unaligned":    func() { Scatter([]unsafe.Pointer{ptr(mem[4:])}, make([]byte, 64)) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}

func TestCopyZeroAndNil(t *testing.T) {
	Copy(nil, nil, 0) // nothing to copy: must not touch either pointer
	CopyUnfenced(nil, nil, 0)
}

func TestCopyUnfenced(t *testing.T) {
	forEachKind(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		src := mapRegion(t, 8192)
		dst := mapRegion(t, 8192)
		fill(r, src)
		want := slices.Clone(dst)
		for _, c := range [][3]int{{0, 0, 4096}, {3, 70, 1000}, {64, 5000, 129}} {
			CopyUnfenced(ptr(dst[c[1]:]), ptr(src[c[0]:]), uintptr(c[2]))
			copy(want[c[1]:], src[c[0]:c[0]+c[2]])
		}
		Fence()
		if !bytes.Equal(dst, want) {
			t.Fatal("CopyUnfenced differs")
		}
	})
}

// sizes for benchmarks, in bytes.
var benchSizes = []int{64, 1 << 10, 16 << 10, 256 << 10, 1 << 20}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

func benchKinds(b *testing.B, f func(b *testing.B)) {
	for _, k := range Kinds() {
		b.Run(k, func(b *testing.B) {
			withKind(b, k)
			f(b)
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	mem := mapRegion(b, 1<<20)
	benchKinds(b, func(b *testing.B) {
		var line [LineSize]byte
		b.SetBytes(LineSize)
		i := 0
		for b.Loop() {
			Load(&line, ptr(mem[i:]))
			i = (i + 4096 + LineSize) & (len(mem) - 1)
		}
	})
}

func BenchmarkStore(b *testing.B) {
	mem := mapRegion(b, 1<<20)
	benchKinds(b, func(b *testing.B) {
		var line [LineSize]byte
		b.SetBytes(LineSize)
		i := 0
		for b.Loop() {
			Store(ptr(mem[i:]), &line)
			i = (i + 4096 + LineSize) & (len(mem) - 1)
		}
		Fence()
	})
}

func BenchmarkLoadLines(b *testing.B) {
	mem := mapRegion(b, 1<<20)
	benchKinds(b, func(b *testing.B) {
		for _, n := range benchSizes {
			b.Run(sizeName(n), func(b *testing.B) {
				dst := make([]byte, n)
				b.SetBytes(int64(n))
				for b.Loop() {
					LoadLines(dst, ptr(mem))
				}
			})
		}
	})
}

// benchRegion is where store benchmarks write: 64 MiB, faulted in, walked
// through so that each operation writes lines not written just before (an
// NT store to a line still being written back waits for it).
const benchRegion = 64 << 20

func faultedRegion(b *testing.B) []byte {
	mem := mapRegion(b, benchRegion+LineSize)
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	return mem
}

func BenchmarkStoreLines(b *testing.B) {
	mem := faultedRegion(b)
	benchKinds(b, func(b *testing.B) {
		for _, n := range benchSizes {
			b.Run(sizeName(n), func(b *testing.B) {
				src := make([]byte, n)
				b.SetBytes(int64(n))
				at := 0
				for b.Loop() {
					StoreLines(ptr(mem[at:]), src)
					at = (at + n) % (benchRegion - n + 1) &^ (LineSize - 1)
				}
				Fence()
			})
		}
	})
}

func BenchmarkGather(b *testing.B) {
	const region = 64 << 20
	mem := mapRegion(b, region)
	fill(rand.New(rand.NewPCG(1, 1)), mem) // fault every page in before timing
	r := rand.New(rand.NewPCG(2, 2))
	srcs := make([]unsafe.Pointer, 64)
	for i := range srcs {
		srcs[i] = ptr(mem[r.IntN(region/LineSize)*LineSize:])
	}
	benchKinds(b, func(b *testing.B) {
		dst := make([]byte, len(srcs)*LineSize)
		b.SetBytes(int64(len(dst)))
		for b.Loop() {
			Gather(dst, srcs)
		}
	})
}

func BenchmarkScatter(b *testing.B) {
	mem := faultedRegion(b)
	r := rand.New(rand.NewPCG(3, 3))
	dsts := make([]unsafe.Pointer, 64)
	benchKinds(b, func(b *testing.B) {
		src := make([]byte, len(dsts)*LineSize)
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			b.StopTimer()
			for i := range dsts {
				dsts[i] = ptr(mem[r.IntN(benchRegion/LineSize)*LineSize:])
			}
			b.StartTimer()
			Scatter(dsts, src)
		}
		Fence()
	})
}

// BenchmarkCopy copies host memory into a 64 MiB off-heap region, with
// matching line offsets ("coaligned": streaming loads feed NT stores
// directly) and with different ones ("shifted": through a stack buffer).
// Each Copy ends with its fence; "unfenced" shows what the fence costs.
func BenchmarkCopy(b *testing.B) {
	src := mapRegion(b, 1<<20+LineSize)
	dst := faultedRegion(b)
	benchKinds(b, func(b *testing.B) {
		for _, shape := range []struct {
			name    string
			so, do  int
			unfence bool
		}{{"coaligned", 0, 0, false}, {"shifted", 8, 40, false}, {"coaligned-unfenced", 0, 0, true}} {
			for _, n := range benchSizes {
				b.Run(shape.name+"/"+sizeName(n), func(b *testing.B) {
					b.SetBytes(int64(n))
					at := 0
					for b.Loop() {
						d, s := ptr(dst[at+shape.do:]), ptr(src[shape.so:])
						if shape.unfence {
							CopyUnfenced(d, s, uintptr(n))
						} else {
							Copy(d, s, uintptr(n))
						}
						at = (at + n + LineSize) % (benchRegion - n - LineSize) &^ (LineSize - 1)
					}
					Fence()
				})
			}
		}
	})
}

// TestStoreRelease: a reader that sees the flag sees the data stored
// before it.
func TestStoreRelease(t *testing.T) {
	var data [64]uint64
	var flag uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(1); i <= 2000; i++ {
			for k := range data {
				atomic.StoreUint64(&data[k], i)
			}
			StoreRelease(&flag, i)
		}
	}()
	for {
		f := atomic.LoadUint64(&flag)
		for k := range data {
			if d := atomic.LoadUint64(&data[k]); d < f {
				t.Fatalf("flag %d seen before data[%d] = %d", f, k, d)
			}
		}
		if f == 2000 {
			break
		}
	}
	<-done
}
