// Vectors is an embedding store: unit-length float32 vectors kept in a
// vmem.Slice in device memory, answering k-nearest-neighbour queries (by
// cosine similarity, the dot product of unit vectors) with a blocked scan.
//
// The scan reads the store in bulk with Slice.Chunks (large DMA transfers on
// a GPU, never element by element) and scores each run against a whole
// batch of queries on every core, so each vector crosses the bus once per
// batch however many queries there are. The winners' vectors are then
// fetched with one Slice.Gather. A brute-force search over the same vectors
// on the Go heap checks every answer.
//
//	go run ./examples/vectors                      # 100,000 vectors, 32 queries
//	go run ./examples/vectors -n 10000000 -q 256   # 2.4 GiB of vectors
//	go run ./examples/vectors -check=false         # skip the brute-force check
package main

import (
	"flag"
	"fmt"
	"github.com/govram/govram/internal/human"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
	"unsafe"

	"github.com/govram/govram/vmem"
)

// dim is the embedding size: 64 float32s, four 64-byte lines a vector.
const dim = 64

type vec [dim]float32

type config struct {
	backend  vmem.Backend // auto, vulkan or host; VMEM_BACKEND overrides it
	n        int          // vectors in the store
	queries  int          // queries in the batch
	k        int          // neighbours per query
	clusters int          // the data's cluster centres
	workers  int          // goroutines scoring (0: GOMAXPROCS)
	check    bool         // check every answer against a brute-force search
	seed     uint64
	dev      *vmem.Device // an open device to use instead of opening one (tests)
}

