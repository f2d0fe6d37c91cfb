// Package apisurface holds the tests that guard govram's public API: the
// count of exported identifiers of each public package against a budget
// (surface_test.go), and docs/api.md's table of containers and verbs
// against the containers' method sets (api_test.go). It has no code of
// its own.
package apisurface
