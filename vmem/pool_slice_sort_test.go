package vmem_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"github.com/govram/govram/internal/vmemtest"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/vmem"
)

// poolSortSizes are lengths around stripe (16) and part boundaries.
func poolSortSizes(p *vmem.Pool) []int {
	ns := []int{0, 1, 2, 15, 16, 17, 33, 1000, 4099}
	if !buildconst.Race || p.Devices()[0].Info().Backend == vmem.BackendHost {
		ns = append(ns, 100_003)
	}
	return ns
}

func poolRandInts[T vmem.Number](r *rand.Rand, n int, span int64) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = T(r.Int64N(2*span+1) - span)
	}
	return v
}

func poolRandFloats[T vmem.Number](r *rand.Rand, n int) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = T(r.NormFloat64() * 1000)
		if i%7 == 0 {
			v[i] = v[max(i-3, 0)] // duplicates
		}
	}
	return v
}

// poolSortCheck sorts vals in a pool Slice over p and checks the result
// against slices.Sort (when slicesToo; floats without NaN) and, bit for
// bit, against Sort of a Slice holding vals.
func poolSortCheck[T vmem.Number](t *testing.T, p *vmem.Pool, vals []T, slicesToo bool, opts ...vmem.SliceOption) {
	t.Helper()
	s := poolSliceOf(t, p, vals, opts...)
	defer s.Close()
	if err := vmem.Sort(s); err != nil {
		t.Fatal(err)
	}
	got := poolElems(t, s)
	if slicesToo {
		want := slices.Clone(vals)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			i := 0
			for got[i] == want[i] {
				i++
			}
			t.Fatalf("%d elements (lens %v): element %d = %v, slices.Sort gives %v", len(vals), vmem.DeviceLens(s), i, got[i], want[i])
		}
	}
	one := snapSliceOf(t, p.Devices()[len(p.Devices())-1], vals)
	defer one.Close()
	if err := vmem.Sort(one); err != nil {
		t.Fatal(err)
	}
	want := make([]T, len(vals))
	if err := one.CopyTo(want, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapBytes(got), snapBytes(want)) {
		t.Fatalf("%d elements (lens %v): differs from Slice's Sort", len(vals), vmem.DeviceLens(s))
	}
}

func TestPoolSliceSort(t *testing.T) {
	eachPool(t, func(t *testing.T, p *vmem.Pool) {
		r := rand.New(rand.NewPCG(7, 11))
		for _, n := range poolSortSizes(p) {
			t.Run(fmt.Sprint(n), func(t *testing.T) {
				stripe := vmem.WithStripe(16)
				poolSortCheck(t, p, poolRandInts[int32](r, n, 1000), true, stripe)
				poolSortCheck(t, p, poolRandInts[int64](r, n, math.MaxInt64/2), true, stripe, vmemtest.WithSegmentBytes(4096))
				poolSortCheck(t, p, poolRandInts[uint8](r, n, 100), true, vmem.WithStripe(5))
				poolSortCheck(t, p, poolRandInts[uint32](r, n, 1<<31), true)
				poolSortCheck(t, p, poolRandFloats[float32](r, n), true, stripe)
				poolSortCheck(t, p, poolRandFloats[float64](r, n), true, stripe)
			})
		}
		// NaNs, infinities and zeros of both signs: Sort's total order.
		sp := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, -math.NaN(), 1, -1, math.SmallestNonzeroFloat64}
		v := make([]float64, 1001)
		for i := range v {
			v[i] = sp[r.IntN(len(sp))]
		}
		poolSortCheck(t, p, v, false, vmem.WithStripe(16))
		v32 := make([]float32, len(v))
		for i := range v {
			v32[i] = float32(v[i])
		}
		poolSortCheck(t, p, v32, false, vmem.WithStripe(16))
	})
}

type poolSortRec struct {
	I uint32
	K float32
}

// poolSortByCheck sorts records by K and checks the order is that of a
// stable sort.
func poolSortByCheck(t *testing.T, p *vmem.Pool, vals []poolSortRec, opts ...vmem.SliceOption) {
	t.Helper()
	s := poolSliceOf(t, p, vals, opts...)
	defer s.Close()
	if err := vmem.SortBy(s, func(r *poolSortRec) *float32 { return &r.K }); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(vals)
	slices.SortStableFunc(want, func(a, b poolSortRec) int { return cmp.Compare(a.K, b.K) })
	if got := poolElems(t, s); !slices.Equal(got, want) {
		t.Fatalf("%d records (lens %v): SortBy differs from a stable sort", len(vals), vmem.DeviceLens(s))
	}
}

func poolSortRecs(r *rand.Rand, n int) []poolSortRec {
	v := make([]poolSortRec, n)
	for i := range v {
		v[i] = poolSortRec{I: uint32(i), K: float32(r.IntN(50) - 25)}
	}
	return v
}

func TestPoolSliceSortBy(t *testing.T) {
	eachPool(t, func(t *testing.T, p *vmem.Pool) {
		r := rand.New(rand.NewPCG(3, 5))
		for _, n := range poolSortSizes(p) {
			poolSortByCheck(t, p, poolSortRecs(r, n), vmem.WithStripe(16))
		}
	})
}

