//go:build amd64 && !purego

package lineio

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func loadWord(p unsafe.Pointer) uint64

//go:noescape
func loadPair(p unsafe.Pointer) (lo, hi uint64)

//go:noescape
func countLE512(keys *uint64, n int, ko, flip uint64) int

func countLE(keys *[64]uint64, n int, ko, flip uint64) int {
	if kind == kindAVX512 && canCountLE512 {
		return countLE512(&keys[0], n, ko, flip)
	}
	return goCountLE(keys, n, ko, flip)
}

// canCountLE512: countLE512 joins masks with KUNPCK (AVX512BW) and cuts
// them with BZHI (BMI2).
var canCountLE512 = cpu.X86.HasAVX512BW && cpu.X86.HasBMI2 && cpu.X86.HasPOPCNT
