package vmem_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// refSum returns the exact sum of integer values (nil for floats), the sum
// of float64 values added in a loop, and the sum of magnitudes.
func refSum[T vmem.Number](vals []T) (exact *big.Int, f, abs float64) {
	var zero T
	switch any(zero).(type) {
	case float32, float64:
		for _, v := range vals {
			f += float64(v)
			abs += math.Abs(float64(v))
		}
		return nil, f, abs
	}
	exact = new(big.Int)
	var b big.Int
	for _, v := range vals {
		if T(0)-1 > 0 { // unsigned
			b.SetUint64(uint64(v))
		} else {
			b.SetInt64(int64(v))
		}
		exact.Add(exact, &b)
	}
	return exact, 0, 0
}

// fits reports whether b is a value of T.
func fits[T vmem.Number](b *big.Int) bool {
	if T(0)-1 > 0 {
		return b.Sign() >= 0 && b.IsUint64() && uint64(T(b.Uint64())) == b.Uint64()
	}
	return b.IsInt64() && int64(T(b.Int64())) == b.Int64()
}

// floatClose reports whether got is within 1e-6 of want, relative to want
// (with a floor, for sums that cancel, in terms of the sum of magnitudes).
func floatClose(got, want, abs float64) bool {
	return math.Abs(got-want) <= 1e-6*math.Abs(want)+1e-12*abs
}

// checkSum checks Sum's result for vals against refSum: floats within
// 1e-6 relative; integers exact, or ErrRange where the sum does not fit T.
func checkSum[T vmem.Number](t *testing.T, vals []T, got T, err error) {
	t.Helper()
	exact, f, abs := refSum(vals)
	switch {
	case exact == nil:
		if err != nil || !floatClose(float64(got), f, abs) {
			t.Fatalf("n=%d: Sum %v (%v), want %v", len(vals), got, err, f)
		}
	case fits[T](exact):
		if err != nil || fmt.Sprint(got) != exact.String() {
			t.Fatalf("n=%d: Sum %v (%v), want %v", len(vals), got, err, exact)
		}
	case !errors.Is(err, vmem.ErrRange):
		t.Fatalf("n=%d: Sum %v (%v) of a sum that does not fit (%v), want ErrRange", len(vals), got, err, exact)
	}
}

// sumCase is one data set of TestSumBackends; run returns its results on
// one device, after checking them against the reference.
type sumCase struct {
	name string
	run  func(t *testing.T, d *vmem.Device) []any
}

// sumCheck sums vals as T and with SumAs as int64, uint64 and float64,
// checks each against the reference and returns them (errors as the
// sentinel they match).
func sumCheck[T vmem.Number](t *testing.T, d *vmem.Device, vals []T, opts ...vmem.SliceOption) []any {
	t.Helper()
	s := newFilled(t, d, vals, opts...)
	got, err := vmem.Sum(s)
	checkSum(t, vals, got, err)
	exact, f, abs := refSum(vals)
	out := []any{got, err != nil}

	g64, err := vmem.SumAs[float64](s)
	want := f
	if exact != nil {
		want, _ = new(big.Float).SetInt(exact).Float64()
		if err != nil || g64 != want {
			t.Fatalf("SumAs[float64] %v (%v), want %v", g64, err, want)
		}
	} else if err != nil || !floatClose(g64, want, abs) {
		t.Fatalf("SumAs[float64] %v (%v), want %v", g64, err, want)
	}
	out = append(out, g64)

	i64, err := vmem.SumAs[int64](s)
	if exact == nil {
		exact, _ = big.NewFloat(g64).Int(nil)
	}
	if exact.IsInt64() {
		if err != nil || i64 != exact.Int64() {
			t.Fatalf("SumAs[int64] %v (%v), want %v", i64, err, exact)
		}
	} else if !errors.Is(err, vmem.ErrRange) {
		t.Fatalf("SumAs[int64] of %v: %v (%v), want ErrRange", exact, i64, err)
	}
	out = append(out, i64)

	u64, err := vmem.SumAs[uint64](s)
	if exact.Sign() >= 0 && exact.IsUint64() {
		if err != nil || u64 != exact.Uint64() {
			t.Fatalf("SumAs[uint64] %v (%v), want %v", u64, err, exact)
		}
	} else if !errors.Is(err, vmem.ErrRange) {
		t.Fatalf("SumAs[uint64] of %v: %v (%v), want ErrRange", exact, u64, err)
	}
	return append(out, u64)
}

