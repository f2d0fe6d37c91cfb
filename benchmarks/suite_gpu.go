package main

// The gpu suite: vmem.Slice's batch operations (Sort, GetBatch, Sum), which
// run as compute kernels on a Vulkan device, against the same work on a
// []uint64 on the Go heap, against govram's CPU path on the same device
// (VMEM_KERNELS=0) and, for GetBatch, against the naive path.

import (
	"os"
	"slices"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/vmem"
)

// gatherLen is the number of indices one GetBatch reads.
const gatherLen = 1 << 16

func gpuSuite() *suite {
	return &suite{
		Name: "gpu",
		About: "vmem.Slice[uint64] batch operations: on a Vulkan device they run as compute kernels, one " +
			"submission each. govram/cpu is the same calls on a second device opened with VMEM_KERNELS=0 " +
			"(the CPU path; Vulkan only). Baseline: the same work on a []uint64 on the Go heap. On the host " +
			"backend govram runs these on the CPU too.",
		Ops: []opDoc{
			{"sort", "sort all the elements (random values, refilled untimed before each sort): vmem.Sort vs slices.Sort; one operation is the whole sort (ns/elem alongside)"},
			{"gather", "read 65536 elements at random indices into a buffer (GetBatch into a vmem.Host block; naive: plain loads); one operation is the whole batch"},
			{"sum", "add all the elements (vmem.Sum vs a loop); one operation is the whole pass"},
		},
		Groups: func(e *env, n int) []*group {
			return []*group{{Suite: "gpu", Name: "gpu", Size: n, Baselines: []string{"[]uint64"},
				Impls: []*impl{gpuGovram(e, n, "govram"), gpuGovram(e, n, "govram/cpu"), gpuNaive(e, n), gpuHeap(n)}}}
		},
	}
}

// cpuPathDevice opens (once) a second device like e.dev whose kernels are
// off: vmem reads VMEM_KERNELS when a device first needs its kernels, so
// the variable is set while the new device makes that first use.
func (e *env) cpuPathDevice() (*vmem.Device, error) {
	if e.noKern != nil || e.noKernErr != nil {
		return e.noKern, e.noKernErr
	}
	if e.dev.Info().Backend != vmem.BackendVulkan {
		e.noKernErr = skipf("the host backend has no kernels to turn off")
		return nil, e.noKernErr
	}
	old, had := os.LookupEnv("VMEM_KERNELS")
	os.Setenv("VMEM_KERNELS", "0")
	defer func() {
		if had {
			os.Setenv("VMEM_KERNELS", old)
		} else {
			os.Unsetenv("VMEM_KERNELS")
		}
	}()
	d, err := vmem.Open(vmem.Options{Backend: vmem.BackendVulkan, Device: e.dev.Info().Name})
	if err != nil {
		e.noKernErr = err
		return nil, err
	}
	s, err := vmem.NewSlice[uint32](d, 16)
	if err == nil {
		_, err = vmem.Sum(s)
		s.Close()
	}
	if err != nil {
		d.Close()
		e.noKernErr = err
		return nil, err
	}
	e.noKern = d
	return d, nil
}

// randomU64s returns n random values.
func randomU64s(n int, seed uint64) []uint64 {
	r := rng(seed)
	v := make([]uint64, n)
	for i := range v {
		v[i] = r.Uint64()
	}
	return v
}

