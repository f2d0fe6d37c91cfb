//go:build race

package collections

// relRace: the race detector slows the sweeps about tenfold: sample less.
const relRace = true
