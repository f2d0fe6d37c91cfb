package main

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

func TestURLIndex(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, batch := range []int{1, 512} {
			t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
				cfg := config{n: 20_000, zipf: 1.1, batch: batch, gomap: true, seed: 7, dev: d}
				if testing.Short() {
					cfg.n = 4_000 // -short runs with -tags invariants, which walk the map after each write
				}
				var out bytes.Buffer
				if err := run(cfg, &out); err != nil {
					t.Fatal(err)
				}
				got := out.String()
				t.Log("\n" + got)

				cfg.universe = cfg.n
				unique := len(indexGoMap(cfg))
				if unique < cfg.n/20 || unique >= cfg.n {
					t.Errorf("%d unique URLs of %d: not a stream with duplicates", unique, cfg.n)
				}
				for _, want := range []string{
					"backend " + string(d.Info().Backend) + "\n",
					fmt.Sprintf("govram Map:  %d unique of %d in ", unique, cfg.n),
					fmt.Sprintf("Go map:      %d unique of %d in ", unique, cfg.n),
					fmt.Sprintf("check: both indexes hold the same %d URLs with the same ids\n", unique),
				} {
					if !strings.Contains(got, want) {
						t.Errorf("output lacks %q", want)
					}
				}
			})
		}
	})
}

// TestURLs checks that ranks give well-formed, distinct URLs.
func TestURLs(t *testing.T) {
	g := newURLGen(config{n: 1, universe: 1 << 20, zipf: 1.1, seed: 1})
	seen := make(map[string]uint64)
	hosts := make(map[string]bool)
	for rank := range uint64(50_000) {
		u := g.url(rank)
		if prev, ok := seen[u]; ok {
			t.Fatalf("ranks %d and %d both give %s", prev, rank, u)
		}
		seen[u] = rank
		p, err := url.Parse(u)
		if err != nil || p.Scheme != "https" || p.Host == "" || p.Path == "" {
			t.Fatalf("rank %d: malformed URL %q (%v)", rank, u, err)
		}
		hosts[p.Host] = true
	}
	if len(hosts) < 1000 {
		t.Errorf("only %d hosts in 50000 URLs", len(hosts))
	}
}
