package main

// Key distributions (-dist): which present keys the lookups and overwrites
// of the map and btree suites ask for. uniform draws every key alike (the
// suites' probes since the start); zipf<s> draws ranks from a Zipf
// distribution of exponent s, rank 0 the most frequent, as the requests
// of a cache or a web service are. A rank is a key through a fixed random
// permutation of the present keys, so the hot keys are spread over the
// table or the tree rather than gathered at one end (the ordered keys of
// the btree suite would otherwise put them all in its first leaves).
//
// Each distribution other than uniform adds its own cases: operation
// "get-hit" drawn from zipf1.1 is "get-hit@zipf1.1", compared with the
// baseline's case of the same name. With -dist given, govram's cases also
// report the hot tier's hit rate over the timed loop (metric hit%).

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/govram/govram/collections"
)

const defaultDists = "uniform"

// keyDist is one -dist entry.
type keyDist struct {
	name string  // "uniform", "zipf1.1"
	s    float64 // the Zipf exponent; 0 for uniform
}

// uniform reports whether d is the uniform distribution, whose cases keep
// the suites' plain operation names.
func (d keyDist) uniform() bool { return d.s == 0 }

// op returns the name of operation op under d: op itself for uniform,
// op@<name> otherwise.
func (d keyDist) op(op string) string {
	if d.uniform() {
		return op
	}
	return op + "@" + d.name
}

// distBase returns an operation's name without its distribution.
func distBase(op string) string {
	base, _, _ := strings.Cut(op, "@")
	return base
}

func parseDists(s string) ([]keyDist, error) {
	var ds []keyDist
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d := keyDist{name: f}
		if f != "uniform" {
			e, ok := strings.CutPrefix(f, "zipf")
			v, err := strconv.ParseFloat(e, 64)
			if !ok || err != nil || !(v > 0) || v == 1 || v > 10 {
				return nil, fmt.Errorf("-dist %q: want uniform or zipf<s> with 0 < s <= 10, s != 1 (zipf0.99, zipf1.1)", f)
			}
			d.s = v
		}
		if !containsDist(ds, d.name) {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return nil, fmt.Errorf("-dist %q: no distributions", s)
	}
	return ds, nil
}

func containsDist(ds []keyDist, name string) bool {
	for _, d := range ds {
		if d.name == name {
			return true
		}
	}
	return false
}

// distNames lists the distributions' names.
func distNames(ds []keyDist) []string {
	var s []string
	for _, d := range ds {
		s = append(s, d.name)
	}
	return s
}