func gpuGovram(e *env, n int, name string) *impl {
	return &impl{
		Name: name, Role: RoleGovram, Ops: []string{"sort", "gather", "sum"},
		Need: func() (uint64, uint64) { return uint64(n)*8 + gatherLen*16, uint64(n) * 8 * 4 },
		Setup: func() (*fixture, error) {
			dev := e.dev
			if name == "govram/cpu" {
				var err error
				if dev, err = e.cpuPathDevice(); err != nil {
					return nil, skipf("no CPU-path device (%v)", err)
				}
			}
			var cl closer
			s, err := vmem.NewSlice[uint64](dev, n)
			if err != nil {
				return nil, err
			}
			cl.add(s.Close)
			src := randomU64s(n, 7)
			if err := s.CopyFrom(src, 0); err != nil {
				return cl.fail(err)
			}
			idx := randomIdx(n, min(gatherLen, n), 8)
			dst := make([]uint64, len(idx))
			if blk, err := kern.Of(dev).Alloc(block.Host, uint64(len(idx))*8, 0); err == nil {
				cl.add(func() error { return kern.Of(dev).Free(blk) })
				dst = blockU64s(blk)[:len(idx)]
			}
			fx := &fixture{close: cl.close}
			fx.add("sort", func(b *B) error {
				for range b.N {
					b.StopTimer()
					if err := s.CopyFrom(src, 0); err != nil {
						return err
					}
					b.StartTimer()
					if err := vmem.Sort(s); err != nil {
						return err
					}
				}
				b.StopTimer()
				if s.Get(0) > s.Get(n-1) {
					return errorf("the Slice is not sorted")
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/elem")
				return nil
			})
			fx.add("gather", func(b *B) error {
				for range b.N {
					if err := s.GetBatch(idx, dst); err != nil {
						return err
					}
				}
				b.StopTimer()
				if dst[len(dst)-1] != s.Get(idx[len(idx)-1]) {
					return errorf("GetBatch returned a wrong element")
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(idx)), "ns/elem")
				return nil
			})
			fx.add("sum", func(b *B) error {
				b.SetBytes(int64(n) * 8)
				for range b.N {
					// Random uint64s overflow a uint64 sum, which Sum reports.
					v, err := vmem.SumAs[float64](s)
					if err != nil {
						return err
					}
					sink += uint64(v)
				}
				return nil
			})
			return fx, nil
		},
	}
}

func gpuHeap(n int) *impl {
	return &impl{
		Name: "[]uint64", Role: RoleBaseline, Ops: []string{"sort", "gather", "sum"},
		Need: func() (uint64, uint64) { return uint64(n) * 16, 0 },
		Setup: func() (*fixture, error) {
			src := randomU64s(n, 7)
			h := slices.Clone(src)
			idx := randomIdx(n, min(gatherLen, n), 8)
			dst := make([]uint64, len(idx))
			fx := &fixture{}
			fx.add("sort", func(b *B) error {
				for range b.N {
					b.StopTimer()
					copy(h, src)
					b.StartTimer()
					slices.Sort(h)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/elem")
				return nil
			})
			fx.add("gather", gatherLoop(h, idx, dst))
			fx.add("sum", func(b *B) error {
				b.SetBytes(int64(n) * 8)
				for range b.N {
					var sum uint64
					for _, v := range h {
						sum += v
					}
					sink += sum
				}
				return nil
			})
			return fx, nil
		},
	}
}

// gatherLoop reads u at idx into dst with plain loads.
func gatherLoop(u []uint64, idx []int, dst []uint64) benchFunc {
	return func(b *B) error {
		for range b.N {
			for k, i := range idx {
				dst[k] = u[i]
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(idx)), "ns/elem")
		return nil
	}
}

// gpuNaive is only GetBatch: a sort or a sum over mapped VRAM with plain
// loads (about 1.5 µs each on an H200) would take minutes at these sizes;
// the slice suite's scan shows the naive sequential read rate.
func gpuNaive(e *env, n int) *impl {
	return &impl{
		Name: "naive", Role: RoleNaive, Ops: []string{"gather"},
		Need: func() (uint64, uint64) { return gatherLen * 16, uint64(n) * 8 },
		Setup: func() (*fixture, error) {
			blk, u, err := mappedU64s(e.dev, n)
			if err != nil {
				return nil, err
			}
			copy(u, randomU64s(n, 7))
			idx := randomIdx(n, min(gatherLen, n), 8)
			fx := &fixture{close: func() error { return kern.Of(e.dev).Free(blk) }}
			fx.add("gather", gatherLoop(u, idx, make([]uint64, len(idx))))
			return fx, nil
		},
	}
}
