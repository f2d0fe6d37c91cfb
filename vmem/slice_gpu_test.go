package vmem_test

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// kernelsOn lowers the size thresholds so that small tests run the
// kernels, and returns a check that, on a device that has kernels, some
// ran.
func kernelsOn(t *testing.T, d *vmem.Device) func() {
	t.Helper()
	restore := vmem.SetKernelThresholds(64, 1)
	t.Cleanup(restore)
	before := vmem.KernelDispatches(d)
	return func() {
		t.Helper()
		if vmem.KernelsAvailable(d) && vmem.KernelDispatches(d) == before {
			t.Errorf("no kernel ran on %s", d.Info().Name)
		}
	}
}

// gpuSizes are element counts around the kernels' tile sizes (2048 keys a
// tile, 256 invocations a workgroup), kept small for lavapipe.
func gpuSizes() []int {
	if testing.Short() {
		return []int{0, 1, 2, 255, 2049}
	}
	return []int{0, 1, 2, 3, 255, 2048, 2049, 6001}
}

// segOpts: one Slice of one segment and, where there is enough data, one
// of many small segments.
func segOpts(n int) [][]vmem.SliceOption {
	if n < 1000 {
		return [][]vmem.SliceOption{nil}
	}
	return [][]vmem.SliceOption{nil, {vmemtest.WithSegmentBytes(4096)}}
}

// totalOrder64 maps float bits to a signed integer whose order is IEEE
// 754 total order: a formulation independent of the package's.
func totalOrder64(f float64) int64 {
	k := int64(math.Float64bits(f))
	if k < 0 {
		k ^= math.MaxInt64
	}
	return k
}

func totalOrder32(f float32) int32 {
	k := int32(math.Float32bits(f))
	if k < 0 {
		k ^= math.MaxInt32
	}
	return k
}

// refCompare orders values as Sort documents.
func refCompare[T vmem.Number](a, b T) int {
	switch x := any(a).(type) {
	case float32:
		return cmp.Compare(totalOrder32(x), totalOrder32(any(b).(float32)))
	case float64:
		return cmp.Compare(totalOrder64(x), totalOrder64(any(b).(float64)))
	}
	return cmp.Compare(a, b)
}

// randNumbers makes n values of T: random bits, a few special values
// (NaNs of both signs, infinities, zeros, extremes), and duplicates
// (dupRange > 0: that many distinct values; 1: all equal; -1: only the low
// 12 bits vary, so the sort skips the passes over the other bytes).
func randNumbers[T vmem.Number](rng *rand.Rand, n int, dupRange int) []T {
	out := make([]T, n)
	var zero T
	size := unsafe.Sizeof(zero)
	for i := range out {
		b := rng.Uint64()
		if dupRange > 0 {
			b = uint64(rng.IntN(dupRange)) * 0x9e3779b97f4a7c15
		} else if dupRange < 0 {
			b &= 0xfff
		}
		switch size {
		case 1:
			*(*uint8)(unsafe.Pointer(&out[i])) = uint8(b)
		case 2:
			*(*uint16)(unsafe.Pointer(&out[i])) = uint16(b)
		case 4:
			*(*uint32)(unsafe.Pointer(&out[i])) = uint32(b)
		default:
			*(*uint64)(unsafe.Pointer(&out[i])) = b
		}
	}
	specials := []float64{math.NaN(), -math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), -1, 1, -1e300, 1e-300}
	if dupRange != 0 {
		return out
	}
	switch p := any(&out).(type) {
	case *[]float64:
		for i := range *p {
			if rng.IntN(8) == 0 {
				(*p)[i] = specials[rng.IntN(len(specials))]
			}
		}
	case *[]float32:
		for i := range *p {
			if rng.IntN(8) == 0 {
				(*p)[i] = float32(specials[rng.IntN(len(specials))])
			}
		}
	}
	return out
}

