//go:build !race

package tlsf

const raceEnabled = false
