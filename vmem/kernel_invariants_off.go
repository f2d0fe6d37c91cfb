//go:build !invariants

package vmem

// kernInvariants: see kernel_invariants_on.go.
const kernInvariants = false