// sameBits compares values bit for bit (NaNs included).
func sameBits[T any](a, b T) bool {
	return string(unsafe.Slice((*byte)(unsafe.Pointer(&a)), unsafe.Sizeof(a))) ==
		string(unsafe.Slice((*byte)(unsafe.Pointer(&b)), unsafe.Sizeof(b)))
}

func readAll[T any](t *testing.T, s *vmem.Slice[T]) []T {
	t.Helper()
	out := make([]T, s.Len())
	if err := s.CopyTo(out, 0); err != nil {
		t.Fatal(err)
	}
	return out
}

func newFilled[T any](t *testing.T, d *vmem.Device, vals []T, opts ...vmem.SliceOption) *vmem.Slice[T] {
	t.Helper()
	s, err := vmem.NewSlice[T](d, len(vals), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.CopyFrom(vals, 0); err != nil {
		t.Fatal(err)
	}
	return s
}

func testSortType[T vmem.Number](t *testing.T, d *vmem.Device) {
	var zero T
	t.Run(fmt.Sprintf("%T", zero), func(t *testing.T) {
		rng := rand.New(rand.NewPCG(uint64(unsafe.Sizeof(zero)), 7))
		for _, n := range gpuSizes() {
			for _, dup := range []int{0, 5, 1, -1} {
				vals := randNumbers[T](rng, n, dup)
				// Small segments make a Slice of many segments.
				for _, opts := range segOpts(n) {
					s := newFilled(t, d, vals, opts...)
					if err := vmem.Sort(s); err != nil {
						t.Fatalf("n=%d: %v", n, err)
					}
					want := slices.Clone(vals)
					slices.SortFunc(want, refCompare[T])
					got := readAll(t, s)
					for i := range want {
						if !sameBits(got[i], want[i]) {
							t.Fatalf("n=%d dup=%d segs=%v: element %d is %v, want %v", n, dup, opts != nil, i, got[i], want[i])
						}
					}
					s.Close()
				}
			}
		}
	})
}

func TestSliceSort(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		ran := kernelsOn(t, d)
		testSortType[uint8](t, d)
		testSortType[int8](t, d)
		testSortType[uint16](t, d)
		testSortType[int16](t, d)
		testSortType[uint32](t, d)
		testSortType[int32](t, d)
		testSortType[float32](t, d)
		testSortType[uint64](t, d)
		testSortType[int64](t, d)
		testSortType[float64](t, d)
		testSortType[int](t, d)
		testSortType[uintptr](t, d)
		ran()
	})
}

// Records for SortBy and Gather, with layouts of every kind: dense words,
// padded lines, lines of their own, and sizes that are not whole words.
type (
	recU32 struct {
		K uint32
		V [3]uint32
	}
	recI64 struct { // 24 bytes: two a line, padded
		A uint8
		K int64
		V uint32
	}
	recF32 struct {
		K float32
		V uint32
		W [4]uint32
	}
	recBig struct { // 100 bytes: two lines each
		V [24]uint32
		K int16
		W uint16
	}
	rec3 struct { // 3 bytes: not a whole word
		K uint8
		V [2]uint8
	}
)

func testSortBy[T comparable, K vmem.Number](t *testing.T, d *vmem.Device, key func(*T) *K, setV func(*T, uint32), dup int) {
	var zero T
	t.Run(fmt.Sprintf("%T", zero), func(t *testing.T) {
		rng := rand.New(rand.NewPCG(uint64(unsafe.Sizeof(zero)), 11))
		for _, n := range gpuSizes() {
			keys := randNumbers[K](rng, n, dup)
			vals := make([]T, n)
			for i := range vals {
				b := unsafe.Slice((*byte)(unsafe.Pointer(&vals[i])), unsafe.Sizeof(vals[i]))
				for j := range b {
					b[j] = byte(rng.Uint32())
				}
				*key(&vals[i]) = keys[i]
				setV(&vals[i], uint32(i)) // stability shows in V
			}
			for _, opts := range segOpts(n) {
				s := newFilled(t, d, vals, opts...)
				if err := vmem.SortBy(s, key); err != nil {
					t.Fatalf("n=%d: %v", n, err)
				}
				want := slices.Clone(vals)
				slices.SortStableFunc(want, func(a, b T) int { return refCompare(*key(&a), *key(&b)) })
				got := readAll(t, s)
				for i := range want {
					// Padding is not kept; keys may be NaN: compare the key
					// by its bits and the rest with ==.
					g, w := got[i], want[i]
					kg, kw := *key(&g), *key(&w)
					*key(&g), *key(&w) = 0, 0
					if !sameBits(kg, kw) || g != w {
						t.Fatalf("n=%d segs=%v: element %d is %+v, want %+v", n, opts != nil, i, got[i], want[i])
					}
				}
				s.Close()
			}
		}
	})
}

