//go:build !race

package collections

const relRace = false
