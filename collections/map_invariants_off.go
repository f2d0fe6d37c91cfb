//go:build !invariants

package collections

// mapInvariants is true in builds with the invariants tag.
const mapInvariants = false
