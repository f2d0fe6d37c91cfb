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
	p, err := vmemtest.NewPool(devs...)
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

// TestShardedScatterGather: with a batch cut into many uneven pieces,
// shScatter writes each shard's keys in batch order into its own slice
// (route.Place8 for 8-byte keys, the loop for others), and answers
// written in that order come back in batch order through shGatherAnswers
// (route.Gather8 for 8-byte values).
func TestShardedScatterGather(t *testing.T) {
	oldMin, oldMax := shPieceMin, shMaxPieces
	shPieceMin, shMaxPieces = 10, 6
	t.Cleanup(func() { shPieceMin, shMaxPieces = oldMin, oldMax })
	for _, n := range []int{1, 9, 64, 1000, 4097} {
		const nd = 3
		shardOf := func(i int) int { return (i * 7919 / 3) % nd }
		pl := shPlanBatch(n, nd, nil, shardOf)
		src := make([]uint64, n)
		src3 := make([][3]uint32, n)
		for i := range src {
			src[i] = uint64(i)
			src3[i] = [3]uint32{uint32(i), 9, 9}
		}
		kd, kd3 := make([][]uint64, nd), make([][][3]uint32, nd)
		for d := range nd {
			a, b := pl.run(d)
			kd[d], kd3[d] = make([]uint64, b-a), make([][3]uint32, b-a)
		}
		shScatter(pl, src, kd)
		shScatter(pl, src3, kd3)
		vd, vd3, fd := make([][]uint64, nd), make([][][3]uint32, nd), make([][]bool, nd)
		for d := range nd {
			var want []uint64
			for i := range n {
				if shardOf(i) == d {
					want = append(want, uint64(i))
				}
			}
			if !slices.Equal(kd[d], want) {
				t.Fatalf("n %d shard %d: holds %v, want %v", n, d, kd[d], want)
			}
			for j, k := range kd[d] {
				if kd3[d][j] != [3]uint32{uint32(k), 9, 9} {
					t.Fatalf("n %d shard %d: 12-byte key %d is %v", n, d, j, kd3[d][j])
				}
				vd[d] = append(vd[d], k*10)
				vd3[d] = append(vd3[d], [3]uint32{uint32(k), 1, 2})
				fd[d] = append(fd[d], k%3 == 0)
			}
		}
		vals, vals3, found := make([]uint64, n), make([][3]uint32, n), make([]bool, n)
		shGatherAnswers(pl, vd, vals, fd, found)
		shGatherAnswers(pl, vd3, vals3, nil, nil)
		for i := range n {
			if vals[i] != uint64(i)*10 || found[i] != (i%3 == 0) || vals3[i] != [3]uint32{uint32(i), 1, 2} {
				t.Fatalf("n %d: answer %d: %d %v %v", n, i, vals[i], found[i], vals3[i])
			}
		}
	}
}

// shUngroup copies grouped results back into dst in batch order.
func shUngroup[T any](pl *shPlan, grouped, dst []T) {
	shGatherAnswers(pl, shSplit(pl, grouped), dst, nil, nil)
}
