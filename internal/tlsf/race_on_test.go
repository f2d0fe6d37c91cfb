//go:build race

package tlsf

const raceEnabled = true
