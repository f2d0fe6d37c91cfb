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

// CountLE returns how many of keys[1:n] (1 <= n <= 64) satisfy
// keys[i]^flip <= ko: the child an index node of up to 64 sorted keys
// routes ko to (flip is the sign bit for signed keys, ko already flipped).
// With AVX-512 (and BMI2) it reads the whole array with eight vector
// compares and no branch: a three-level walk of a BTree's index took a
// fraction of the time a branch-free binary search took (BenchmarkBTreeGet;
// docs/btree.md).
func CountLE(keys *[64]uint64, n int, ko, flip uint64) int {
	if n < 1 || n > 64 {
		panic("lineio: CountLE: n out of 1..64")
	}
	return countLE(keys, n, ko, flip)
}

func goCountLE(keys *[64]uint64, n int, ko, flip uint64) int {
	c := 0
	for _, k := range keys[1:n] {
		if k^flip <= ko {
			c++
		}
	}
	return c
}
