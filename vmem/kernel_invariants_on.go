//go:build invariants

package vmem

// kernInvariants turns on the checks of the kernels' results (build with
// -tags invariants): after every sort the whole Slice is read back and its
// order verified.
const kernInvariants = true
