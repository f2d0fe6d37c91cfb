//go:build race

package vmem_test

// snapRace shrinks the snapshot round trips under the race detector, which
// slows their element loops tenfold.
const snapRace = true
