//go:build !invariants

// Package buildconst holds the constants that build tags set, one file per
// tag and value, so that no other package needs tag twins: Invariants (the
// invariants tag: checks of whole structures after every change) and Race
// (the race detector, which tests use to shorten their runs). Being
// constants, the checks they guard compile away when off.
package buildconst

// Invariants is false without the invariants tag.
const Invariants = false
