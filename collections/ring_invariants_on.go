//go:build invariants

package collections

// ringInvariants turns on the walk of a ring's state after every operation
// in the tests (build with -tags invariants).
const ringInvariants = true
