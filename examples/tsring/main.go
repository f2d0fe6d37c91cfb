// Tsring ingests metric samples through a ring in device memory and drains
// them to a compressed file, the shape of a metrics agent or a time-series
// database's write path.
//
// Producers generate samples (a timestamp, a series id and a value: 24
// bytes) as fast as they can and push them in batches into a
// collections.Ring[Sample]: sequential whole-line stores, the pattern
// write-combining VRAM takes fastest. One consumer drains the ring with
// PopBatch into a reused buffer (whole runs by DMA on a GPU), encodes
// blocks of samples (timestamps and series ids as deltas, each value XORed
// with its series' previous value) and writes them gzip-compressed to a file.
// At the end the file is read back and every sample checked.
//
//	go run ./examples/tsring                     # 4 million samples, 1000 series
//	go run ./examples/tsring -n 100000000 -ring 16777216 -producers 8
//	go run ./examples/tsring -keep               # keep the file and print its name
package main

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"github.com/govram/govram/internal/human"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/govram/govram/collections"
	"github.com/govram/govram/vmem"
)

// Sample is one measurement. It holds no pointers, so it can live in
// device memory.
type Sample struct {
	Time   int64 // Unix nanoseconds
	Series uint64
	Value  float64
}

type config struct {
	backend   vmem.Backend // auto, vulkan or host; VMEM_BACKEND overrides it
	n         int          // samples to ingest (rounded up to whole rounds of every series)
	series    int          // distinct series
	producers int          // producer goroutines
	ring      int          // ring capacity in samples
	batch     int          // samples per PushBatch and per PopBatch
	block     int          // samples per compressed block in the file
	dir       string       // where to write the file ("": a new temporary directory)
	keep      bool         // keep the file
	dev       *vmem.Device // an open device to use instead of opening one (tests)
}

