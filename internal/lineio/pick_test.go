package lineio

import (
	"encoding/binary"
	"testing"
	"unsafe"
)

func TestLoadWordPairContaining(t *testing.T) {
	buf := make([]uint64, 64)
	for i := range buf {
		buf[i] = uint64(i)*0x0101010101010101 + 7
	}
	base := unsafe.Pointer(&buf[0])
	for _, k := range Kinds() {
		if err := SetKind(k); err != nil {
			t.Fatal(err)
		}
		for i := range buf {
			if got := LoadWord(unsafe.Add(base, i*8)); got != buf[i] {
				t.Fatalf("%s: LoadWord(%d) = %#x, want %#x", k, i, got, buf[i])
			}
		}
		for i := 0; i+1 < len(buf); i += 2 {
			// buf's backing array is 16-byte aligned for 64 words on amd64.
			p := unsafe.Add(base, i*8)
			if uintptr(p)%16 != 0 {
				continue
			}
			lo, hi := LoadPair(p)
			if lo != buf[i] || hi != buf[i+1] {
				t.Fatalf("%s: LoadPair(%d) = %#x %#x", k, i, lo, hi)
			}
		}
		var line [LineSize]byte
		for i := 0; i < len(buf)*8; i += 13 {
			p := unsafe.Add(base, i)
			if uintptr(p)&^63 < uintptr(base) || uintptr(p)&^63+64 > uintptr(base)+uintptr(len(buf)*8) {
				continue
			}
			LoadContaining(&line, p)
			w := binary.NativeEndian.Uint64(line[(uintptr(p)&63)&^7:])
			if w != buf[(uintptr(p)&^7-uintptr(base))/8] {
				t.Fatalf("%s: LoadContaining(%d) word %#x", k, i, w)
			}
		}
	}
	SetKind(Kinds()[0])
}
