package vmemtest

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// EnvBenchSizes lists the container sizes benchmarks run at.
const EnvBenchSizes = "VMEM_BENCH_SIZES"

// BenchSizes returns the sizes of a benchmark: the counts in
// VMEM_BENCH_SIZES (comma-separated, 1e6 notation allowed), or def when
// it is not set. A count that does not parse fails the benchmark.
func BenchSizes(tb testing.TB, def ...int) []int {
	return BenchSizesFrom(tb, EnvBenchSizes, def...)
}

// BenchSizesFrom is BenchSizes reading the environment variable name.
func BenchSizesFrom(tb testing.TB, name string, def ...int) []int {
	env := os.Getenv(name)
	if env == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v < 1 {
			tb.Fatalf("%s: %q is not a count", name, f)
		}
		out = append(out, int(v))
	}
	return out
}

// SizeName names a count in a sub-benchmark's name: 1e5, 1.6e7, 100003.
func SizeName(n int) string {
	if e := int(math.Round(math.Log10(float64(n)))); math.Pow10(e) == float64(n) {
		return "1e" + strconv.Itoa(e)
	}
	s := strconv.FormatFloat(float64(n), 'g', -1, 64)
	return strings.Replace(strings.Replace(s, "e+0", "e", 1), "e+", "e", 1)
}
