//go:build !race

package buildconst

// Race is false without the race detector.
const Race = false
