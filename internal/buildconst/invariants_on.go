//go:build invariants

package buildconst

// Invariants is true in builds with the invariants tag: every package then
// walks its structures after each change and panics at the first broken
// invariant, so a test fails at the operation that broke it.
const Invariants = true
