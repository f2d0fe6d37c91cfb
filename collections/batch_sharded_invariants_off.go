//go:build !invariants

package collections

// shInvariants is true in builds with the invariants tag.
const shInvariants = false
