//go:build !race

package vmem_test

const poolRace = false
