//go:build !invariants

package vmem

// poolInvariants is true in builds with the invariants tag.
const poolInvariants = false
