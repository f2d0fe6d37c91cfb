package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

func TestVectors(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		// Small segments put the store in several runs, so the scan's ids
		// must carry across run boundaries.
		cfg := config{n: 5000, queries: 9, k: 7, clusters: 20, workers: 3, check: true, seed: 3, dev: d}
		var out bytes.Buffer
		if err := run(cfg, &out); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		t.Log("\n" + got)
		for _, want := range []string{
			"backend " + string(d.Info().Backend) + "\n",
			fmt.Sprintf("store: %d vectors of %d float32", cfg.n, dim),
			fmt.Sprintf("search: %d queries, top %d, one blocked scan on 3 goroutines", cfg.queries, cfg.k),
			fmt.Sprintf("gives the same %d neighbours for all %d queries\n", cfg.k, cfg.queries),
		} {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q", want)
			}
		}
	})
}

// TestSearchRuns checks the scan against brute force when the store is cut
// into many short runs (small segments), with ties broken by id.
func TestSearchRuns(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		cfg := config{n: 3000, queries: 4, k: 5, clusters: 3, seed: 9}
		s, err := vmem.NewSlice[vec](d, 0, vmemtest.WithSegmentBytes(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		g := newGenerator(cfg)
		for range cfg.n {
			if err := s.Append(g.vector()); err != nil {
				t.Fatal(err)
			}
		}
		qs := []vec{g.query(), g.query(), g.query(), {}} // the zero query ties everything: lowest ids win
		got, err := search(s, qs, cfg.k, 2)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteForce(cfg, qs)
		for q := range qs {
			if fmt.Sprint(got[q]) != fmt.Sprint(want[q]) {
				t.Errorf("query %d: scan %v, brute force %v", q, got[q], want[q])
			}
		}
		if got[3][0].id != 0 || got[3][4].id != 4 {
			t.Errorf("zero query: %v, want ids 0-4", got[3])
		}
	})
}
