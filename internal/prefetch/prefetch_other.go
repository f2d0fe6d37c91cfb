//go:build !amd64

package prefetch

import "unsafe"

// sink keeps the loads of strings from being removed as unused.
var sink byte

// fetchStrings loads the first and last byte of each string: without a prefetch
// instruction, loads that do not depend on each other still overlap.
func fetchStrings(p unsafe.Pointer, n int) {
	var t byte
	for _, s := range unsafe.Slice((*string)(p), n) {
		if len(s) > 0 {
			t += s[0] + s[len(s)-1]
		}
	}
	sink += t
}