// TestSumBackends: Sum and SumAs of float32, float64, int8 and int64 data
// give the same results on every backend (floats within 1e-6 relative),
// and agree with a float64 loop or with big.Int arithmetic. Integer sums
// do not wrap at the element's width, and float32 sums do not stop
// growing at 2^24 ones.
func TestSumBackends(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 4))
	normal := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64() * 1000
		}
		return v
	}
	f64 := normal(1_000_000)
	f32 := make([]float32, len(f64))
	for i, v := range f64 {
		f32[i] = float32(v)
	}
	i8 := make([]int8, 100_001)
	for i := range i8 {
		i8[i] = int8(rng.Uint32())
	}
	i64 := make([]int64, 100_001)
	for i := range i64 {
		i64[i] = int64(rng.Uint64())
	}
	// Pairs of extremes: the sum fits in an int64 though every partial
	// sum that adds two of a kind does not.
	extremes := make([]int64, 4*10_000+1)
	for i := range extremes {
		extremes[i] = []int64{math.MaxInt64, math.MaxInt64, math.MinInt64, math.MinInt64}[i%4]
	}
	maxU := make([]uint64, 1000)
	for i := range maxU {
		maxU[i] = math.MaxUint64
	}
	ones := func(n int) []int8 {
		v := make([]int8, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	small := []vmem.SliceOption{vmemtest.WithSegmentBytes(64 << 10)}

	cases := []sumCase{
		{"float32 ones 2e7", func(t *testing.T, d *vmem.Device) []any {
			const n = 20_000_000
			s, err := vmem.NewSlice[float32](d, n)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Fill(1); err != nil {
				t.Fatal(err)
			}
			got, err := vmem.Sum(s)
			if err != nil || got != n {
				t.Fatalf("Sum of %d float32 ones: %v (%v)", n, got, err)
			}
			return []any{got}
		}},
		{"float32 normal", func(t *testing.T, d *vmem.Device) []any { return sumCheck(t, d, f32, small...) }},
		{"float64 normal", func(t *testing.T, d *vmem.Device) []any { return sumCheck(t, d, f64, small...) }},
		{"int8 ones 1000", func(t *testing.T, d *vmem.Device) []any {
			out := sumCheck(t, d, ones(1000))
			if out[1] != true || out[3] != int64(1000) {
				t.Fatalf("int8 sum of 1000 ones: Sum error %v, SumAs[int64] %v; want an error and 1000", out[1], out[3])
			}
			return out
		}},
		{"int8 ones 100", func(t *testing.T, d *vmem.Device) []any { return sumCheck(t, d, ones(100)) }},
		{"int8 random", func(t *testing.T, d *vmem.Device) []any { return sumCheck(t, d, i8, small...) }},
		{"int64 random", func(t *testing.T, d *vmem.Device) []any { return sumCheck(t, d, i64, small...) }},
		{"int64 extremes", func(t *testing.T, d *vmem.Device) []any {
			out := sumCheck(t, d, extremes)
			if out[0] != int64(math.MaxInt64-20_000) {
				t.Fatalf("Sum of extremes %v", out[0])
			}
			return out
		}},
		{"uint64 max", func(t *testing.T, d *vmem.Device) []any { return sumCheck(t, d, maxU) }},
		{"float64 to int", func(t *testing.T, d *vmem.Device) []any {
			s := newFilled(t, d, []float64{1.5, 2.25, -7})
			got, err := vmem.SumAs[int32](s)
			if err != nil || got != -3 {
				t.Fatalf("SumAs[int32] of 1.5+2.25-7: %v (%v), want -3", got, err)
			}
			s.Set(2, math.NaN())
			if v, err := vmem.SumAs[int32](s); !errors.Is(err, vmem.ErrRange) {
				t.Fatalf("SumAs[int32] of a NaN sum: %v (%v), want ErrRange", v, err)
			}
			return []any{got}
		}},
	}
	results := map[string]map[vmem.Backend][]any{}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		ran := kernelsOn(t, d)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if results[c.name] == nil {
					results[c.name] = map[vmem.Backend][]any{}
				}
				results[c.name][d.Info().Backend] = c.run(t, d)
			})
		}
		ran()
	})
	for _, c := range cases {
		host, dev := results[c.name][vmem.BackendHost], results[c.name][vmem.BackendVulkan]
		if host == nil || dev == nil {
			continue
		}
		for i := range host {
			h, hf := asFloat(host[i])
			v, vf := asFloat(dev[i])
			if hf && vf && floatClose(h, v, 0) || fmt.Sprint(host[i]) == fmt.Sprint(dev[i]) {
				continue
			}
			t.Errorf("%s: result %d is %v on the host backend and %v on Vulkan", c.name, i, host[i], dev[i])
		}
	}
}

func asFloat(x any) (float64, bool) {
	switch v := x.(type) {
	case float32:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}