func TestSliceSortBy(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		ran := kernelsOn(t, d)
		testSortBy(t, d, func(r *recU32) *uint32 { return &r.K }, func(r *recU32, v uint32) { r.V[0] = v }, 7)
		testSortBy(t, d, func(r *recI64) *int64 { return &r.K }, func(r *recI64, v uint32) { r.V = v }, 0)
		testSortBy(t, d, func(r *recI64) *int64 { return &r.K }, func(r *recI64, v uint32) { r.V = v }, 3)
		testSortBy(t, d, func(r *recI64) *int64 { return &r.K }, func(r *recI64, v uint32) { r.V = v }, 1)
		testSortBy(t, d, func(r *recI64) *int64 { return &r.K }, func(r *recI64, v uint32) { r.V = v }, -1)
		testSortBy(t, d, func(r *recF32) *float32 { return &r.K }, func(r *recF32, v uint32) { r.V = v }, 0)
		testSortBy(t, d, func(r *recBig) *int16 { return &r.K }, func(r *recBig, v uint32) { r.V[3] = v }, 100)
		testSortBy(t, d, func(r *rec3) *uint8 { return &r.K }, func(r *rec3, v uint32) { r.V[0], r.V[1] = uint8(v), uint8(v>>8) }, 0)
		// A key in an array element.
		testSortBy(t, d, func(r *[4]uint64) *uint64 { return &r[2] }, func(r *[4]uint64, v uint32) { r[0] = uint64(v) }, 9)
		ran()

		s := newFilled(t, d, []recU32{{K: 1}, {K: 0}})
		var other uint32
		if err := vmem.SortBy(s, func(*recU32) *uint32 { return &other }); err == nil {
			t.Fatal("SortBy accepted a key outside the element")
		}
	})
}

func testGather[T comparable](t *testing.T, d *vmem.Device) {
	var zero T
	t.Run(fmt.Sprintf("%T", zero), func(t *testing.T) {
		rng := rand.New(rand.NewPCG(uint64(unsafe.Sizeof(zero)), 3))
		for _, n := range []int{1, 5, 3000} {
			vals := make([]T, n)
			for i := range vals {
				vals[i] = mk[T](uint64(i) * 0x9e3779b97f4a7c15)
			}
			for _, opts := range [][]vmem.SliceOption{nil, {vmemtest.WithSegmentBytes(4096)}, {vmem.InTier(vmem.Private)}} {
				s := newFilled(t, d, vals, opts...)
				for _, m := range []int{0, 1, 7, 257, 4000} {
					idx := make([]int, m)
					for i := range idx {
						idx[i] = rng.IntN(n)
					}
					got := make([]T, m)
					if err := s.GetBatch(idx, got); err != nil {
						t.Fatalf("n=%d m=%d: %v", n, m, err)
					}
					for i, x := range idx {
						if got[i] != vals[x] {
							t.Fatalf("n=%d m=%d: element %d (index %d) differs", n, m, i, x)
						}
					}
				}
				// Into pinned host memory: the copy lands in dst directly.
				m := 1000
				blk, err := kdev(d).Alloc(block.Host, uint64(m)*uint64(unsafe.Sizeof(zero))+64, 64)
				if err != nil {
					t.Fatal(err)
				}
				dst := unsafe.Slice((*T)(blk.Ptr()), m)
				idx := make([]int, m)
				for i := range idx {
					idx[i] = rng.IntN(n)
				}
				if err := s.GetBatch(idx, dst); err != nil {
					t.Fatal(err)
				}
				for i, x := range idx {
					if dst[i] != vals[x] {
						t.Fatalf("pinned dst: element %d (index %d) differs", i, x)
					}
				}
				kdev(d).Free(blk)
				// Errors.
				if err := s.GetBatch([]int{0, n}, make([]T, 2)); !errors.Is(err, vmem.ErrRange) {
					t.Fatalf("index %d of %d: %v, want ErrRange", n, n, err)
				}
				if err := s.GetBatch(append(make([]int, 600), -1), make([]T, 601)); !errors.Is(err, vmem.ErrRange) {
					t.Fatalf("index -1: %v, want ErrRange", err)
				}
				if err := s.GetBatch([]int{0}, make([]T, 2)); !errors.Is(err, vmem.ErrRange) {
					t.Fatalf("short indices: %v, want ErrRange", err)
				}
				s.Close()
			}
		}
	})
}

