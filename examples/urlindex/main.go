// Urlindex builds a deduplicating index of URLs: every distinct URL gets a
// dense id (0, 1, 2, ... in order of first sight), the way a crawler, a log
// pipeline or a string-interning dictionary assigns them. The index is a
// collections.Map[string, uint64], whose entries and string bytes live in
// device memory, so the Go heap stays small however many URLs it holds.
//
// The URLs are synthetic but shaped like real traffic: a few thousand hosts,
// paths of words, ids and query strings, with popularity following a Zipf
// law, so a few URLs repeat very often and most appear once or twice.
//
//	go run ./examples/urlindex                   # 10^6 URLs, then the same with a Go map
//	go run ./examples/urlindex -n 100000000      # 10^8 URLs (a GPU, or lots of RAM)
//	go run ./examples/urlindex -n 100000000 -gomap=false
//
// It prints the number of distinct URLs, the insert rate, and the memory on
// and off the Go heap, then does the same with a map[string]uint64 to show
// what keeping the index on the Go heap costs the garbage collector.
package main

import (
	"flag"
	"fmt"
	"github.com/govram/govram/internal/human"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"time"

	"github.com/govram/govram/collections"
	"github.com/govram/govram/vmem"
)

type config struct {
	backend  vmem.Backend // auto, vulkan or host; VMEM_BACKEND overrides it
	n        int          // URLs to insert, duplicates included
	universe int          // distinct URLs the generator can produce (0: n)
	zipf     float64      // Zipf exponent s > 1 of URL popularity
	batch    int          // URLs per GetBatch/PutBatch batch; 1: one Get and Put each
	gomap    bool         // also build a map[string]uint64 and compare
	seed     uint64
	dev      *vmem.Device // an open device to use instead of opening one (tests)
}

