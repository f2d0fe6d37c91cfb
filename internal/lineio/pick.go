package lineio

import "unsafe"

// LoadContaining reads the whole 64-byte line that contains p (which need
// not be aligned) into dst with one streaming load. It is the cheapest way
// to read one small record from mapped VRAM: no alignment check, one
// call, one load.
func LoadContaining(dst *[LineSize]byte, p unsafe.Pointer) {
	loadFloor(dst, p)
}

// LoadWord returns the 8-byte word at p (8-byte aligned) with one 16-byte
// streaming load, in a register. Reading a small record this way keeps it
// out of memory: a 64-byte load staged through a stack buffer makes the
// CPU wait on that buffer, so successive reads stop overlapping.
func LoadWord(p unsafe.Pointer) uint64 {
	if kind == kindGeneric {
		return goLoadWord(p)
	}
	return loadWord(p)
}

// LoadPair returns the 16 bytes at p (16-byte aligned) as two words, with
// one streaming load.
func LoadPair(p unsafe.Pointer) (lo, hi uint64) {
	if kind == kindGeneric {
		return goLoadWord(p), goLoadWord(unsafe.Add(p, 8))
	}
	return loadPair(p)
}

// goLoadWord is the portable twin: a plain load.
func goLoadWord(p unsafe.Pointer) uint64 { return *(*uint64)(p) }
