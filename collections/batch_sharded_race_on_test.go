//go:build race

package collections

// shRace shortens the sharded model tests under the race detector, which
// slows them tenfold; the concurrent-reader tests keep their size.
const shRace = true