func main() {
	cfg := config{}
	backend := flag.String("backend", "auto", "auto, vulkan or host (VMEM_BACKEND overrides)")
	flag.IntVar(&cfg.n, "n", 1_000_000, "URLs to insert, duplicates included")
	flag.IntVar(&cfg.universe, "universe", 0, "distinct URLs the generator draws from (0: n)")
	flag.Float64Var(&cfg.zipf, "zipf", 1.1, "Zipf exponent of URL popularity (> 1)")
	flag.IntVar(&cfg.batch, "batch", 4096, "URLs per GetBatch/PutBatch batch (1: Get and Put one at a time)")
	flag.BoolVar(&cfg.gomap, "gomap", true, "also index the URLs in a map[string]uint64 and compare")
	flag.Uint64Var(&cfg.seed, "seed", 1, "random seed")
	flag.Parse()
	cfg.backend = vmem.Backend(*backend) // Open refuses an unknown name
	if err := run(cfg, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(cfg config, w io.Writer) error {
	if cfg.universe <= 0 {
		cfg.universe = cfg.n
	}
	if cfg.batch < 1 {
		cfg.batch = 1
	}
	if cfg.zipf <= 1 {
		return fmt.Errorf("urlindex: -zipf must be above 1, not %v", cfg.zipf)
	}
	if cfg.universe > 1<<32 {
		return fmt.Errorf("urlindex: -universe at most 2^32")
	}
	dev := cfg.dev
	if dev == nil {
		d, err := vmem.Open(vmem.Options{Backend: cfg.backend})
		if err != nil {
			return err
		}
		defer d.Close()
		dev = d
	}
	in := dev.Info()
	fmt.Fprintf(w, "device: %s, backend %s\n", in.Name, in.Backend)
	if in.Fallback != "" {
		fmt.Fprintf(w, "  no GPU used: %s\n", in.Fallback)
	}
	fmt.Fprintf(w, "stream: %d URLs drawn from %d by a Zipf law (s=%.2f); e.g. %s\n",
		cfg.n, cfg.universe, cfg.zipf, newURLGen(cfg).url(uint64(cfg.universe/3)))

	// The govram index. Its Go-heap footprint is a few hundred KiB however
	// large it grows; the batch slices below are all the heap it needs.
	m, err := collections.NewMap[string, uint64](dev)
	if err != nil {
		return err
	}
	defer m.Close()
	before := gcNow()
	start := time.Now()
	if err := indexGovram(m, cfg); err != nil {
		return err
	}
	took := time.Since(start)
	after := gcNow()
	runtime.GC()
	heap := heapBytes()
	off := dev.Info().Tiers[vmem.Mapped].InUse + dev.Info().Tiers[vmem.Private].InUse + dev.Info().Tiers[vmem.Host].InUse
	fmt.Fprintf(w, "govram Map:  %d unique of %d in %v (%.2f M URLs/s); Go heap %s, off-heap %s; GC %d cycles, %.3f s CPU\n",
		m.Len(), cfg.n, took.Round(time.Millisecond), float64(cfg.n)/took.Seconds()/1e6,
		human.Bytes(heap), human.Bytes(off), after.cycles-before.cycles, after.gcCPU-before.gcCPU)
	if err := checkSample(m, cfg); err != nil {
		return err
	}

	if !cfg.gomap {
		return nil
	}
	before = gcNow()
	start = time.Now()
	g := indexGoMap(cfg)
	took = time.Since(start)
	after = gcNow()
	runtime.GC()
	heap = heapBytes()
	fmt.Fprintf(w, "Go map:      %d unique of %d in %v (%.2f M URLs/s); Go heap %s; GC %d cycles, %.3f s CPU\n",
		len(g), cfg.n, took.Round(time.Millisecond), float64(cfg.n)/took.Seconds()/1e6,
		human.Bytes(heap), after.cycles-before.cycles, after.gcCPU-before.gcCPU)

	// Both indexes saw the same stream, so they must agree on every id.
	if len(g) != m.Len() {
		return fmt.Errorf("urlindex: govram Map has %d URLs, the Go map %d", m.Len(), len(g))
	}
	for u, id := range m.All() {
		if gid, ok := g[u]; !ok || gid != id {
			return fmt.Errorf("urlindex: %q has id %d in the govram Map, %d (%v) in the Go map", u, id, gid, ok)
		}
	}
	if err := m.Err(); err != nil {
		return err
	}
	fmt.Fprintf(w, "check: both indexes hold the same %d URLs with the same ids\n", len(g))
	runtime.KeepAlive(g)
	return nil
}

// indexGovram gives each new URL of the stream the next id. With batches,
// one GetBatch finds the URLs already indexed, and one PutBatch stores the new
// ones: the fast path on a GPU, where it spreads over every core and writes
// one sorted batch.
func indexGovram(m *collections.Map[string, uint64], cfg config) error {
	gen := newURLGen(cfg)
	next := uint64(0)
	if cfg.batch == 1 {
		for range cfg.n {
			u := gen.next()
			if _, ok := m.Get(u); !ok {
				if err := m.Put(u, next); err != nil {
					return err
				}
				next++
			}
		}
		return nil
	}
	keys := make([]string, 0, cfg.batch)
	ids := make([]uint64, cfg.batch)
	found := make([]bool, cfg.batch)
	var newKeys []string
	var newIDs []uint64
	inBatch := make(map[string]uint64, cfg.batch) // new URLs seen twice in one batch
	for done := 0; done < cfg.n; {
		keys = keys[:0]
		for ; len(keys) < cfg.batch && done < cfg.n; done++ {
			keys = append(keys, gen.next())
		}
		if err := m.GetBatch(keys, ids, found); err != nil {
			return err
		}
		newKeys, newIDs = newKeys[:0], newIDs[:0]
		clear(inBatch)
		for i, u := range keys {
			if found[i] {
				continue
			}
			if _, ok := inBatch[u]; ok {
				continue
			}
			inBatch[u] = next
			newKeys = append(newKeys, u)
			newIDs = append(newIDs, next)
			next++
		}
		if err := m.PutBatch(newKeys, newIDs); err != nil {
			return err
		}
	}
	return nil
}

// indexGoMap does the same with a Go map.
func indexGoMap(cfg config) map[string]uint64 {
	gen := newURLGen(cfg)
	g := make(map[string]uint64)
	for range cfg.n {
		u := gen.next()
		if _, ok := g[u]; !ok {
			g[u] = uint64(len(g))
		}
	}
	return g
}

// checkSample replays the start of the stream and checks that the ids are
// those of first sight.
func checkSample(m *collections.Map[string, uint64], cfg config) error {
	gen := newURLGen(cfg)
	seen := make(map[string]uint64)
	for range min(cfg.n, 10_000) {
		u := gen.next()
		if _, ok := seen[u]; !ok {
			seen[u] = uint64(len(seen))
		}
		id, ok := m.Get(u)
		if !ok || id != seen[u] {
			return fmt.Errorf("urlindex: %q: id %d (%v), want %d", u, id, ok, seen[u])
		}
	}
	return m.Err()
}

// urlGen draws URLs: a Zipf-distributed rank, made into a URL by a fixed
// function, so a rank always gives the same URL and two ranks never the same.
type urlGen struct {
	zipf *rand.Zipf
}

func newURLGen(cfg config) *urlGen {
	r := rand.New(rand.NewPCG(cfg.seed, 0x75726c696e646578))
	return &urlGen{zipf: rand.NewZipf(r, cfg.zipf, 1, uint64(cfg.universe-1))}
}

func (g *urlGen) next() string { return g.url(g.zipf.Uint64()) }

var (
	urlSubdomains = []string{"www", "www", "www", "m", "api", "cdn", "shop", "blog", "docs", "static"}
	urlSyllables  = []string{"ka", "lo", "mi", "ra", "ven", "tor", "sel", "an", "dra", "po", "li", "ne", "qua", "zo", "bri", "mon"}
	urlTLDs       = []string{"com", "com", "com", "org", "net", "io", "de", "co.uk", "fr", "jp"}
	urlSections   = []string{"products", "news", "blog", "wiki", "search", "user", "docs", "video", "item", "tag"}
	urlWords      = []string{"blue", "fast", "garden", "river", "winter", "paper", "light", "stone", "market", "open",
		"city", "coffee", "green", "north", "table", "music", "bright", "silver", "travel", "house"}
	urlSources = []string{"newsletter", "twitter", "google", "partner", "email", "rss"}
)

// url makes the URL of a rank. The rank is scrambled by a bijection of
// 32-bit integers, so popular URLs are spread over hosts, and the scrambled
// value appears in the path, so different ranks give different URLs.
func (g *urlGen) url(rank uint64) string {
	id := scramble32(uint32(rank))
	h := uint64(id) * 0x9E3779B97F4A7C15 // bits to pick the parts from
	host := uint32(h>>40) % 5000         // a few thousand sites
	hh := uint64(host)*0xD1B54A32D192ED03 + 1
	b := make([]byte, 0, 96)
	b = append(b, "https://"...)
	b = append(b, urlSubdomains[hh>>60%uint64(len(urlSubdomains))]...)
	b = append(b, '.')
	for i := range 2 + hh>>58%2 {
		b = append(b, urlSyllables[hh>>(4*i)%16]...)
	}
	b = append(b, '.')
	b = append(b, urlTLDs[hh>>20%uint64(len(urlTLDs))]...)
	b = append(b, '/')
	b = append(b, urlSections[h%uint64(len(urlSections))]...)
	b = append(b, '/')
	b = append(b, urlWords[h>>8%20]...)
	b = append(b, '-')
	b = append(b, urlWords[h>>16%20]...)
	b = append(b, '-')
	b = strconv.AppendUint(b, uint64(id), 10)
	switch h >> 24 % 4 {
	case 0: // no query string
	case 1:
		b = append(b, "?page="...)
		b = strconv.AppendUint(b, 1+h>>32%20, 10)
	case 2:
		b = append(b, "?utm_source="...)
		b = append(b, urlSources[h>>32%uint64(len(urlSources))]...)
		b = append(b, "&utm_medium=link"...)
	case 3:
		b = append(b, "?q="...)
		b = append(b, urlWords[h>>32%20]...)
		b = append(b, "+"...)
		b = append(b, urlWords[h>>36%20]...)
		b = append(b, "&sort=recent"...)
	}
	return string(b)
}

// scramble32 is a bijection of uint32 (odd multiplications and xorshifts
// are each invertible).
func scramble32(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}

// gcSnap is the garbage collector's cumulative work.
type gcSnap struct {
	gcCPU  float64 // seconds of CPU the GC used
	cycles uint64
}

func gcNow() gcSnap {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return gcSnap{gcCPU: s[0].Value.Float64(), cycles: s[1].Value.Uint64()}
}

// heapBytes is the Go heap's live objects (after a GC: the reachable ones).
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
