//go:build race

package main

// raceEnabled: the race detector slows everything several times; the
// smoke test shortens its runs.
const raceEnabled = true
