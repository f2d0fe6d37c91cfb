//go:build invariants

package main

// invariantsEnabled: the containers check their whole structure after
// every operation, so the smoke test uses small containers.
const invariantsEnabled = true