func TestSliceGather(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			t.Cleanup(vmem.SetGatherDirect(direct))
			// Batches of 4 KiB: several per Gather, so the pipeline turns.
			t.Cleanup(vmem.SetGatherBatch(4096))
			vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
				ran := kernelsOn(t, d)
				testGather[e1](t, d)
				testGather[e8](t, d)
				testGather[e24](t, d)
				testGather[e64](t, d)
				testGather[e100](t, d)
				testGather[rec3](t, d)
				testGather[recI64](t, d)
				ran()
			})
		})
	}
}

func testFill[T comparable](t *testing.T, d *vmem.Device) {
	var zero T
	t.Run(fmt.Sprintf("%T", zero), func(t *testing.T) {
		for _, n := range []int{0, 1, 100, 3001} {
			for _, opts := range [][]vmem.SliceOption{nil, {vmemtest.WithSegmentBytes(8192)}, {vmem.InTier(vmem.Private)}} {
				vals := make([]T, n)
				for i := range vals {
					vals[i] = mk[T](uint64(i) + 1)
				}
				s := newFilled(t, d, vals, opts...)
				v := mk[T](0xfeedface)
				if err := s.Fill(v); err != nil {
					t.Fatal(err)
				}
				for i, x := range readAll(t, s) {
					if x != v {
						t.Fatalf("n=%d: element %d not filled", n, i)
					}
				}
				// Shrinking zeroes the cut-off part (a fill too); growing
				// back shows zeros there and the rest unchanged.
				if n > 2 {
					if err := s.Resize(n / 3); err != nil {
						t.Fatal(err)
					}
					if err := s.Resize(n); err != nil {
						t.Fatal(err)
					}
					for i, x := range readAll(t, s) {
						want := v
						if i >= n/3 {
							want = zero
						}
						if x != want {
							t.Fatalf("n=%d: element %d after shrink and grow is wrong", n, i)
						}
					}
				}
				s.Close()
			}
		}
	})
}

func TestSliceFillGPU(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		ran := kernelsOn(t, d)
		testFill[e1](t, d)
		testFill[e8](t, d)
		testFill[e24](t, d)
		testFill[e64](t, d)
		testFill[e100](t, d)
		testFill[rec3](t, d)
		testFill[[5]uint16](t, d)
		ran()
	})
}

func testSum[T vmem.Number](t *testing.T, d *vmem.Device) {
	var zero T
	t.Run(fmt.Sprintf("%T", zero), func(t *testing.T) {
		rng := rand.New(rand.NewPCG(uint64(unsafe.Sizeof(zero)), 5))
		for _, n := range append(gpuSizes(), 70001) {
			var vals []T
			switch any(zero).(type) {
			case float32, float64:
				vals = make([]T, n)
				for i := range vals {
					vals[i] = T(rng.NormFloat64() * 1000)
				}
			default:
				vals = randNumbers[T](rng, n, 0)
			}
			for _, opts := range [][]vmem.SliceOption{nil, {vmemtest.WithSegmentBytes(4096)}} {
				sumCheck(t, d, vals, opts...)
			}
		}
	})
}

