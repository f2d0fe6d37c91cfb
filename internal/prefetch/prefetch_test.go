package prefetch

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// Prefetching changes no memory and never faults, whatever the strings:
// empty ones, one-byte ones, and ones that end at the last byte of their
// buffer.
func TestStrings(t *testing.T) {
	buf := strings.Repeat("abcdefgh", 1024)
	ss := []string{"", "x", buf, buf[len(buf)-1:], buf[:0], buf[100:4097]}
	want := append([]string(nil), ss...)
	for i := 0; i <= len(ss); i++ {
		Strings(ss[:i])
	}
	Strings(nil)
	for i := range ss {
		if ss[i] != want[i] {
			t.Fatalf("string %d changed: %q", i, ss[i])
		}
	}
}

// Line changes no memory and never faults, at any offset of a line,
// the first and last byte of a buffer included.
func TestLine(t *testing.T) {
	buf := make([]byte, 256)
	for i := range buf {
		buf[i] = byte(i)
	}
	for i := range buf {
		Line(unsafe.Pointer(&buf[i]))
	}
	for i := range buf {
		if buf[i] != byte(i) {
			t.Fatalf("byte %d changed: %d", i, buf[i])
		}
	}
}

// Span changes no memory and never faults, for spans that start and end
// anywhere in a line, the buffer's first and last bytes included.
func TestSpan(t *testing.T) {
	buf := make([]byte, 512)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for lo := range buf {
		for n := 0; lo+n <= len(buf); n += 1 + n/3 {
			Span(unsafe.Pointer(&buf[lo]), uintptr(n))
		}
	}
	for i := range buf {
		if buf[i] != byte(i*7) {
			t.Fatalf("byte %d changed: %d", i, buf[i])
		}
	}
	// A span that ends at the last byte before an unreadable page: a
	// fetch past its end would fault where lines are fetched by loads.
	pg := syscall.Getpagesize()
	m, err := syscall.Mmap(-1, 0, 2*pg, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Skip(err)
	}
	defer syscall.Munmap(m)
	if err := syscall.Mprotect(m[pg:], syscall.PROT_NONE); err != nil {
		t.Skip(err)
	}
	for _, n := range []int{1, 63, 64, 65, 200, pg} {
		Span(unsafe.Pointer(&m[pg-n]), uintptr(n))
	}
}

// The bytes of strings scattered over a large heap, hashed in order (as a
// batch of keys picked from a large map is): without help, touching 16 at a
// time first, and prefetching 16 at a time some strings ahead.
func BenchmarkStrings(b *testing.B) {
	const n = 1 << 23
	all := make([]string, n)
	for i := range all {
		all[i] = fmt.Sprintf("https://example.com/%d/path/%x/item", i, i*2654435761)
	}
	ks := make([]string, 1<<20)
	x := uint64(88172645463325252)
	for i := range ks {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		ks[i] = all[x%n]
	}
	seed := maphash.MakeSeed()
	out := make([]byte, 96*len(ks))
	body := func(i int) {
		h := maphash.String(seed, ks[i])
		var img [96]byte
		binary.LittleEndian.PutUint64(img[:], h)
		copy(img[12:], ks[i])
		copy(out[i*96:], img[:])
	}
	b.Run("none", func(b *testing.B) {
		for range b.N {
			for i := range ks {
				body(i)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ks)), "ns/key")
	})
	b.Run("touch16", func(b *testing.B) {
		var t byte
		for range b.N {
			for i := range ks {
				if i%16 == 0 {
					for _, s := range ks[i:min(i+16, len(ks))] {
						t += s[0] + s[len(s)-1]
					}
				}
				body(i)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ks)), "ns/key")
	})
	for _, ahead := range []int{16, 32, 64} {
		b.Run(fmt.Sprintf("ahead%d", ahead), func(b *testing.B) {
			for range b.N {
				Strings(ks[:min(ahead, len(ks))])
				for i := range ks {
					if i%16 == 0 && i+ahead < len(ks) {
						Strings(ks[i+ahead : min(i+ahead+16, len(ks))])
					}
					body(i)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ks)), "ns/key")
		})
	}
}
