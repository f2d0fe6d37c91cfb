package main

// A suite registers groups: one kind of container at one size, with the
// implementations compared (govram, the baselines, the naive path). Each
// implementation builds its data in Setup, measured on its own so that
// memory figures are per implementation, and runs its operations; the
// runner frees it before the next one is built, so peak memory is that of
// the largest implementation, not their sum.

import "time"

// Role says what an implementation is in a comparison.
type Role string

const (
	// RoleGovram is govram's container: what is being measured.
	RoleGovram Role = "govram"
	// RoleBaseline is what Go users pick today (built-ins, google/btree,
	// fastcache); ratios are taken against it.
	RoleBaseline Role = "baseline"
	// RoleNaive is the same data in mapped device memory read and written
	// with plain Go loads and stores.
	RoleNaive Role = "naive"
)

// group is one table of the report: the implementations of one kind of
// container at one size.
type group struct {
	Suite string
	Name  string // table name, e.g. "map" or "map-string"
	Size  int    // entries
	// Baselines names the implementations ratios are taken against; the
	// first is the primary one.
	Baselines []string
	Impls     []*impl
	// HitRate: the report shows govram's hot tier hit rate (-dist).
	HitRate bool
}

// impl is one implementation of a group.
type impl struct {
	Name string
	Role Role
	// Ops lists the operations Setup's fixture is expected to provide,
	// in order, for the plan and the ETA ("build" for the build itself).
	Ops []string
	// Need estimates the host and device bytes the implementation takes,
	// so sizes that cannot fit are skipped before anything is allocated.
	Need func() (host, dev uint64)
	// Setup builds the data and returns the operations.
	Setup func() (*fixture, error)
}

// fixture is a built implementation.
type fixture struct {
	ops []op
	// built is how many entries Setup inserted one by one in buildTime;
	// with built > 0 the result has a "build" case (ns per entry).
	built     int
	buildTime time.Duration
	buildNote string
	// entries is how many entries the data holds, for bytes per entry.
	entries int
	// mem, when set, is the memory right after the data was built (see
	// builtMem), before the probes and buffers of the cases; otherwise the
	// runner measures at the end of Setup.
	mem   *memSnap
	close func() error
}

// op is one operation of a fixture.
type op struct {
	name string
	fn   benchFunc
	// once runs fn a single time with b.N = 1 (capacity probes: they
	// report metrics, and repeating them says nothing new).
	once bool
}

// add appends an operation.
func (f *fixture) add(name string, fn benchFunc) { f.ops = append(f.ops, op{name: name, fn: fn}) }

// planned returns the number of cases the groups will record.
func planned(gs []*group) int {
	n := 0
	for _, g := range gs {
		for _, im := range g.Impls {
			n += len(im.Ops)
		}
	}
	return n
}

// opDoc says what one operation of a suite measures, for the report.
type opDoc struct{ Op, What string }

// suite is one -suites entry.
type suite struct {
	Name  string
	About string  // what it measures, for the report
	Ops   []opDoc // what each operation means
	// Groups registers the suite's groups for one size.
	Groups func(e *env, size int) []*group
	// Once: the suite does not depend on -sizes (Groups gets size 0).
	Once bool
	// Dist: the suite runs some operations under every -dist distribution.
	Dist bool
}