func main() {
	cfg := config{}
	backend := flag.String("backend", "auto", "auto, vulkan or host (VMEM_BACKEND overrides)")
	flag.IntVar(&cfg.n, "n", 4_000_000, "samples to ingest")
	flag.IntVar(&cfg.series, "series", 1000, "distinct series")
	flag.IntVar(&cfg.producers, "producers", 2, "producer goroutines")
	flag.IntVar(&cfg.ring, "ring", 1<<20, "ring capacity in samples")
	flag.IntVar(&cfg.batch, "batch", 8192, "samples per PushBatch and PopBatch")
	flag.IntVar(&cfg.block, "block", 65536, "samples per compressed block")
	flag.StringVar(&cfg.dir, "dir", "", "directory for the file (default: a new temporary one)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the file")
	flag.Parse()
	cfg.backend = vmem.Backend(*backend) // Open refuses an unknown name
	if err := run(cfg, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

const (
	tsStart    = int64(1_767_225_600_000_000_000) // 2026-01-01 UTC
	tsInterval = int64(10 * time.Second)          // each series is sampled every 10 s
	fileMagic  = "TSR1"
)

// sampleAt is sample k of series s: a daily cycle, a level per series and a
// little deterministic noise, in hundredths like a real gauge.
func sampleAt(s, k uint64) Sample {
	noise := float64((s*0x9E3779B97F4A7C15+k*0xD1B54A32D192ED03)>>54) / 1024 // [0, 1)
	v := float64(s%97) + 10*math.Sin(float64(k)*2*math.Pi/8640) + noise
	return Sample{Time: tsStart + int64(k)*tsInterval, Series: s, Value: math.Round(v*100) / 100}
}

func run(cfg config, w io.Writer) error {
	if cfg.series < 1 || cfg.producers < 1 || cfg.ring < 1 || cfg.batch < 1 || cfg.block < 1 {
		return errors.New("tsring: -series, -producers, -ring, -batch and -block must be at least 1")
	}
	cfg.producers = min(cfg.producers, cfg.series)
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

	dir := cfg.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "tsring")
		if err != nil {
			return err
		}
		if !cfg.keep {
			defer os.RemoveAll(d)
		}
		dir = d
	}
	path := filepath.Join(dir, "samples.tsr")
	if !cfg.keep {
		defer os.Remove(path)
	}

	r, err := collections.NewRing[Sample](dev, cfg.ring) // no WithOverwrite: producers wait, nothing is lost
	if err != nil {
		return err
	}
	defer r.Close()

	rounds := (cfg.n + cfg.series - 1) / cfg.series
	total := rounds * cfg.series
	size := int(unsafe.Sizeof(Sample{}))
	fmt.Fprintf(w, "ring: %d samples of %d bytes (%s) in the %s tier; %d producers, %d series, %d samples\n",
		r.Stats().Cap, size, human.Bytes(r.Stats().Cap*size), vmem.Mapped, cfg.producers, cfg.series, total)

	ing, drain, err := pipeline(r, cfg, rounds, path)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "ingest: PushBatch took %d samples (%s) in %v of its own time: %.2f M samples/s, %.0f MB/s\n",
		ing.samples, human.Bytes(ing.samples*size), ing.push.Round(time.Millisecond),
		float64(ing.samples)/ing.push.Seconds()/1e6, float64(ing.samples*size)/ing.push.Seconds()/1e6)
	fmt.Fprintf(w, "end to end: %v, %.2f M samples/s (the slower side sets the pace); producers found the ring full %d times\n",
		ing.took.Round(time.Millisecond), float64(ing.samples)/ing.took.Seconds()/1e6, ing.full)
	fmt.Fprintf(w, "drain: PopBatch took %d samples in %v of its own time: %.2f M samples/s, %.0f MB/s; encode and write: %v\n",
		drain.samples, drain.pop.Round(time.Millisecond), float64(drain.samples)/drain.pop.Seconds()/1e6,
		float64(drain.samples*size)/drain.pop.Seconds()/1e6, drain.write.Round(time.Millisecond))
	fmt.Fprintf(w, "file: %d blocks, %d bytes written (%.2f bytes a sample, %.1fx smaller than raw)\n",
		drain.blocks, drain.bytes, float64(drain.bytes)/float64(drain.samples),
		float64(drain.samples*size)/float64(drain.bytes))
	if cfg.keep {
		fmt.Fprintf(w, "  kept at %s\n", path)
	}

	// The ring's memory is off the Go heap; the heap holds the producers'
	// batches and the encoder's buffers.
	runtime.GC()
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(heap)
	fmt.Fprintf(w, "memory: Go heap %s live; off the heap: mapped %s, private %s, host tier %s\n",
		human.Bytes(heap[0].Value.Uint64()), human.Bytes(dev.Info().Tiers[vmem.Mapped].InUse),
		human.Bytes(dev.Info().Tiers[vmem.Private].InUse), human.Bytes(dev.Info().Tiers[vmem.Host].InUse))

	got, err := verify(path, cfg.series, rounds)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "verify: read back %d samples of %d series, each series complete and in order, every value exact\n",
		got, cfg.series)
	return nil
}

type ingestStats struct {
	samples int
	took    time.Duration // from the start until every sample was pushed
	push    time.Duration // spent inside PushBatch
	full    int64         // times a PushBatch found the ring full
}

// pushStats is what the producers count together.
type pushStats struct {
	push atomic.Int64 // nanoseconds inside PushBatch
	full atomic.Int64
}

type drainStats struct {
	samples, blocks, bytes int
	pop, write             time.Duration
}

// pipeline runs the producers and the consumer until every sample is in the
// file.
func pipeline(r *collections.Ring[Sample], cfg config, rounds int, path string) (ingestStats, drainStats, error) {
	var (
		pushMu sync.Mutex // the ring takes one producer at a time: they share a lock
		ps     pushStats
		done   atomic.Bool
		wg     sync.WaitGroup
		errs   = make([]error, cfg.producers)
	)
	start := time.Now()
	for p := range cfg.producers {
		wg.Go(func() { errs[p] = produce(r, &pushMu, &ps, cfg, p, rounds) })
	}
	var ing ingestStats
	go func() {
		wg.Wait()
		ing.took = time.Since(start)
		done.Store(true)
	}()

	drain, err := consume(r, cfg, path, &done)
	wg.Wait()
	for !done.Load() {
		runtime.Gosched() // the goroutine above sets ing.took just before done
	}
	ing.samples = rounds * cfg.series
	ing.full = ps.full.Load()
	ing.push = time.Duration(ps.push.Load())
	if err == nil {
		err = errors.Join(errs...)
	}
	if err == nil && drain.samples != ing.samples {
		err = fmt.Errorf("tsring: %d samples pushed, %d drained", ing.samples, drain.samples)
	}
	return ing, drain, err
}

