//go:build race

package vk

// raceOn: the race detector's shadow memory grows with every allocation.
const raceOn = true
