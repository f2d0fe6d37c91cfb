package collections

import (
	"encoding/binary"
	"unsafe"
)

// Control bytes: 0x00-0x7F a full slot (seven bits of its hash), 0x80
// empty, 0xFE deleted (a tombstone: probes continue past it).
const (
	mapEmpty   = 0x80
	mapDeleted = 0xFE
	mapLSB     = 0x0101010101010101
	mapMSB     = 0x8080808080808080
)

// mapMatch flags (0x80) the bytes of g equal to the byte of pat. It may
// also flag a full slot just above a true match (a borrow), never an empty
// or deleted one; callers compare keys anyway.
func mapMatch(g, pat uint64) uint64 {
	x := g ^ pat
	return (x - mapLSB) &^ x & mapMSB
}

// mapMatchEmpty flags the empty bytes: high bit set, bit 1 clear.
func mapMatchEmpty(g uint64) uint64 { return g &^ (g << 6) & mapMSB }

// mapMatchFree flags the empty and deleted bytes.
func mapMatchFree(g uint64) uint64 { return g & mapMSB }

// mapGroup reads the control bytes of bucket j (p bytes at fp + j*p, read
// as one little-endian word; the bytes past the group are masked off by
// the caller).
func mapGroup(fp unsafe.Pointer, j uint64, p int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(fp, uintptr(j)*uintptr(p))), 8))
}
