//go:build !race

package collections

const shRace = false
