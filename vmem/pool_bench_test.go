package vmem_test

// Capacity and bandwidth of a pool of real GPUs. Both open every GPU of the
// machine (vmem.OpenAll); here, without a GPU, they run on one host device
// (or on lavapipe with VMEM_BACKEND=vulkan), which checks that they work
// and says nothing of GPU speed.
//
//	VMEM_POOL_CAPACITY=1 VMEM_POOL_CAPACITY_MIN_GIB=270 go test -run TestPoolCapacity -v -timeout 20m ./vmem
//	VMEM_BENCH_SIZES=1e8,1e9 go test -run X -bench BenchmarkPoolSliceCopy ./vmem

import (
	"errors"
	"fmt"
	"github.com/govram/govram/internal/human"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/govram/govram/internal/vmemtest"

	"github.com/govram/govram/vmem"
)

// poolValue is element i's value in the capacity test.
func poolValue(i int) uint64 { return uint64(i)*0x9e3779b97f4a7c15 + 12345 }

// poolGen fills buf with the values of elements at, at+1, ... on all cores.
func poolGen(buf []uint64, at int) {
	w := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	per := (len(buf) + w - 1) / w
	for lo := 0; lo < len(buf); lo += per {
		wg.Go(func() {
			for i := lo; i < min(lo+per, len(buf)); i++ {
				buf[i] = poolValue(at + i)
			}
		})
	}
	wg.Wait()
}

func envFloat(t testing.TB, name string) float64 {
	s := os.Getenv(name)
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return f
}