func main() {
	cfg := config{}
	backend := flag.String("backend", "auto", "auto, vulkan or host (VMEM_BACKEND overrides)")
	flag.IntVar(&cfg.n, "n", 100_000, "vectors in the store")
	flag.IntVar(&cfg.queries, "q", 32, "queries, answered as one batch")
	flag.IntVar(&cfg.k, "k", 10, "neighbours per query")
	flag.IntVar(&cfg.clusters, "clusters", 256, "clusters in the synthetic data")
	flag.IntVar(&cfg.workers, "workers", 0, "scoring goroutines (0: GOMAXPROCS)")
	flag.BoolVar(&cfg.check, "check", true, "check the answers against a brute-force search on the Go heap")
	flag.Uint64Var(&cfg.seed, "seed", 1, "random seed")
	flag.Parse()
	cfg.backend = vmem.Backend(*backend) // Open refuses an unknown name
	if err := run(cfg, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(cfg config, w io.Writer) error {
	if cfg.n < 1 || cfg.queries < 1 || cfg.k < 1 || cfg.clusters < 1 {
		return fmt.Errorf("vectors: -n, -q, -k and -clusters must be at least 1")
	}
	cfg.k = min(cfg.k, cfg.n)
	if cfg.workers <= 0 {
		cfg.workers = runtime.GOMAXPROCS(0)
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

	// Load the store in batches, so the Go heap never holds more than one.
	gen := newGenerator(cfg)
	start := time.Now()
	store, err := vmem.NewSlice[vec](dev, 0, vmem.WithCapacity(cfg.n))
	if err != nil {
		return err
	}
	defer store.Close()
	batch := make([]vec, 0, 8192)
	for i := 0; i < cfg.n; {
		batch = batch[:0]
		for ; i < cfg.n && len(batch) < cap(batch); i++ {
			batch = append(batch, gen.vector())
		}
		if err := store.Append(batch...); err != nil {
			return err
		}
	}
	took := time.Since(start)
	size := cfg.n * int(unsafe.Sizeof(vec{}))
	runtime.GC()
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(heap)
	fmt.Fprintf(w, "store: %d vectors of %d float32 (%s) generated and loaded in %v; Go heap %s, device: mapped %s, private %s\n",
		cfg.n, dim, human.Bytes(size), took.Round(time.Millisecond), human.Bytes(heap[0].Value.Uint64()),
		human.Bytes(dev.Info().Tiers[vmem.Mapped].InUse), human.Bytes(dev.Info().Tiers[vmem.Private].InUse))

	queries := make([]vec, cfg.queries)
	for i := range queries {
		queries[i] = gen.query()
	}
	start = time.Now()
	results, err := search(store, queries, cfg.k, cfg.workers)
	if err != nil {
		return err
	}
	took = time.Since(start)
	fmt.Fprintf(w, "search: %d queries, top %d, one blocked scan on %d goroutines in %v: %.2f M vectors/s (%.2f GB/s), %.0f M dot products/s\n",
		cfg.queries, cfg.k, cfg.workers, took.Round(time.Millisecond),
		float64(cfg.n)/took.Seconds()/1e6, float64(size)/took.Seconds()/1e9,
		float64(cfg.n)*float64(cfg.queries)/took.Seconds()/1e6)

	// Fetch the best match of every query in one Gather and check its score.
	best := make([]int, len(results))
	for i, r := range results {
		best[i] = r[0].id
	}
	got := make([]vec, len(best))
	if err := store.GetBatch(best, got); err != nil {
		return err
	}
	for i := range got {
		if s := dot(&queries[i], &got[i]); s != results[i][0].score {
			return fmt.Errorf("vectors: query %d: gathered vector %d scores %v, the scan said %v", i, best[i], s, results[i][0].score)
		}
	}
	fmt.Fprintf(w, "query 0: nearest %d (similarity %.4f), then %d (%.4f), %d (%.4f)\n",
		results[0][0].id, results[0][0].score, results[0][min(1, cfg.k-1)].id, results[0][min(1, cfg.k-1)].score,
		results[0][min(2, cfg.k-1)].id, results[0][min(2, cfg.k-1)].score)

	if !cfg.check {
		return nil
	}
	start = time.Now()
	want := bruteForce(cfg, queries)
	for q := range want {
		for j := range want[q] {
			if want[q][j] != results[q][j] {
				return fmt.Errorf("vectors: query %d, rank %d: scan found %+v, brute force %+v", q, j, results[q][j], want[q][j])
			}
		}
	}
	fmt.Fprintf(w, "check: brute force over the same vectors on the Go heap (%v) gives the same %d neighbours for all %d queries\n",
		time.Since(start).Round(time.Millisecond), cfg.k, cfg.queries)
	return nil
}

// hit is one neighbour.
type hit struct {
	id    int
	score float32
}

// better orders hits: higher score first, then lower id, so that results
// are the same whatever order the vectors were scored in.
func better(a, b hit) bool { return a.score > b.score || a.score == b.score && a.id < b.id }

// topK keeps the k best hits, best first (k is small: insertion is fastest).
type topK []hit

func (t *topK) add(h hit, k int) {
	s := *t
	if len(s) == k && !better(h, s[k-1]) {
		return
	}
	if len(s) < k {
		s = append(s, h)
	} else {
		s[k-1] = h
	}
	for i := len(s) - 1; i > 0 && better(s[i], s[i-1]); i-- {
		s[i], s[i-1] = s[i-1], s[i]
	}
	*t = s
}

// search scans the store once. Chunks yields long runs read in bulk; each
// run is split among the workers, each scoring its part against every
// query and keeping its own top k per query; the tops are merged at the end.
func search(store *vmem.Slice[vec], queries []vec, k, workers int) ([]topK, error) {
	tops := make([][]topK, workers)
	for i := range tops {
		tops[i] = make([]topK, len(queries))
	}
	var wg sync.WaitGroup
	for first, run := range store.Chunks() {
		part := (len(run) + workers - 1) / workers
		for wk := range workers {
			lo, hi := min(wk*part, len(run)), min((wk+1)*part, len(run))
			if lo == hi {
				continue
			}
			wg.Go(func() {
				// Queries outer, vectors inner in blocks, so a block of
				// vectors stays in cache while every query scores it.
				const block = 256
				for b := lo; b < hi; b += block {
					vs := run[b:min(b+block, hi)]
					for q := range queries {
						t := &tops[wk][q]
						for j := range vs {
							s := dot(&queries[q], &vs[j])
							if len(*t) < k || s >= (*t)[k-1].score { // most vectors lose here
								t.add(hit{first + b + j, s}, k)
							}
						}
					}
				}
			})
		}
		wg.Wait() // the run is valid only until the loop body returns
	}
	if err := store.Err(); err != nil {
		return nil, err
	}
	out := make([]topK, len(queries))
	for q := range queries {
		for wk := range workers {
			for _, h := range tops[wk][q] {
				out[q].add(h, k)
			}
		}
	}
	return out, nil
}

// bruteForce regenerates the vectors on the Go heap and scores each against
// each query, the plain way.
func bruteForce(cfg config, queries []vec) []topK {
	gen := newGenerator(cfg)
	all := make([]vec, cfg.n)
	for i := range all {
		all[i] = gen.vector()
	}
	out := make([]topK, len(queries))
	for q := range queries {
		for i := range all {
			out[q].add(hit{i, dot(&queries[q], &all[i])}, cfg.k)
		}
	}
	return out
}

// dot is the dot product, summed in a fixed order so the scan and the
// brute force agree to the bit. It is not inlined, so the compiler makes
// one choice of instructions (fused multiply-adds or not) for every caller.
//
//go:noinline
func dot(a, b *vec) float32 {
	var s0, s1, s2, s3 float32
	for i := 0; i < dim; i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	return (s0 + s1) + (s2 + s3)
}

// generator makes clustered unit vectors, like embeddings of documents on
// a few hundred topics, and queries near those topics.
type generator struct {
	r       *rand.Rand
	centres []vec
}

func newGenerator(cfg config) *generator {
	g := &generator{r: rand.New(rand.NewPCG(cfg.seed, 0x766563746f7273))}
	g.centres = make([]vec, cfg.clusters)
	for i := range g.centres {
		g.centres[i] = g.noisy(nil, 1)
	}
	return g
}

// noisy returns around, plus Gaussian noise of the given spread, normalised.
func (g *generator) noisy(around *vec, spread float64) vec {
	var v vec
	var norm float64
	for i := range v {
		x := g.r.NormFloat64() * spread
		if around != nil {
			x += float64(around[i])
		}
		v[i] = float32(x)
		norm += x * x
	}
	inv := float32(1 / math.Sqrt(norm))
	for i := range v {
		v[i] *= inv
	}
	return v
}

func (g *generator) vector() vec {
	return g.noisy(&g.centres[g.r.IntN(len(g.centres))], 0.08)
}

func (g *generator) query() vec {
	return g.noisy(&g.centres[g.r.IntN(len(g.centres))], 0.1)
}
