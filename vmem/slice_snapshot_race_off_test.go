//go:build !race

package vmem_test

const snapRace = false
