//go:build !race

package vk

const raceOn = false
