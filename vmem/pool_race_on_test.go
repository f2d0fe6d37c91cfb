//go:build race

package vmem_test

// poolRace shortens the PoolSlice model tests under the race detector,
// which slows them tenfold; the concurrent-reader tests keep their size.
const poolRace = true
