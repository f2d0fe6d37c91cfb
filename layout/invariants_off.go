//go:build !invariants

package layout

// invariants is off in ordinary builds; see invariants_on.go.
const invariants = false
