package collections

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/vmemtest"
)

// BenchmarkMapGetBatchSteps times the steps of one GetBatch round on its
// own (one part, the batch of VMEM_BENCH_BATCH keys in one round),
// against maps of each size of VMEM_BENCH_SIZES, to show where the time
// of an end-to-end GetBatch goes:
//
//	begin     taking the round's buffers and checking the control bytes' copy
//	keys-in   the CPU's copy of the keys into pinned memory
//	upload    the DMA of the keys to the device (a submit and wait)
//	kernel    the probe kernel alone (a submit and wait)
//	kernel-sorted  the same keys ordered by home bucket (neighbouring
//	          probes share lines and pages: what locality is worth)
//	download  the DMA of values and found bytes back
//	round     upload, kernel and download in one submit (mapGetJob.run)
//	out       the CPU's copies of the answers into Go memory
//	empty     a submit of one barrier: the fixed cost of a round trip
func BenchmarkMapGetBatchSteps(b *testing.B) {
	batch := mapGPUBenchBatch()
	for _, n := range vmemtest.BenchSizes(b, 1e6) {
		b.Run(vmemtest.SizeName(n), func(b *testing.B) {
			m := mapGPUStepsBuild(b, n)
			hmode, ok := m.gpuMode()
			if !ok || !kdev(m.dev).KernelsAvailable() {
				b.Skip("no kernels on this device")
			}
			ks := mapGPUBenchKeys(n, batch, 42)
			sorted := slices.Clone(ks)
			slices.SortFunc(sorted, func(a, c uint64) int {
				ha, hc := mapHome(m.hash(&a), m.t.nb), mapHome(m.hash(&c), m.t.nb)
				switch {
				case ha < hc:
					return -1
				case ha > hc:
					return 1
				}
				return 0
			})
			vs := make([]uint64, batch)
			found := make([]bool, batch)
			j, err := m.gpuGetBegin(m.t, hmode, batch)
			if err != nil {
				b.Fatal(err)
			}
			defer j.close()
			nn := uint64(batch)
			in := j.offK + nn*j.ks
			push := func() *mapGetPush {
				t := m.t
				dv := j.dv
				return &mapGetPush{keys: dv + j.offK, hashes: dv + j.offH, segs: dv, vals: dv + j.offV,
					found: dv + j.offF, seed: m.seed, nb: t.nb, nbAll: t.nbAll, n: uint32(batch), ks: uint32(j.ks),
					vs: uint32(j.vs), stride: uint32(m.r.stride), valOff: uint32(m.r.valOff), pp: uint32(m.r.p),
					shift: uint32(t.shift), hmode: j.hmode}
			}
			keysIn := func(k []uint64) {
				mapParCopy(unsafe.Pointer(unsafe.SliceData(j.keys(batch))), unsafe.Pointer(&k[0]), nn*j.ks)
			}
			step := func(name string, f func() error) {
				b.Run(name, func(b *testing.B) {
					for range b.N {
						if err := f(); err != nil {
							b.Fatal(err)
						}
					}
					mapGPUReport(b, batch)
				})
			}
			step("begin", func() error {
				jj, err := m.gpuGetBegin(m.t, hmode, batch)
				if err == nil {
					jj.close()
				}
				return err
			})
			step("keys-in", func() error { keysIn(ks); return nil })
			step("upload", func() error {
				j.kb.Upload(j.dv, j.st, 0, in)
				return j.kb.Run()
			})
			step("kernel", func() error {
				j.kb.Dispatch(mapGetKernel, nn, push())
				return j.kb.Run()
			})
			keysIn(sorted)
			j.kb.Upload(j.dv, j.st, 0, in)
			if err := j.kb.Run(); err != nil {
				b.Fatal(err)
			}
			step("kernel-sorted", func() error {
				j.kb.Dispatch(mapGetKernel, nn, push())
				return j.kb.Run()
			})
			keysIn(ks)
			step("download", func() error {
				j.kb.CopyTo(j.st, j.offV, j.dv+j.offV, nn*j.vs)
				j.kb.CopyTo(j.st, j.offF, j.dv+j.offF, mapRoundUp64(nn, 4))
				return j.kb.Run()
			})
			step("round", func() error { return j.run(batch, true) })
			step("out", func() error {
				mapParCopy(unsafe.Pointer(&vs[0]), unsafe.Pointer(unsafe.SliceData(j.vals(batch))), nn*j.vs)
				mapParCopy(unsafe.Pointer(&found[0]), unsafe.Pointer(unsafe.SliceData(j.found(batch))), nn)
				return nil
			})
			inv := mapBenchKeyInverse()
			for i := 0; i < batch; i += 9973 {
				if !found[i] || vs[i] != ks[i]*inv {
					b.Fatalf("key %d: %d, %v", i, vs[i], found[i])
				}
			}
			step("empty", func() error {
				j.kb.Barrier()
				return j.kb.Run()
			})
		})
	}
}

// mapGPUStepsBuild is mapGPUBenchBuild's Map without the Go map beside it
// (building a Go map of 10^8 entries takes longer than the steps).
func mapGPUStepsBuild(b *testing.B, n int) *Map[uint64, uint64] {
	if s := mapGPUBenchSets[n]; s != nil {
		return s.m
	}
	m, err := NewMap[uint64, uint64](mapBenchDevice(b), WithCapacity(n))
	if err != nil {
		b.Fatal(err)
	}
	mapGPUBenchFill(b, m, n, nil)
	b.Cleanup(func() { m.Close() })
	return m
}

// mapBenchKeyInverse returns the multiplier that takes mapBenchKey(i) back
// to i (the inverse of an odd number mod 2^64, by Newton's iteration).
func mapBenchKeyInverse() uint64 {
	const k = 0x9E3779B97F4A7C15
	inv := uint64(k)
	for range 6 {
		inv *= 2 - k*inv
	}
	return inv
}
