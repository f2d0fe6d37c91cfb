//go:build !amd64 || race || purego

package lineio

import "sync/atomic"

// StoreRelease stores v at p so that every store before it is visible to
// another goroutine before v is. Here (another architecture, the race
// detector, or purego) it is sync/atomic's Store, which the race detector
// understands. The reader must load p with sync/atomic.
func StoreRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
