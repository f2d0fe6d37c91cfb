package main

// Parsing flags' values and printing figures.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// sizeName writes a size the way -sizes takes it: 1e6 for powers of ten
// from 1e3 up, the number otherwise.
func sizeName(n int) string {
	if n >= 1000 {
		e := 0
		m := n
		for m%10 == 0 {
			m /= 10
			e++
		}
		if e >= 3 {
			if m == 1 {
				return fmt.Sprintf("1e%d", e)
			}
			if m < 10 {
				return fmt.Sprintf("%de%d", m, e)
			}
		}
	}
	return strconv.Itoa(n)
}

// parseCount reads an entry count: 1e6, 2.5e6, 1000000, 64k, 1M, 1G.
func parseCount(s string) (int, error) {
	s = strings.TrimSpace(s)
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1e3, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1e9, s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f*mult < 1 || f*mult > 1e12 || f*mult != math.Trunc(f*mult) {
		return 0, fmt.Errorf("bad size %q (want a whole number of entries from 1 to 1e12, like 1e6)", s)
	}
	return int(f * mult), nil
}

// parseSizes reads a comma-separated list of counts.
func parseSizes(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		n, err := parseCount(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no sizes in %q", s)
	}
	return out, nil
}

// parseBytes reads a byte count: 8GiB, 512MiB, 64M (decimal), 1e9, 4096.
func parseBytes(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"B", 1},
	}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			mult, t = u.mult, strings.TrimSuffix(t, u.suffix)
			break
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || f < 0 || f*mult > math.MaxUint64/2 {
		return 0, fmt.Errorf("bad byte count %q (like 8GiB)", s)
	}
	return uint64(f * mult), nil
}

// parseTime reads -time: a duration (1s, 200ms) or a fixed b.N (1000x).
func parseTime(s string) (time.Duration, int, error) {
	if n, ok := strings.CutSuffix(s, "x"); ok {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 {
			return 0, 0, fmt.Errorf("bad -time %q (like 1s or 1000x)", s)
		}
		return 0, v, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, 0, fmt.Errorf("bad -time %q (like 1s or 1000x)", s)
	}
	return d, 0, nil
}

// fmtNs prints a time per operation with 3 significant digits.
func fmtNs(ns float64) string {
	switch {
	case math.IsNaN(ns) || math.IsInf(ns, 0):
		return "?"
	case ns < 10:
		return fmt.Sprintf("%.2f ns", ns)
	case ns < 1e3:
		return fmt.Sprintf("%.1f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	default:
		return fmt.Sprintf("%.3g s", ns/1e9)
	}
}

// fmtBytes prints a byte count with a binary unit.
func fmtBytes(n float64) string {
	neg := n < 0
	if neg {
		n = -n
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	s := fmt.Sprintf("%.3g %s", n, units[i])
	if i == 0 {
		s = fmt.Sprintf("%.0f B", n)
	}
	if neg {
		s = "-" + s
	}
	return s
}

// fmtRatio prints a time ratio: ×0.42, ×3.1, ×120.
func fmtRatio(r float64) string {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0) || r <= 0:
		return "–"
	case r < 10:
		return fmt.Sprintf("×%.2g", r)
	default:
		return fmt.Sprintf("×%.0f", r)
	}
}
