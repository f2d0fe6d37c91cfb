package main

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

func TestQuickstart(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		n := 3000
		if testing.Short() {
			n = 1000
		}
		var out bytes.Buffer
		if err := run(config{n: n, dev: d}, &out); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		t.Log("\n" + got)

		vals := make([]uint64, n)
		var sum uint64
		for i := range vals {
			vals[i] = uint64(i) * 0x9E3779B97F4A7C15 >> 32
			sum += vals[i]
		}
		slices.Sort(vals)
		for _, want := range []string{
			"backend " + string(d.Info().Backend) + "\n",
			fmt.Sprintf("Slice[uint64]: %d elements", n),
			fmt.Sprintf("smallest %d, largest %d, sum %d\n", vals[0], vals[n-1], sum),
			fmt.Sprintf("Map[string]int: %d entries", n),
			fmt.Sprintf(`Get("user-%d") = %d, true; after one Delete Len = %d`, n/2, n/2, n-1),
			fmt.Sprintf("BTree[int64]float64: %d entries", n),
			"60 readings from minute 360 to 420, mean 24.",
			"memory: Go heap ",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		// The entries were off the Go heap, in device memory.
		if m := regexp.MustCompile(`off the heap \(device Info\): mapped (\S+ \S+),`).FindStringSubmatch(got); m == nil || m[1] == "0 B" {
			t.Errorf("memory line shows no device memory in use: %v", m)
		}
		// run closed what it made (vmemtest also fails the test on a leak).
		if st := d.Info().Tiers[vmem.Mapped]; st.InUse != 0 {
			t.Errorf("run left %d bytes of mapped memory in use", st.InUse)
		}
	})
}
