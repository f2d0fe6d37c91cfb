//go:build invariants

package collections

// btInvariants makes every BTree write walk the whole structure afterwards
// (the invariants build tag).
const btInvariants = true
