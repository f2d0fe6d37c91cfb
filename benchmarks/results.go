package main

// results.json: everything a report is drawn from, so that the report and
// its plots can be made again (-from results.json) without running
// anything. Field names are the JSON keys; times are nanoseconds.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"
)

// resultsVersion changes when the JSON shape changes incompatibly.
const resultsVersion = 1

// Results is the content of results.json.
type Results struct {
	Version  int            `json:"version"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
	Command  []string       `json:"command"`
	Config   RunConfig      `json:"config"`
	Machine  Machine        `json:"machine"`
	Device   Device         `json:"device"`
	Suites   []SuiteDoc     `json:"suites"`
	Groups   []GroupDesc    `json:"groups"`
	Cases    []CaseResult   `json:"cases"`
	Memory   []MemoryResult `json:"memory"`
	Notes    []string       `json:"notes,omitempty"`
	// Partial: the run had not finished when this was written (results
	// are saved after every implementation, so a crash keeps them).
	Partial bool `json:"partial,omitempty"`
}

// RunConfig records the flags the run used.
type RunConfig struct {
	Backend     string   `json:"backend"`
	Suites      []string `json:"suites"`
	Sizes       []int    `json:"sizes"`
	Time        string   `json:"time"`
	Count       int      `json:"count"`
	Short       bool     `json:"short"`
	CapacityMax uint64   `json:"capacity_max"`
	Deadline    string   `json:"deadline,omitempty"`
	// Dists are the -dist key distributions, when the flag was given.
	Dists []string `json:"dists,omitempty"`
	// HostCache is -host-cache when it was set: the hot tier's bytes.
	HostCache string `json:"host_cache,omitempty"`
}

// SuiteDoc describes a suite that ran.
type SuiteDoc struct {
	Name  string  `json:"name"`
	About string  `json:"about"`
	Ops   []OpDoc `json:"ops"`
}

// OpDoc says what an operation measures.
type OpDoc struct {
	Op   string `json:"op"`
	What string `json:"what"`
}

// GroupDesc describes one comparison table.
type GroupDesc struct {
	Suite     string     `json:"suite"`
	Name      string     `json:"name"`
	Size      int        `json:"size"`
	Baselines []string   `json:"baselines"`
	Impls     []ImplDesc `json:"impls"`
	// HitRate: the group's table has a column of govram's hot tier hit
	// rate (metric hit%), empty where the case measured none.
	HitRate bool `json:"hit_rate,omitempty"`
}

// ImplDesc names an implementation and its role.
type ImplDesc struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
}

// Case statuses.
const (
	StatusOK      = "ok"
	StatusSkipped = "skipped"
	StatusFailed  = "failed"
)

// CaseResult is one operation of one implementation at one size.
type CaseResult struct {
	Suite  string `json:"suite"`
	Group  string `json:"group"`
	Op     string `json:"op"`
	Size   int    `json:"size"`
	Impl   string `json:"impl"`
	Role   Role   `json:"role"`
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`
	// N is b.N of each run; Samples the ns/op of each run.
	N       int       `json:"n,omitempty"`
	Samples []float64 `json:"samples_ns,omitempty"`
	// Median, Min and Max are ns/op; Spread is the largest distance of a
	// run from the median in percent of it.
	Median  float64            `json:"median_ns"`
	Min     float64            `json:"min_ns"`
	Max     float64            `json:"max_ns"`
	Spread  float64            `json:"spread_pct"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Wall is the time the case took, warm-up and ramp included.
	Wall float64 `json:"wall_ns,omitempty"`
}

// Name is the case's name: suite group, operation and size.
func (c *CaseResult) Name() string { return caseName(c.Group, c.Op, c.Size) }

func caseName(group, op string, size int) string {
	if size == 0 {
		return group + "/" + op
	}
	return group + "/" + op + "/" + sizeName(size)
}

// MemoryResult is what an implementation took once built: Go heap, host
// RSS and device memory, measured after a garbage collection before and
// after Setup.
type MemoryResult struct {
	Suite    string  `json:"suite"`
	Group    string  `json:"group"`
	Size     int     `json:"size"`
	Impl     string  `json:"impl"`
	Role     Role    `json:"role"`
	Entries  int     `json:"entries"`
	Heap     int64   `json:"heap_bytes"`
	RSS      int64   `json:"rss_bytes"`
	Device   int64   `json:"device_bytes"`    // mapped + private tiers
	HostTier int64   `json:"host_tier_bytes"` // govram's host tier (off-heap)
	SetupNs  float64 `json:"setup_ns"`
}

// writeJSON writes r to path.
func writeJSON(path string, r *Results) error {
	clean(r)
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// readJSON reads results written by writeJSON.
func readJSON(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Version != resultsVersion {
		return nil, fmt.Errorf("%s: results version %d, this program reads %d", path, r.Version, resultsVersion)
	}
	return &r, nil
}

// clean replaces values JSON cannot hold (NaN, Inf) so the file always
// encodes; a case with such a figure is marked failed.
func clean(r *Results) {
	fix := func(v *float64) bool {
		if math.IsNaN(*v) || math.IsInf(*v, 0) {
			*v = 0
			return false
		}
		return true
	}
	for i := range r.Cases {
		c := &r.Cases[i]
		ok := fix(&c.Median)
		fix(&c.Min)
		fix(&c.Max)
		fix(&c.Spread)
		for j := range c.Samples {
			fix(&c.Samples[j])
		}
		for k, v := range c.Metrics {
			if !fix(&v) {
				delete(c.Metrics, k)
			}
		}
		if !ok && c.Status == StatusOK {
			c.Status, c.Note = StatusFailed, "result is not a finite number"
		}
	}
	for i := range r.Memory {
		fix(&r.Memory[i].SetupNs)
	}
}
