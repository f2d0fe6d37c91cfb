//go:build invariants

package layout

// invariants turns on the walk of the batcher's internal table after every
// operation (build with -tags invariants).
const invariants = true
