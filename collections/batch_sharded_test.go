package collections

// Pools for the sharded containers' tests.
//
// There is one GPU at most here, so the pools simulate several devices:
// three host devices, or lavapipe's CPU Vulkan device opened twice as two
// logical devices. Every simulated device has its own allocator, limits,
// faults, queues and kernels, so sharding, fan-out and the error paths
// run as on several GPUs; the devices share one memory and one processor,
// so these tests say nothing of speed (the benchmarks, on GPUs, do).

import (
	"slices"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

type shPoolKind struct {
	name    string
	backend vmem.Backend
	n       int
}

func shPoolKinds() []shPoolKind {
	ks := []shPoolKind{{"host3", vmem.BackendHost, 3}}
	if slices.Contains(vmemtest.Backends(), vmem.BackendVulkan) {
		ks = append(ks, shPoolKind{"lavapipe2", vmem.BackendVulkan, 2})
	}
	return ks
}

// shOpenPool opens k's devices with options o (vmemtest checks each for
// leaks and closes it at cleanup) and makes a pool of them. A missing
// Vulkan device skips, or fails with VMEM_REQUIRE_VULKAN=1.
func shOpenPool(t testing.TB, k shPoolKind, o vmem.Options) *vmem.Pool {
	t.Helper()
	if o.ChunkSize == 0 {
		o.ChunkSize = 4 << 20
	}
	devs := make([]*vmem.Device, k.n)
	for i := range devs {
		devs[i] = vmemtest.Open(t, k.backend, o)
	}
	p, err := vmem.NewPool(devs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// shEachPool runs f as a subtest on every simulated pool.
func shEachPool(t *testing.T, o vmem.Options, f func(t *testing.T, p *vmem.Pool)) {
	for _, k := range shPoolKinds() {
		t.Run(k.name, func(t *testing.T) { f(t, shOpenPool(t, k, o)) })
	}
}

func TestShardedPlan(t *testing.T) {
	for _, n := range []int{0, 1, 100, 3 * shPieceMin, 5*shPieceMin + 7} {
		const nd = 5
		shardOf := func(i int) int { return (i * 7919) % nd }
		pl := shPlanBatch(n, nd, nil, shardOf)
		src := make([]int, n)
		for i := range src {
			src[i] = i
		}
		grouped := make([]int, n)
		shGroup(pl, src, grouped)
		for d := range nd {
			lo, hi := pl.run(d)
			for j := lo; j < hi; j++ {
				if shardOf(grouped[j]) != d || (j > lo && grouped[j] <= grouped[j-1]) {
					t.Fatalf("n %d: shard %d's run is not its keys in order", n, d)
				}
			}
		}
		back := make([]int, n)
		shUngroup(pl, grouped, back)
		if !slices.Equal(back, src) {
			t.Fatalf("n %d: ungroup does not restore the batch", n)
		}
	}
}
