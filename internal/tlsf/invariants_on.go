//go:build invariants

package tlsf

// invariants is true in builds with the invariants tag.
const invariants = true

// checkInvariants runs Check after each mutation and panics on the first
// broken invariant, so a test fails at the operation that broke it.
func (a *Allocator) checkInvariants() {
	if err := a.Check(); err != nil {
		panic("tlsf: invariant broken: " + err.Error())
	}
}
