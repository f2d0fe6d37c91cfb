//go:build !amd64 || purego

package route

import "unsafe"

const hasVector = false

func count8Vec(keys *uint64, blocks int, sid *uint8, seed uint64, nd int, cnt *int) {
	panic("route: no vector loops")
}

func route8Vec(keys *uint64, blocks int, sid *uint8, seed uint64, nd int, dst *unsafe.Pointer, cur *int, limit *int) bool {
	panic("route: no vector loops")
}

func place8Vec(keys *uint64, blocks int, sid *uint8, nd int, dst *unsafe.Pointer, cur *int) {
	panic("route: no vector loops")
}

func gather8Vec(sid *uint8, blocks int, nd int, src *unsafe.Pointer, cur *int, out *uint64, fsrc *unsafe.Pointer, fout *bool) {
	panic("route: no vector loops")
}
