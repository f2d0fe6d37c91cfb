//go:build amd64 && !purego

package route

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasVector: the loops use VPMULLQ and KMOVB (AVX512DQ), masked byte
// loads (AVX512BW and VL), BZHI (BMI2) and POPCNT.
var hasVector = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512BW &&
	cpu.X86.HasAVX512VL && cpu.X86.HasBMI2 && cpu.X86.HasPOPCNT

//go:noescape
func count8Vec(keys *uint64, blocks int, sid *uint8, seed uint64, nd int, cnt *int)

//go:noescape
func route8Vec(keys *uint64, blocks int, sid *uint8, seed uint64, nd int, dst *unsafe.Pointer, cur *int, limit *int) bool

//go:noescape
func place8Vec(keys *uint64, blocks int, sid *uint8, nd int, dst *unsafe.Pointer, cur *int)

//go:noescape
func gather8Vec(sid *uint8, blocks int, nd int, src *unsafe.Pointer, cur *int, out *uint64, fsrc *unsafe.Pointer, fout *bool)
