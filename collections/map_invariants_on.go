//go:build invariants

package collections

// mapInvariants makes every write to a Map walk the whole table afterwards
// and panic at the first broken invariant (build with -tags invariants).
const mapInvariants = true
