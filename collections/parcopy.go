package collections

import (
	"unsafe"

	"github.com/govram/govram/internal/par"
)

// mapParCopy copies n bytes, on several goroutines when n is large (one
// goroutine moves less than memory and the link take, docs/physics.md; a
// batch of a million keys is 8 MB each way): par.Ranges over 512 KiB
// units, the last part taking the tail. It runs on goroutines of its own,
// not on par's kept workers (par.Copy): Map.gpuGet's parts call it from
// several goroutines at once, and the kept workers serve one caller at a
// time.
func mapParCopy(dst, src unsafe.Pointer, n uint64) {
	if n == 0 {
		return
	}
	d, s := unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n)
	const part = 1 << 19
	if n < 2*part {
		copy(d, s)
		return
	}
	par.Ranges(int(n/part), 1, func(a, b int) {
		hi := uint64(b) * part
		if b == int(n/part) {
			hi = n
		}
		copy(d[uint64(a)*part:hi], s[uint64(a)*part:hi])
	})
}
