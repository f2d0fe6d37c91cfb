//go:build race

package collections

const mapRaceEnabled = true
