package lines

import "unsafe"

// All pointer arithmetic of the package is here.

// lineAt returns the address of line number ln of the region at base. Valid
// because the batcher only forms it for lines inside [base, base+size),
// which the caller vouched for in NewBatcher.
func lineAt(base unsafe.Pointer, ln uint64) unsafe.Pointer {
	return unsafe.Add(base, uintptr(ln)*LineSize)
}

// bytesAt views n bytes at p, for plain stores into the region. Valid for
// the same reason as lineAt.
func bytesAt(p unsafe.Pointer, off uintptr, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(p, off)), n)
}

// bytesOf views the memory of *v as bytes. Valid for as long as v is: the
// slice keeps v alive, and T is a plain value type (see recs.CheckType).
func bytesOf[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// stageBytes views the first n staged lines as one byte slice for
// lineio.Scatter. Valid because the array is contiguous.
func stageBytes(st *[stageLines][LineSize]byte, n int) []byte {
	return unsafe.Slice(&st[0][0], n*LineSize)
}
