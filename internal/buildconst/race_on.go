//go:build race

package buildconst

// Race is true when the race detector is on (go build -race), which slows
// memory accesses several times and grows shadow memory with every
// allocation: tests shorten their runs under it.
const Race = true
