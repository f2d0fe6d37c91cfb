//go:build invariants

package strarena

// invariants turns on a full check of the free lists after every change,
// and a record of the live strings that catches double frees (build with
// -tags invariants).
const invariants = true