func TestSliceSum(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		ran := kernelsOn(t, d)
		testSum[uint8](t, d)
		testSum[int8](t, d)
		testSum[int16](t, d)
		testSum[uint32](t, d)
		testSum[int32](t, d)
		testSum[int64](t, d)
		testSum[uint64](t, d)
		testSum[float32](t, d)
		testSum[float64](t, d)
		ran()
	})
}

// TestKernelFaults: a failing Alloc of the sort's scratch is absorbed (the
// mapped tier stands in for the private one) or reported as out of memory
// with the Slice unchanged; device loss is reported; a closed Slice says so.
func TestKernelFaults(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		kernelsOn(t, d)
		rng := rand.New(rand.NewPCG(1, 2))
		vals := randNumbers[uint32](rng, 3000, 0)
		s := newFilled(t, d, vals)
		for _, fail := range []int64{1, 2} {
			if err := s.CopyFrom(vals, 0); err != nil {
				t.Fatal(err)
			}
			kdev(d).InjectFaults(kern.Faults{FailAlloc: fail})
			err := vmem.Sort(s)
			kdev(d).InjectFaults(kern.Faults{})
			if err != nil {
				if !errors.Is(err, vmem.ErrOutOfMemory) {
					t.Fatalf("Sort with a failing Alloc: %v", err)
				}
				if got := readAll(t, s); !slices.Equal(got, vals) {
					t.Fatal("Sort changed the Slice although it failed")
				}
			} else if got := readAll(t, s); !slices.IsSorted(got) {
				t.Fatal("not sorted")
			}
		}
		if err := vmem.Sort(s); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, s); !slices.IsSorted(got) {
			t.Fatal("not sorted")
		}

		if vmem.KernelsAvailable(d) {
			kdev(d).InjectFaults(kern.Faults{FailSubmit: 1})
			if _, err := vmem.Sum(s); !errors.Is(err, vmem.ErrDeviceLost) {
				t.Fatalf("Sum with a failing submission: %v", err)
			}
			if err := s.GetBatch([]int{1, 2, 3}, make([]uint32, 3)); !errors.Is(err, vmem.ErrDeviceLost) {
				t.Fatalf("Gather after device loss: %v", err)
			}
		}
		s.Close()
		if err := vmem.Sort(s); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("Sort after Close: %v", err)
		}
		if err := vmem.SortBy(s, func(v *uint32) *uint32 { return v }); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("SortBy after Close: %v", err)
		}
		if _, err := vmem.Sum(s); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("Sum after Close: %v", err)
		}
		if err := s.GetBatch(nil, nil); !errors.Is(err, vmem.ErrClosed) {
			t.Fatalf("Gather after Close: %v", err)
		}
	})
}

