//go:build invariants

package vmem

// poolInvariants makes every change of a PoolSlice's length check the
// parts' lengths against the placement afterwards (build with -tags
// invariants).
const poolInvariants = true