// TestPoolSliceSortSpilled sorts FillFirst PoolSlices spread over every
// device (small limits on all but the last), so that the sorted parts are
// merged and SortBy's merge must keep equal keys in order.
func TestPoolSliceSortSpilled(t *testing.T) {
	for _, k := range poolKinds() {
		t.Run(k.name, func(t *testing.T) {
			small := vmem.Options{ChunkSize: 64 << 10}
			small.Limits[vmem.Mapped] = 256 << 10
			small.Limits[vmem.Private] = 256 << 10
			last := vmem.Options{ChunkSize: 64 << 10}
			last.Limits[vmem.Mapped] = 8 << 20
			last.Limits[vmem.Private] = 8 << 20
			opts := []vmem.Options{small, last}
			if k.n == 3 {
				opts = []vmem.Options{small, small, last}
			}
			p := openPool(t, k, opts...)
			r := rand.New(rand.NewPCG(9, 9))
			ff := []vmem.SliceOption{vmem.WithPlacement(vmem.FillFirst), vmemtest.WithSegmentBytes(32 << 10)}
			n := 150_001
			poolSortCheck(t, p, poolRandInts[int64](r, n, 1<<40), true, ff...)
			poolSortCheck(t, p, poolRandFloats[float32](r, 2*n), true, ff...)
			poolSortByCheck(t, p, poolSortRecs(r, 2*n), ff...)
			s := poolSliceOf(t, p, poolRandInts[uint64](r, n, 1<<40), ff...)
			if lens := vmem.DeviceLens(s); slices.Contains(lens, 0) {
				t.Errorf("a device holds nothing: %v", lens)
			}
			s.Close()
		})
	}
}

// poolSumCheck sums vals in a pool Slice and in a Slice: the same integer
// sum (or both ErrRange), float sums within float64 rounding, and both
// right (checkSum).
func poolSumCheck[T vmem.Number](t *testing.T, p *vmem.Pool, vals []T, opts ...vmem.SliceOption) {
	t.Helper()
	s := poolSliceOf(t, p, vals, opts...)
	defer s.Close()
	one := snapSliceOf(t, p.Devices()[0], vals)
	defer one.Close()
	got, err := vmem.Sum(s)
	want, werr := vmem.Sum(one)
	checkSum(t, vals, got, err)
	exact, _, abs := refSum(vals)
	switch {
	case (err == nil) != (werr == nil) || (err != nil && !errors.Is(err, vmem.ErrRange)):
		t.Errorf("%d elements: Sum %v, Slice's %v", len(vals), err, werr)
	case exact != nil && got != want:
		t.Errorf("%d elements: Sum %v, Slice's %v", len(vals), got, want)
	case exact == nil && !floatClose(float64(got), float64(want), abs):
		t.Errorf("%d elements: Sum %v, Slice's %v", len(vals), got, want)
	}
	wide, err := vmem.SumAs[float64](s)
	wideOne, werr := vmem.SumAs[float64](one)
	if err != nil || werr != nil || !floatClose(wide, wideOne, abs) {
		t.Errorf("%d elements: SumAs[float64] %v (%v), Slice's %v (%v)", len(vals), wide, err, wideOne, werr)
	}
}

func TestPoolSliceSum(t *testing.T) {
	eachPool(t, func(t *testing.T, p *vmem.Pool) {
		r := rand.New(rand.NewPCG(5, 8))
		for _, n := range poolSortSizes(p) {
			t.Run(fmt.Sprint(n), func(t *testing.T) {
				stripe := vmem.WithStripe(16)
				poolSumCheck(t, p, poolRandInts[int8](r, n, 100), stripe) // ErrRange for most n
				poolSumCheck(t, p, poolRandInts[int8](r, n, 1), stripe)
				poolSumCheck(t, p, poolRandInts[int64](r, n, math.MaxInt64/4), stripe)
				poolSumCheck(t, p, poolRandInts[uint32](r, n, 1<<31), vmem.WithStripe(7))
				poolSumCheck(t, p, poolRandFloats[float32](r, n), stripe)
				poolSumCheck(t, p, poolRandFloats[float64](r, n))
			})
		}
		s := poolSliceOf(t, p, poolRandInts[int8](r, 1000, 127), vmem.WithStripe(16))
		defer s.Close()
		one := snapSliceOf(t, p.Devices()[0], poolElems(t, s))
		defer one.Close()
		wide, err := vmem.SumAs[int64](s)
		if want, _ := vmem.SumAs[int64](one); err != nil || wide != want {
			t.Errorf("SumAs[int64]: %d (%v), want %d", wide, err, want)
		}
	})
}

func TestPoolSliceSortSumClosed(t *testing.T) {
	p := openPool(t, poolKind{"host3", vmem.BackendHost, 3})
	s := poolSliceOf(t, p, []uint32{3, 1, 2}, vmem.WithStripe(1))
	s.Close()
	if err := vmem.Sort(s); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("Sort after Close: %v", err)
	}
	if err := vmem.SortBy(s, func(v *uint32) *uint32 { return v }); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("SortBy after Close: %v", err)
	}
	if _, err := vmem.Sum(s); !errors.Is(err, vmem.ErrClosed) {
		t.Errorf("Sum after Close: %v", err)
	}
}
