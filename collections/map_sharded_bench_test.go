package collections

// BenchmarkShardedMapGetBatch: batch lookups on one GPU against every GPU
// of the machine (vmem.OpenAll). Without a GPU it runs on one host device
// and its figures mean nothing. On a machine with GPUs:
//
//	GOVRAM_BENCH_SIZES=1e7,1e8 go test -run X -bench BenchmarkShardedMapGetBatch -benchtime 20x ./collections
//
// GOVRAM_BENCH_BATCH sets the keys per GetBatch (default 1<<23, or the
// map's size if smaller).

import (
	"fmt"
	"github.com/govram/govram/internal/vmemtest"
	"os"
	"strconv"
	"testing"

	"github.com/govram/govram/vmem"
)

// shBenchKey is the i-th key: distinct for distinct i (an odd multiplier).
func shBenchKey(i uint64) uint64 { return i * 0x9e3779b97f4a7c15 }

// shBenchQueries returns the n keys of a benchmark map and a batch of
// min(batch, n) of them drawn at random (xorshift).
func shBenchQueries(n, batch int) (keys, q []uint64) {
	keys = make([]uint64, n)
	for i := range keys {
		keys[i] = shBenchKey(uint64(i))
	}
	q = make([]uint64, min(batch, n))
	var x uint64 = 88172645463325252
	for i := range q {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		q[i] = keys[x%uint64(n)]
	}
	return keys, q
}

// shBenchMap builds a ShardedMap of keys (each its own value) on p and
// runs one GetBatch of q, which copies the control bytes to each device.
func shBenchMap(b *testing.B, p *vmem.Pool, keys, q []uint64) *ShardedMap[uint64, uint64] {
	m, err := NewShardedMap[uint64, uint64](p, WithCapacity(len(keys)))
	if err != nil {
		b.Fatal(err)
	}
	for lo := 0; lo < len(keys); lo += 1 << 22 {
		hi := min(lo+1<<22, len(keys))
		if err := m.PutBatch(keys[lo:hi], keys[lo:hi]); err != nil {
			b.Fatal(err)
		}
	}
	if err := m.GetBatch(q, make([]uint64, len(q)), nil); err != nil {
		b.Fatal(err)
	}
	return m
}

func BenchmarkShardedMapGetBatch(b *testing.B) {
	p, err := vmem.OpenAll(vmem.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	one, err := vmem.NewPool(p.Device(0))
	if err != nil {
		b.Fatal(err)
	}
	batch := 1 << 23
	if s := os.Getenv("GOVRAM_BENCH_BATCH"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 1 {
			b.Fatalf("GOVRAM_BENCH_BATCH=%q", s)
		}
		batch = int(v)
	}
	pools := []struct {
		name string
		p    *vmem.Pool
	}{{"one", one}, {fmt.Sprintf("all-%d", p.Len()), p}}
	for _, n := range vmemtest.BenchSizes(b, 1e5) {
		keys, q := shBenchQueries(n, batch)
		vals := make([]uint64, len(q))
		found := make([]bool, len(q))
		for _, v := range pools {
			m := shBenchMap(b, v.p, keys, q)
			b.Run(fmt.Sprintf("%s/%s", vmemtest.SizeName(n), v.name), func(b *testing.B) {
				gpuBenchWarm(b, func() error { return m.GetBatch(q, vals, found) })
				for b.Loop() {
					if err := m.GetBatch(q, vals, found); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(q))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mkeys/s")
				for i := range q {
					if !found[i] || vals[i] != q[i] {
						b.Fatalf("key %d: %d %v", q[i], vals[i], found[i])
					}
				}
			})
			m.Close()
		}
	}
}

// BenchmarkShardedMapGetBatchSteps times the passes of one round of
// ShardedMap.GetBatch's direct path (GOVRAM_BENCH_BATCH keys, at most a
// round of mapGPUChunk) on every GPU of the machine, each on its own:
//
//	plan     finding every key's shard and counting them (all cores)
//	scatter  writing the keys into each device's pinned upload buffer
//	run      every device's upload, kernel and download, at once
//	gather   copying the answers back into batch order
//	round    the four in a row, as getBatchRounds does
func BenchmarkShardedMapGetBatchSteps(b *testing.B) {
	p, err := vmem.OpenAll(vmem.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	round := mapGPUChunk
	if s := os.Getenv("GOVRAM_BENCH_BATCH"); s != "" {
		if v, err := strconv.ParseFloat(s, 64); err == nil && v >= 1 {
			round = min(int(v), mapGPUChunk)
		}
	}
	for _, n := range vmemtest.BenchSizes(b, 1e5) {
		keys, q := shBenchQueries(n, round)
		vals := make([]uint64, len(q))
		found := make([]bool, len(q))
		m := shBenchMap(b, p, keys, q)
		var err error
		nd := len(m.shards)
		jobs := make([]*mapGetJob[uint64, uint64], nd)
		for d, sh := range m.shards {
			hmode, ok := sh.gpuMode()
			if !ok {
				b.Skip("no kernels")
			}
			if jobs[d], err = sh.gpuGetBegin(sh.t, hmode, len(q)); err != nil {
				b.Skip(err)
			}
		}
		sid := make([]uint8, len(q))
		kd, vd, fd := make([][]uint64, nd), make([][]uint64, nd), make([][]bool, nd)
		pl := shPlanRanges(len(q), nd, sid, m.shardFill(q))
		for d := range nd {
			a, c := pl.run(d)
			kd[d], vd[d], fd[d] = jobs[d].keys(c-a), jobs[d].vals(c-a), jobs[d].found(c-a)
		}
		step := func(name string, f func() error) {
			b.Run(fmt.Sprintf("%s/%d-dev/%s", vmemtest.SizeName(n), nd, name), func(b *testing.B) {
				gpuBenchWarm(b, f)
				for b.Loop() {
					if err := f(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(q))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mkeys/s")
			})
		}
		runAll := func() error {
			return shRun(pl.active(), func(d int) error {
				a, c := pl.run(d)
				return jobs[d].run(c-a, true)
			})
		}
		step("plan", func() error { shPlanRanges(len(q), nd, sid, m.shardFill(q)); return nil })
		step("scatter", func() error { shScatter(pl, q, kd); return nil })
		step("run", runAll)
		step("gather", func() error { shGather2From(pl, vd, vals, fd, found); return nil })
		for i := range q {
			if !found[i] || vals[i] != q[i] {
				b.Fatalf("key %d: %d %v", q[i], vals[i], found[i])
			}
		}
		step("round", func() error {
			_, err := m.getBatchRounds(q, vals, found)
			return err
		})
		for _, j := range jobs {
			j.close()
		}
		m.Close()
	}
}