// FuzzSliceKernels sorts, gathers and sums fuzzed data on every backend
// and compares with the CPU.
func FuzzSliceKernels(f *testing.F) {
	f.Add([]byte{}, uint16(0))
	f.Add([]byte{1, 0, 255, 127, 128, 3, 3, 3}, uint16(4096))
	f.Add(make([]byte, 5000), uint16(64))
	// One device per backend for the whole run: opening one (and building
	// its kernels) costs far more than an input.
	var devs []*vmem.Device
	for _, b := range vmemtest.Backends() {
		devs = append(devs, vmemtest.Open(f, b, vmem.Options{}))
	}
	restore := vmem.SetKernelThresholds(64, 1)
	f.Cleanup(restore)
	f.Fuzz(func(t *testing.T, data []byte, seg uint16) {
		if len(data) > 1<<14 {
			data = data[:1<<14]
		}
		vals := make([]int16, len(data)/2)
		for i := range vals {
			vals[i] = int16(uint16(data[2*i]) | uint16(data[2*i+1])<<8)
		}
		var opts []vmem.SliceOption
		if seg >= 64 {
			opts = append(opts, vmemtest.WithSegmentBytes(uint64(seg)))
		}
		for _, d := range devs {
			s := newFilled(t, d, vals, opts...)
			idx := make([]int, len(data)/3)
			for i := range idx {
				idx[i] = int(data[i]) * len(vals) / 256
			}
			got := make([]int16, len(idx))
			if err := s.GetBatch(idx, got); err != nil {
				t.Fatal(err)
			}
			for i, x := range idx {
				if got[i] != vals[x] {
					t.Fatalf("Gather: element %d differs", i)
				}
			}
			sum, err := vmem.SumAs[int64](s)
			if err != nil {
				t.Fatal(err)
			}
			var want int64
			for _, v := range vals {
				want += int64(v)
			}
			if sum != want {
				t.Fatalf("Sum %d, want %d", sum, want)
			}
			if s16, err := vmem.Sum(s); want == int64(int16(want)) && (err != nil || s16 != int16(want)) ||
				want != int64(int16(want)) && !errors.Is(err, vmem.ErrRange) {
				t.Fatalf("Sum as int16 %d (%v), want %d", s16, err, want)
			}
			if err := vmem.Sort(s); err != nil {
				t.Fatal(err)
			}
			ref := slices.Clone(vals)
			slices.Sort(ref)
			if !slices.Equal(readAll(t, s), ref) {
				t.Fatalf("%s: Sort differs from slices.Sort", d.Info().Backend)
			}
			s.Close()
		}
	})
}

// TestSliceKernelsMixedTiers runs every kernel on a Slice whose segments
// lie partly in the mapped tier and partly in the private one.
func TestSliceKernelsMixedTiers(t *testing.T) {
	var lim [3]uint64
	lim[vmem.Mapped] = 64 << 10
	d := vmemtest.Open(t, vmem.BackendVulkan, vmem.Options{Limits: lim})
	if d.Info().Backend != vmem.BackendVulkan {
		t.Skip("VMEM_BACKEND selects the host backend, which has no private tier to spill into")
	}
	ran := kernelsOn(t, d)
	rng := rand.New(rand.NewPCG(9, 9))
	n := 40000
	if testing.Short() {
		n = 12000
	}
	vals := randNumbers[uint64](rng, n, 0)
	s := newFilled(t, d, vals, vmemtest.WithSegmentBytes(16<<10))
	if d.Info().Tiers[vmem.Private].Blocks == 0 || d.Info().Tiers[vmem.Mapped].Blocks == 0 {
		t.Fatalf("segments not spread over both tiers: mapped %+v private %+v", d.Info().Tiers[vmem.Mapped], d.Info().Tiers[vmem.Private])
	}
	idx := make([]int, 5000)
	for i := range idx {
		idx[i] = rng.IntN(n)
	}
	got := make([]uint64, len(idx))
	if err := s.GetBatch(idx, got); err != nil {
		t.Fatal(err)
	}
	for i, x := range idx {
		if got[i] != vals[x] {
			t.Fatalf("Gather: element %d differs", i)
		}
	}
	sumCheck(t, d, vals)
	if err := vmem.Sort(s); err != nil {
		t.Fatal(err)
	}
	ref := slices.Clone(vals)
	slices.Sort(ref)
	if !slices.Equal(readAll(t, s), ref) {
		t.Fatal("Sort differs")
	}
	if err := vmem.SortBy(s, func(v *uint64) *uint32 { return (*uint32)(unsafe.Pointer(v)) }); err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(ref, func(a, b uint64) int { return cmp.Compare(uint32(a), uint32(b)) })
	if !slices.Equal(readAll(t, s), ref) {
		t.Fatal("SortBy differs")
	}
	if err := s.Fill(42); err != nil {
		t.Fatal(err)
	}
	for i, v := range readAll(t, s) {
		if v != 42 {
			t.Fatalf("Fill: element %d is %d", i, v)
		}
	}
	ran()
}