// distOps returns ops with, after each operation in varied, its variants
// under the distributions other than uniform.
func distOps(ops []string, ds []keyDist, varied ...string) []string {
	var out []string
	for _, o := range ops {
		out = append(out, o)
		if !containsStr(varied, o) {
			continue
		}
		for _, d := range ds {
			if !d.uniform() {
				out = append(out, d.op(o))
			}
		}
	}
	return out
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// drawIdx returns count indices of present keys in [0, n) drawn from d:
// uniform is randomIdx (the suites' probes, unchanged); zipf draws ranks
// and maps them through distPerm.
func drawIdx(n, count int, seed uint64, d keyDist) []int {
	if d.uniform() || n < 2 {
		return randomIdx(n, count, seed)
	}
	r := rng(seed)
	next := zipfRanks(r, n, d.s)
	perm := newDistPerm(n, seed)
	idx := make([]int, count)
	for i := range idx {
		idx[i] = perm.at(next())
	}
	return idx
}

// zipfRanks returns a function drawing ranks in [0, n) with exponent s:
// math/rand/v2's Zipf where s > 1 (it needs s > 1), Gray et al.'s method
// (as YCSB, and the collections package's BenchmarkMapTier) below.
func zipfRanks(r *rand.Rand, n int, s float64) func() uint64 {
	if s > 1 {
		z := rand.NewZipf(r, s, 1, uint64(n-1))
		return z.Uint64
	}
	z := newGrayZipf(n, s)
	return func() uint64 { return z.next(r) }
}

// distPerm is a fixed pseudo-random permutation of [0, n): i -> (a*i + c)
// mod n with a coprime to n and far from 0 and n, so consecutive ranks
// land far apart.
type distPerm struct{ a, c, n uint64 }

func newDistPerm(n int, seed uint64) distPerm {
	r := rng(seed ^ 0x5851f42d4c957f2d)
	p := distPerm{n: uint64(n), c: r.Uint64N(uint64(n))}
	for {
		p.a = uint64(n)/3 + r.Uint64N(uint64(n)/3+1)
		if p.a > 0 && gcd(p.a, p.n) == 1 {
			return p
		}
	}
}

func (p distPerm) at(i uint64) int {
	hi, lo := bits.Mul64(p.a, i)
	lo, carry := bits.Add64(lo, p.c, 0)
	return int(bits.Rem64(hi+carry, lo, p.n))
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// grayZipf draws Zipf ranks with exponent theta < 1 by Gray et al.'s
// method ("Quickly generating billion-record synthetic databases").
type grayZipf struct {
	n                   float64
	theta, alpha, zetan float64
	eta                 float64
}

func newGrayZipf(n int, theta float64) *grayZipf {
	zeta := func(n int) float64 {
		// Exact for the first terms, Euler-Maclaurin for the tail.
		const exact = 100000
		s := 0.0
		for i := 1; i <= min(n, exact); i++ {
			s += math.Pow(float64(i), -theta)
		}
		if n > exact {
			a, b := float64(exact), float64(n)
			s += (math.Pow(b, 1-theta)-math.Pow(a, 1-theta))/(1-theta) +
				(math.Pow(b, -theta)-math.Pow(a, -theta))/2
		}
		return s
	}
	z := &grayZipf{n: float64(n), theta: theta, alpha: 1 / (1 - theta), zetan: zeta(n)}
	z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta(2)/z.zetan)
	return z
}

func (z *grayZipf) next(r *rand.Rand) uint64 {
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < 1+math.Pow(0.5, z.theta) {
		return 1
	}
	return min(uint64(z.n*math.Pow(z.eta*u-z.eta+1, z.alpha)), uint64(z.n)-1)
}

// hitCounter reads a govram container's hot tier counters (hits and
// misses so far), for the hit rate of a timed loop; nil where none is
// measured (-dist not given, or a container without a tier's counters).
type hitCounter func() (hits, misses uint64)

// mapHits returns m's hitCounter when -dist was given, else nil.
func mapHits(e *env, stats func() collections.MapStats) hitCounter {
	if !e.cfg.distSet {
		return nil
	}
	return func() (uint64, uint64) {
		c := stats().Cache
		return c.Hits, c.Misses
	}
}

// hitMark is the counters before a timed loop.
type hitMark struct{ hits, misses uint64 }

// mark reads the counters before a timed loop (nothing for a nil h).
func (h hitCounter) mark() hitMark {
	if h == nil {
		return hitMark{}
	}
	hits, misses := h()
	return hitMark{hits, misses}
}

// report stops the timer and records the tier's hit rate since m as
// metric hit%, when the tier answered any lookup (nothing for a nil h).
func (h hitCounter) report(b *B, m hitMark) {
	if h == nil {
		return
	}
	b.StopTimer()
	hits, misses := h()
	dh, dm := hits-m.hits, misses-m.misses
	if dh+dm > 0 {
		b.ReportMetric(100*float64(dh)/float64(dh+dm), "hit%")
	}
}

// distText is the -dist part of a run's description ("" without -dist).
func distText(dists []string) string {
	if len(dists) == 0 {
		return ""
	}
	return " -dist " + strings.Join(dists, ",")
}

// dists returns the run's distributions: uniform where none were set.
func (e *env) dists() []keyDist {
	if len(e.cfg.dists) == 0 {
		return []keyDist{{name: "uniform"}}
	}
	return e.cfg.dists
}
