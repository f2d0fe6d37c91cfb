//go:build amd64 && !race && !purego

package lineio

// StoreRelease stores v at p so that every store before it is visible to
// another core before v is: a plain MOV on amd64, whose stores are seen in
// program order (the call keeps the compiler from moving stores past it).
// sync/atomic's Store is an XCHG, a locked instruction, far dearer than a
// plain store, that waits for the core's pending loads. The reader must
// load p with sync/atomic. p must be 8-byte aligned.
//
//go:noescape
func StoreRelease(p *uint64, v uint64)
