//go:build !invariants

package tlsf

// invariants is true in builds with the invariants tag.
const invariants = false

func (a *Allocator) checkInvariants() {}