// produce pushes every round of the series s with s % producers == p.
func produce(r *collections.Ring[Sample], mu *sync.Mutex, st *pushStats, cfg config, p, rounds int) error {
	buf := make([]Sample, 0, cfg.batch)
	flush := func() error {
		for pending := buf; len(pending) > 0; {
			mu.Lock()
			t0 := time.Now()
			n, err := r.PushBatch(pending)
			st.push.Add(int64(time.Since(t0)))
			mu.Unlock()
			pending = pending[n:]
			if errors.Is(err, collections.ErrFull) {
				// Back pressure: the consumer is behind. Sleep rather than
				// spin, so it gets the CPU.
				st.full.Add(1)
				time.Sleep(100 * time.Microsecond)
			} else if err != nil {
				return err
			}
		}
		buf = buf[:0]
		return nil
	}
	for k := range rounds {
		for s := p; s < cfg.series; s += cfg.producers {
			buf = append(buf, sampleAt(uint64(s), uint64(k)))
			if len(buf) == cap(buf) {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// consume drains the ring into blocks written to path until the producers
// are done and the ring is empty.
func consume(r *collections.Ring[Sample], cfg config, path string, done *atomic.Bool) (drainStats, error) {
	var st drainStats
	f, err := os.Create(path)
	if err != nil {
		return st, err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	out := &countWriter{w: bw}
	if _, err := io.WriteString(out, fileMagic); err != nil {
		return st, err
	}

	// One buffer, reused by every PopBatch.
	dst := make([]Sample, cfg.batch)

	enc := newBlockEncoder(out)
	pending := make([]Sample, 0, cfg.block)
	for {
		finished := done.Load() // read before the pop: if it was set and the ring is empty, it stays empty
		t0 := time.Now()
		n, err := r.PopBatch(dst)
		st.pop += time.Since(t0)
		if err != nil {
			return st, err
		}
		if n == 0 {
			if finished {
				break
			}
			runtime.Gosched()
			continue
		}
		st.samples += n
		t0 = time.Now()
		for _, s := range dst[:n] {
			pending = append(pending, s)
			if len(pending) == cfg.block {
				if err := enc.write(pending); err != nil {
					return st, err
				}
				st.blocks++
				pending = pending[:0]
			}
		}
		st.write += time.Since(t0)
	}
	t0 := time.Now()
	if len(pending) > 0 {
		if err := enc.write(pending); err != nil {
			return st, err
		}
		st.blocks++
	}
	if err := bw.Flush(); err != nil {
		return st, err
	}
	st.write += time.Since(t0)
	st.bytes = out.n
	return st, f.Close()
}

// The file: "TSR1", then blocks, each a 4-byte little-endian length and a
// gzip member holding: the sample count (uvarint), then per sample the
// time's delta from the previous sample (varint), the series id's delta
// (varint), and the value's bits XORed with the previous value of the same
// series in the block (8 bytes, big-endian: close values share their high
// bytes, so the XOR starts with zero bytes that gzip squeezes).

type blockEncoder struct {
	out  io.Writer
	raw  []byte // the encoded block
	comp []byte // the block compressed
	zw   *gzip.Writer
	last map[uint64]uint64 // each series' previous value bits
}

func newBlockEncoder(out io.Writer) *blockEncoder {
	e := &blockEncoder{out: out, last: make(map[uint64]uint64)}
	e.zw, _ = gzip.NewWriterLevel(io.Discard, gzip.BestSpeed) // the level is valid
	return e
}

// byteSink appends what is written to a byte slice.
type byteSink struct{ b *[]byte }

func (s byteSink) Write(p []byte) (int, error) { *s.b = append(*s.b, p...); return len(p), nil }

func (e *blockEncoder) write(samples []Sample) error {
	e.raw = binary.AppendUvarint(e.raw[:0], uint64(len(samples)))
	clear(e.last)
	var prevT int64
	var prevS uint64
	for _, s := range samples {
		e.raw = binary.AppendVarint(e.raw, s.Time-prevT)
		e.raw = binary.AppendVarint(e.raw, int64(s.Series-prevS))
		bits := math.Float64bits(s.Value)
		e.raw = binary.BigEndian.AppendUint64(e.raw, bits^e.last[s.Series])
		e.last[s.Series] = bits
		prevT, prevS = s.Time, s.Series
	}
	e.comp = e.comp[:0]
	e.zw.Reset(byteSink{&e.comp})
	if _, err := e.zw.Write(e.raw); err != nil {
		return err
	}
	if err := e.zw.Close(); err != nil {
		return err
	}
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(e.comp)))
	if _, err := e.out.Write(hdr[:]); err != nil {
		return err
	}
	_, err := e.out.Write(e.comp)
	return err
}

// verify reads the file back and checks that every series has its rounds
// in order with the values sampleAt gives. It returns the samples read.
func verify(path string, series, rounds int) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	in := bufio.NewReaderSize(f, 1<<20)
	magic := make([]byte, len(fileMagic))
	if _, err := io.ReadFull(in, magic); err != nil || string(magic) != fileMagic {
		return 0, fmt.Errorf("tsring: %s: not a sample file", path)
	}
	next := make([]uint64, series) // next round expected per series
	total := 0
	var zr *gzip.Reader
	for block := 0; ; block++ {
		var hdr [4]byte
		if _, err := io.ReadFull(in, hdr[:]); err == io.EOF {
			break
		} else if err != nil {
			return total, fmt.Errorf("tsring: block %d: %w", block, err)
		}
		member := io.LimitReader(in, int64(binary.LittleEndian.Uint32(hdr[:])))
		if zr == nil {
			if zr, err = gzip.NewReader(member); err != nil {
				return total, fmt.Errorf("tsring: block %d: %w", block, err)
			}
		} else if err := zr.Reset(member); err != nil {
			return total, fmt.Errorf("tsring: block %d: %w", block, err)
		}
		zr.Multistream(false)
		raw, err := io.ReadAll(zr)
		if err != nil {
			return total, fmt.Errorf("tsring: block %d: %w", block, err)
		}
		samples, err := decodeBlock(raw)
		if err != nil {
			return total, fmt.Errorf("tsring: block %d: %w", block, err)
		}
		for _, s := range samples {
			if s.Series >= uint64(series) {
				return total, fmt.Errorf("tsring: block %d: series %d out of range", block, s.Series)
			}
			k := next[s.Series]
			if want := sampleAt(s.Series, k); s != want {
				return total, fmt.Errorf("tsring: block %d: read %+v, want %+v", block, s, want)
			}
			next[s.Series]++
		}
		total += len(samples)
	}
	for s, k := range next {
		if k != uint64(rounds) {
			return total, fmt.Errorf("tsring: series %d has %d samples, want %d", s, k, rounds)
		}
	}
	return total, nil
}

func decodeBlock(raw []byte) ([]Sample, error) {
	bad := errors.New("damaged block")
	n, k := binary.Uvarint(raw)
	if k <= 0 || n > uint64(len(raw)) {
		return nil, bad
	}
	raw = raw[k:]
	out := make([]Sample, 0, n)
	last := make(map[uint64]uint64)
	var prevT int64
	var prevS uint64
	for range n {
		dt, k1 := binary.Varint(raw)
		if k1 <= 0 {
			return nil, bad
		}
		ds, k2 := binary.Varint(raw[k1:])
		if k2 <= 0 || len(raw) < k1+k2+8 {
			return nil, bad
		}
		prevT += dt
		prevS += uint64(ds)
		bits := binary.BigEndian.Uint64(raw[k1+k2:]) ^ last[prevS]
		last[prevS] = bits
		out = append(out, Sample{Time: prevT, Series: prevS, Value: math.Float64frombits(bits)})
		raw = raw[k1+k2+8:]
	}
	if len(raw) != 0 {
		return nil, bad
	}
	return out, nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}