// TestPoolCapacity makes one PoolSlice as large as every GPU of the machine
// allows, fills it with CopyFrom (every device's share at once), and checks
// a sample of the values. Opt-in: VMEM_POOL_CAPACITY=1. Options:
// VMEM_POOL_CAPACITY_MIN_GIB fails the test below that size (270 for two
// H200s); VMEM_POOL_CAPACITY_MAX_GIB caps the request (for small runs);
// VMEM_POOL_PLACEMENT=fill-first fills one device after the other
// (default stripe).
func TestPoolCapacity(t *testing.T) {
	if os.Getenv("VMEM_POOL_CAPACITY") != "1" {
		t.Skip("set VMEM_POOL_CAPACITY=1 to fill every GPU (see the file comment)")
	}
	minGiB, maxGiB := envFloat(t, "VMEM_POOL_CAPACITY_MIN_GIB"), envFloat(t, "VMEM_POOL_CAPACITY_MAX_GIB")
	pl, err := vmem.ParsePlacement(os.Getenv("VMEM_POOL_PLACEMENT"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := vmem.OpenAll(vmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i, d := range p.Devices() {
		t.Logf("device %d: %s", i, d.Info())
	}
	if p.Devices()[0].Info().Backend != vmem.BackendVulkan && maxGiB == 0 {
		t.Skip("no GPU: set VMEM_POOL_CAPACITY_MAX_GIB to run on host memory")
	}
	var want uint64
	for i := range len(p.Devices()) {
		want += p.Devices()[i].Info().Tiers[vmem.Mapped].Capacity // mapped and private share the VRAM heap
	}
	if maxGiB > 0 {
		want = min(want, uint64(maxGiB*(1<<30)))
	}
	start := time.Now()
	s, err := vmem.NewSlice[uint64](p, 0, vmem.WithPlacement(pl))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Asking for all of VRAM fails, but every device keeps what it could
	// reserve as capacity; then take exactly that.
	if err := s.Resize(int(want / 8)); err != nil {
		if !errors.Is(err, vmem.ErrOutOfMemory) {
			t.Fatal(err)
		}
		t.Logf("asked for %s: %v", human.Bytes(want), err)
		if err := s.Resize(s.Cap()); err != nil {
			t.Fatal(err)
		}
	}
	n := s.Len()
	size := human.Bytes(uint64(n) * 8)
	t.Logf("one Slice[uint64] on the pool, of %d elements = %s (%.1f GiB), placement %s, allocated in %v", n, size, float64(n)*8/(1<<30), pl, time.Since(start))
	for d, l := range vmem.DeviceLens(s) {
		t.Logf("device %d: %s; mapped %+v; private %+v", d, human.Bytes(uint64(l)*8), p.Devices()[d].Info().Tiers[vmem.Mapped], p.Devices()[d].Info().Tiers[vmem.Private])
	}
	if got := float64(n) * 8 / (1 << 30); got < minGiB {
		t.Errorf("capacity %.1f GiB, want at least %.1f GiB", got, minGiB)
	}

	// Fill: the next chunk is generated on all cores while CopyFrom moves
	// this one (a striped chunk covers every device, so they all work).
	chunk := min(n, max(len(p.Devices())*(64<<20)/8, 1))
	bufs := [2][]uint64{make([]uint64, chunk), make([]uint64, chunk)}
	start = time.Now()
	poolGen(bufs[0][:min(chunk, n)], 0)
	for at, i := 0, 0; at < n; at, i = at+chunk, i^1 {
		k := min(chunk, n-at)
		var wg sync.WaitGroup
		if at+k < n {
			wg.Go(func() { poolGen(bufs[i^1][:min(chunk, n-at-k)], at+k) })
		}
		err := s.CopyFrom(bufs[i][:k], at)
		wg.Wait()
		if err != nil {
			t.Fatalf("CopyFrom at %d: %v", at, err)
		}
	}
	el := time.Since(start)
	t.Logf("filled %s in %v: %.1f GB/s (generation included)", size, el, float64(n)*8/el.Seconds()/1e9)

	// Check a sample: random elements by Gather (a kernel per GPU at once)
	// and GetMany, and every device boundary.
	r := rand.New(rand.NewPCG(1, 2))
	idx := make([]int, 1<<20)
	for i := range idx {
		idx[i] = r.IntN(n)
	}
	idx = append(idx, 0, n-1)
	at := 0
	for _, l := range vmem.DeviceLens(s) {
		if l > 0 {
			idx = append(idx, at, at+l-1)
			at += l
		}
	}
	got := make([]uint64, len(idx))
	if err := s.GetBatch(idx, got); err != nil {
		t.Fatal(err)
	}
	for k, i := range idx {
		if got[k] != poolValue(i) {
			t.Fatalf("Gather: element %d = %#x, want %#x", i, got[k], poolValue(i))
		}
	}
	s.GetManyCPU(idx[:4096], got[:4096])
	for k, i := range idx[:4096] {
		if got[k] != poolValue(i) {
			t.Fatalf("GetMany: element %d = %#x, want %#x", i, got[k], poolValue(i))
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("checked %d elements", len(idx))
}

// BenchmarkPoolSliceCopy moves a striped PoolSlice[uint64] to and from Go
// memory, on device 0 alone ("one") and on every device of the machine
// ("all-N"): the bandwidth a pool adds. GB/s counts the array's bytes. All
// ranges over the elements, summing them.
func BenchmarkPoolSliceCopy(b *testing.B) {
	p, err := vmem.OpenAll(vmem.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	one, err := vmemtest.NewPool(p.Devices()[0])
	if err != nil {
		b.Fatal(err)
	}
	pools := []struct {
		name string
		p    *vmem.Pool
	}{{"one", one}, {fmt.Sprintf("all-%d", len(p.Devices())), p}}
	for _, n := range vmemtest.BenchSizes(b, 4e6) {
		buf := make([]uint64, n)
		poolGen(buf, 0)
		var want uint64
		for _, v := range buf {
			want += v
		}
		for _, v := range pools {
			s, err := vmem.NewSlice[uint64](v.p, n)
			if err != nil {
				b.Fatal(err)
			}
			// Touch every page once: the first stores into freshly mapped
			// VRAM fault page by page (docs/physics.md), which is not the
			// bandwidth being compared.
			if err := s.CopyFrom(buf, 0); err != nil {
				b.Fatal(err)
			}
			for _, op := range []string{"CopyFrom", "CopyTo", "All"} {
				b.Run(fmt.Sprintf("%s/%s/%s", op, vmemtest.SizeName(n), v.name), func(b *testing.B) {
					b.SetBytes(int64(n) * 8)
					for b.Loop() {
						var err error
						switch op {
						case "All":
							var sum uint64
							if sum, err = poolSum(s); sum != want {
								b.Fatalf("All: sum %d, want %d", sum, want)
							}
						case "CopyFrom":
							err = s.CopyFrom(buf, 0)
						default:
							err = s.CopyTo(buf, 0)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(n)*8*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				})
			}
			s.Close()
		}
	}
}

// poolSum adds up s's elements with All.
func poolSum(s *vmem.Slice[uint64]) (uint64, error) {
	var sum uint64
	for _, v := range s.All() {
		sum += v
	}
	return sum, s.Err()
}
