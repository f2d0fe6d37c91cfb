package collections

// BenchmarkShardedMapGetBatch: batch lookups on one GPU against every GPU
// of the machine (vmem.OpenAll). Without a GPU it runs on one host device
// and its figures mean nothing. On a machine with GPUs:
//
//	VMEM_BENCH_SIZES=1e7,1e8 go test -run X -bench BenchmarkShardedMapGetBatch -benchtime 20x ./collections
//
// VMEM_BENCH_BATCH sets the keys per GetBatch (default 1<<23, or the
// map's size if smaller), VMEM_BENCH_CHUNK the keys per kernel round
// (mapGPUChunk).

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/internal/route"
	"github.com/govram/govram/internal/vmemtest"

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

// shBenchMap builds a Map of keys (each its own value) on p and
// runs one GetBatch of q, which copies the control bytes to each device.
func shBenchMap(b *testing.B, p *vmem.Pool, keys, q []uint64) *Map[uint64, uint64] {
	m, err := NewMap[uint64, uint64](p, WithCapacity(len(keys)))
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
	shBenchChunk(b)
	shBenchQueued(b)
	p := shBenchPool(b)
	defer p.Close()
	one, err := vmemtest.NewPool(p.Devices()[0])
	if err != nil {
		b.Fatal(err)
	}
	batch := 1 << 23
	if s := os.Getenv("VMEM_BENCH_BATCH"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 1 {
			b.Fatalf("VMEM_BENCH_BATCH=%q", s)
		}
		batch = int(v)
	}
	pools := []struct {
		name string
		p    *vmem.Pool
	}{{"one", one}, {fmt.Sprintf("all-%d", len(p.Devices())), p}}
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
// a pool Map's GetBatch direct path (VMEM_BENCH_BATCH keys, at most a
// round of mapGPUChunk) on every GPU of the machine, each on its own:
//
//	copy     a parallel copy of the keys (what one GPU's GetBatch spends)
//	plan     finding every key's shard and counting them (all cores)
//	scatter  writing the keys into each device's pinned upload buffer
//	split    the two in one pass into fixed regions (what GetBatch does
//	         for 8-byte keys; plan and scatter are its fallback)
//	run      every device's upload, kernel and download, at once
//	run-one  the first device's for the whole round, alone
//	gather   copying the answers back into batch order
//	split-kept, gather-kept  the one-pass split and the gather on par's
//	         kept workers, as GetBatch runs them
//	gather+split  both at once, as GetBatch runs them for two rounds
//	round    a whole GetBatch of one round (split, run, gather)
//
// "-loop" steps run route's plain loops instead of its AVX-512 ones;
// scatter-heap writes into the Go heap instead of pinned memory.
// VMEM_BENCH_PROCS=8,16,32 times the steps under each GOMAXPROCS.
func BenchmarkShardedMapGetBatchSteps(b *testing.B) {
	shBenchChunk(b)
	p := shBenchPool(b)
	defer p.Close()
	round := mapGPUChunk
	if s := os.Getenv("VMEM_BENCH_BATCH"); s != "" {
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
		nd := len(m.sh.shards)
		jobs := make([]*mapGetJob[uint64, uint64], nd)
		for d, sh := range m.sh.shards {
			hmode, ok := sh.gpuMode()
			if !ok {
				b.Skip("no kernels")
			}
			if jobs[d], err = sh.gpuGetBegin(sh.t, hmode, len(q)); err != nil {
				b.Skip(err)
			}
		}
		sid := make([]uint8, len(q))
		vd, fd, kfull, hfull := make([][]uint64, nd), make([][]bool, nd), make([][]uint64, nd), make([][]uint64, nd)
		for d := range nd {
			kfull[d] = jobs[d].keys(len(q))
			hfull[d] = make([]uint64, len(q))
		}
		sb := &shStepsBench{m: m.sh, n: n, nd: nd, q: q, vals: vals, found: found, jobs: jobs,
			sid: sid, vd: vd, fd: fd, kfull: kfull, hfull: hfull}
		for _, procs := range shBenchProcs(b) {
			sb.steps(b, procs)
		}
		for _, j := range jobs {
			j.close()
		}
		m.Close()
	}
}

// shStepsBench is what BenchmarkShardedMapGetBatchSteps times its steps on,
// at one size: the map, the round of queries, its answers and the devices'
// jobs and buffers.
type shStepsBench struct {
	m            *shardedMap[uint64, uint64]
	n, nd        int
	q, vals      []uint64
	found        []bool
	jobs         []*mapGetJob[uint64, uint64]
	sid          []uint8
	vd           [][]uint64
	fd           [][]bool
	kfull, hfull [][]uint64
}

// steps times every step of BenchmarkShardedMapGetBatchSteps under
// GOMAXPROCS procs.
func (sb *shStepsBench) steps(b *testing.B, procs int) {
	m, n, nd, q, vals, found, jobs := sb.m, sb.n, sb.nd, sb.q, sb.vals, sb.found, sb.jobs
	sid, vd, fd, kfull, hfull := sb.sid, sb.vd, sb.fd, sb.kfull, sb.hfull
	old := runtime.GOMAXPROCS(procs)
	step := func(name string, f func() error) {
		b.Run(fmt.Sprintf("%s/%d-dev/p%d/%s", vmemtest.SizeName(n), nd, procs, name), func(b *testing.B) {
			gpuBenchWarm(b, f)
			for b.Loop() {
				if err := f(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(q))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mkeys/s")
		})
	}
	// loop runs f with route's plain loops instead of its vector ones.
	loop := func(f func() error) func() error {
		return func() error {
			v := route.SetVector(false)
			defer route.SetVector(v)
			return f()
		}
	}
	// What one GPU's GetBatch spends on the same keys: a parallel
	// copy into the upload buffer (and about as much back).
	step("copy", func() error {
		mapParCopy(unsafe.Pointer(&kfull[0][0]), unsafe.Pointer(&q[0]), uint64(len(q))*8)
		return nil
	})
	var pl *shPlan
	plan := func() error { pl = shPlanRanges(len(q), nd, sid, m.shardFill(q)); return nil }
	step("plan-loop", loop(plan))
	step("plan", plan)
	kd, hk := make([][]uint64, nd), make([][]uint64, nd)
	for d := range nd {
		a, c := pl.run(d)
		kd[d], vd[d], fd[d] = jobs[d].keys(c-a), jobs[d].vals(c-a), jobs[d].found(c-a)
		hk[d] = hfull[d][:c-a]
	}
	step("scatter-heap", func() error { shScatter(pl, q, hk); return nil }) // into the Go heap, not pinned memory
	scatter := func() error { shScatter(pl, q, kd); return nil }
	step("scatter-loop", loop(scatter))
	step("scatter", scatter)
	// The one-pass split GetBatch takes for these keys (plan and
	// scatter above are its fallback); the run below uses the
	// two-pass plan.
	if nd > 1 { // one device: GetBatch is the Map's own
		step("split", func() error {
			if m.splitFixed(q, sid, len(q), jobs) == nil {
				return fmt.Errorf("the one-pass split refused the benchmark's keys")
			}
			return nil
		})
	}
	pl = shPlanRanges(len(q), nd, sid, m.shardFill(q))
	scatter()
	step("run", func() error {
		return shRun(pl.active(), func(d int) error {
			a, c := pl.run(d)
			return jobs[d].run(c-a, true)
		})
	})
	// One device alone with the whole round (its keys are stale:
	// only the time counts).
	step("run-one", func() error { return jobs[0].run(len(q), true) })
	gather := func() error { shGatherAnswers(pl, vd, vals, fd, found); return nil }
	step("gather-loop", loop(gather))
	step("gather", gather)
	if nd > 1 {
		sb.keptSteps(b, step, pl)
	}
	for i := range q {
		if !found[i] || vals[i] != q[i] {
			b.Fatalf("key %d: %d %v", q[i], vals[i], found[i])
		}
	}
	round := func() error {
		_, err := m.getBatchDirect(q, vals, found)
		return err
	}
	step("round-loop", loop(round))
	step("round", round)
	runtime.GOMAXPROCS(old)
}

// keptSteps times the split and the gather on par's kept workers, alone and
// together, with step; pl is the two-pass plan the gather reads.
func (sb *shStepsBench) keptSteps(b *testing.B, step func(string, func() error), pl *shPlan) {
	m, q, vals, found, jobs, vd, fd := sb.m, sb.q, sb.vals, sb.found, sb.jobs, sb.vd, sb.fd
	// What GetBatch runs: the passes on par's kept workers, and
	// a round's answers put back while the next is split.
	fpl, splitKept, overflowed := m.splitFixedParts(q, make([]uint8, len(q)), len(q), jobs)
	if fpl == nil {
		b.Fatal("the one-pass split refused the benchmark's keys")
	}
	sn := len(fpl.plo) - 1
	gn, gpiece := shGather8Parts(pl, vd, vals, fd, found)
	step("split-kept", func() error { par.Run(sn, splitKept); return nil })
	step("gather-kept", func() error { par.Run(gn, gpiece); return nil })
	step("gather+split", func() error {
		par.Run(gn+sn, func(i int) {
			if i < gn {
				gpiece(i)
			} else {
				splitKept(i - gn)
			}
		})
		return nil
	})
	if overflowed() {
		b.Fatal("the one-pass split overflowed")
	}
}

// shBenchPool opens every GPU of the machine, or with VMEM_BENCH_SAME=n
// the first GPU n times over (n logical devices sharing one GPU: the CPU's
// passes of a sharded batch can then be timed on a machine of one GPU;
// the GPUs' steps mean nothing there).
func shBenchPool(b *testing.B) *vmem.Pool {
	s := os.Getenv("VMEM_BENCH_SAME")
	if s == "" {
		p, err := vmem.OpenAll(vmem.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("VMEM_BENCH_SAME=%q", s)
	}
	devs := make([]*vmem.Device, n)
	for i := range devs {
		if devs[i], err = vmem.Open(vmem.Options{Backend: vmem.BackendVulkan, Device: "0"}); err != nil {
			b.Fatal(err)
		}
	}
	p, err := vmemtest.NewPool(devs...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, d := range devs {
			d.Close()
		}
	})
	return p
}

// shBenchProcs returns the GOMAXPROCS values to time the steps with:
// VMEM_BENCH_PROCS (a list such as "8,16,32"), by default the current.
func shBenchProcs(b *testing.B) []int {
	s := os.Getenv("VMEM_BENCH_PROCS")
	if s == "" {
		return []int{runtime.GOMAXPROCS(0)}
	}
	var ps []int
	for f := range strings.SplitSeq(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			b.Fatalf("VMEM_BENCH_PROCS=%q", s)
		}
		ps = append(ps, v)
	}
	return ps
}

// shBenchChunk applies VMEM_BENCH_CHUNK (keys per kernel round,
// mapGPUChunk) for the rest of the benchmark.
func shBenchChunk(b *testing.B) {
	s := os.Getenv("VMEM_BENCH_CHUNK")
	if s == "" {
		return
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 1024 {
		b.Fatalf("VMEM_BENCH_CHUNK=%q", s)
	}
	old := mapGPUChunk
	mapGPUChunk = int(v)
	b.Cleanup(func() { mapGPUChunk = old })
}

// shBenchQueued applies VMEM_BENCH_QUEUED (rounds of a pool Map's
// GetBatch queued on the devices at a time, default shGetQueued).
func shBenchQueued(b *testing.B) {
	s := os.Getenv("VMEM_BENCH_QUEUED")
	if s == "" {
		return
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 2 {
		b.Fatalf("VMEM_BENCH_QUEUED=%q", s)
	}
	old := shGetQueued
	shGetQueued = v
	b.Cleanup(func() { shGetQueued = old })
}