// TestSliceKernelsConcurrentReaders runs Gather and Sum from several
// goroutines at once (readers may overlap, as with a []T).
func TestSliceKernelsConcurrentReaders(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		kernelsOn(t, d)
		rng := rand.New(rand.NewPCG(4, 4))
		vals := randNumbers[uint32](rng, 5000, 0)
		s := newFilled(t, d, vals, vmemtest.WithSegmentBytes(8192))
		var want uint64
		for _, v := range vals {
			want += uint64(v)
		}
		errs := make(chan error, 4)
		for g := range 4 {
			go func() {
				rng := rand.New(rand.NewPCG(uint64(g), 1))
				for range 5 {
					idx := make([]int, 700)
					for i := range idx {
						idx[i] = rng.IntN(len(vals))
					}
					got := make([]uint32, len(idx))
					if err := s.GetBatch(idx, got); err != nil {
						errs <- err
						return
					}
					for i, x := range idx {
						if got[i] != vals[x] {
							errs <- fmt.Errorf("goroutine %d: Gather element %d differs", g, i)
							return
						}
					}
					if sum, err := vmem.SumAs[uint64](s); err != nil || sum != want {
						errs <- fmt.Errorf("goroutine %d: Sum %d (%v), want %d", g, sum, err, want)
						return
					}
				}
				errs <- nil
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestSortOutOfMemory: when neither VRAM tier has room for the sort's
// scratch, Sort and SortBy fail with ErrOutOfMemory and change nothing.
func TestSortOutOfMemory(t *testing.T) {
	var lim [3]uint64
	lim[vmem.Mapped] = 256 << 10
	lim[vmem.Private] = 64 << 10
	d := vmemtest.Open(t, vmem.BackendVulkan, vmem.Options{Limits: lim})
	if !vmem.KernelsAvailable(d) {
		t.Skip("no kernels")
	}
	rng := rand.New(rand.NewPCG(3, 3))
	vals := randNumbers[uint32](rng, 30000, 0)
	s := newFilled(t, d, vals)
	if err := vmem.Sort(s); !errors.Is(err, vmem.ErrOutOfMemory) {
		t.Fatalf("Sort without room for its scratch: %v", err)
	}
	if err := vmem.SortBy(s, func(v *uint32) *uint16 { return (*uint16)(unsafe.Pointer(v)) }); !errors.Is(err, vmem.ErrOutOfMemory) {
		t.Fatalf("SortBy without room for its scratch: %v", err)
	}
	if got := readAll(t, s); !slices.Equal(got, vals) {
		t.Fatal("a failed sort changed the Slice")
	}
}

// TestKernelsAfterDeviceClose: a Slice whose device was closed reports
// ErrClosed from every kernel operation.
func TestKernelsAfterDeviceClose(t *testing.T) {
	for _, b := range vmemtest.Backends() {
		t.Run(string(b), func(t *testing.T) {
			d, err := vmem.Open(vmem.Options{Backend: b})
			if err != nil {
				if b == vmem.BackendVulkan && !vmemtest.RequireVulkan() {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			defer vmem.SetKernelThresholds(64, 1)()
			s, err := vmem.NewSlice[uint32](d, 5000)
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			if err := vmem.Sort(s); !errors.Is(err, vmem.ErrClosed) {
				t.Errorf("Sort: %v", err)
			}
			if err := vmem.SortBy(s, func(v *uint32) *uint32 { return v }); !errors.Is(err, vmem.ErrClosed) {
				t.Errorf("SortBy: %v", err)
			}
			if _, err := vmem.Sum(s); !errors.Is(err, vmem.ErrClosed) {
				t.Errorf("Sum: %v", err)
			}
			if err := s.GetBatch(make([]int, 1000), make([]uint32, 1000)); !errors.Is(err, vmem.ErrClosed) {
				t.Errorf("Gather: %v", err)
			}
			if err := s.Fill(3); !errors.Is(err, vmem.ErrClosed) {
				t.Errorf("Fill: %v", err)
			}
		})
	}
}
