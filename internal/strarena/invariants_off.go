//go:build !invariants

package strarena

// invariants is true in builds with the invariants tag.
const invariants = false
