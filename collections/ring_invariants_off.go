//go:build !invariants

package collections

// ringInvariants is off in ordinary builds; see ring_invariants_on.go.
const ringInvariants = false
