package lines

import (
	"testing"
	"time"

	"github.com/govram/govram/layout"
)

func TestPlanner(t *testing.T) {
	var p Planner // zero value: defaults
	d := DefaultPlanner()
	if d.StreamMaxLines < 50 || d.StreamMaxLines > 500 || d.GatherMinLines <= d.StreamMaxLines || d.DMAMinBytes <= d.StreamMaxLines*LineSize {
		t.Fatalf("implausible defaults %+v", d)
	}
	cases := []struct {
		lines, span int
		contiguous  bool
		want        Method
	}{
		{0, 0, true, Stream},
		{1, 64, true, Stream},
		{d.StreamMaxLines, d.StreamMaxLines * 64, true, Stream},
		{d.StreamMaxLines + 1, (d.StreamMaxLines + 1) * 64, true, DMA},
		{1 << 20, 64 << 20, true, DMA},
		{200, 1 << 30, false, Stream},                             // scattered, too few to gather
		{d.GatherMinLines, 1 << 30, false, Gather},                // scattered, enough to gather
		{d.GatherMinLines, d.GatherMinLines * 64 * 2, false, DMA}, // dense: read the span
		{d.StreamMaxLines + 1, 1 << 20, false, Stream},
	}
	for _, c := range cases {
		if got := p.Plan(c.lines, c.span, c.contiguous); got != c.want {
			t.Errorf("Plan(%d, %d, %v) = %v, want %v", c.lines, c.span, c.contiguous, got, c.want)
		}
	}
	// Methods switched off.
	off := Planner{DMAMinBytes: -1, GatherMinLines: -1}
	if got := off.Plan(1<<20, 64<<20, true); got != Stream {
		t.Errorf("DMA off: got %v", got)
	}
	if got := off.Plan(1<<20, 1<<30, false); got != Stream {
		t.Errorf("gather off: got %v", got)
	}
	// Overrides.
	if got := (Planner{StreamMaxLines: 4, DMAMinBytes: 256}).Plan(5, 320, true); got != DMA {
		t.Errorf("override: got %v", got)
	}
	for m, s := range map[Method]string{Stream: "stream", DMA: "dma", Gather: "gather", 9: "Method(?)"} {
		if m.String() != s {
			t.Errorf("%d.String() = %q", m, m.String())
		}
	}
}

func TestPlannerFor(t *testing.T) {
	// A machine where DMA is cheap relative to loads streams less.
	fast := PlannerFor(layout.Costs{StreamLine: time.Microsecond, DMARoundTrip: 10 * time.Microsecond, DMABytesPerSec: 10e9, GatherRoundTrip: 20 * time.Microsecond})
	if fast.StreamMaxLines != 10 || fast.GatherMinLines != 20 || fast.DMAMinBytes != 11*64 {
		t.Fatalf("PlannerFor = %+v", fast)
	}
	if got := PlannerFor(layout.Costs{}); got != DefaultPlanner() {
		t.Fatalf("PlannerFor(zero) = %+v", got)
	}
	noDMA := PlannerFor(layout.Costs{StreamLine: 100 * time.Nanosecond})
	if noDMA.DMAMinBytes >= 0 || noDMA.GatherMinLines >= 0 {
		t.Fatalf("no DMA, no gather: %+v", noDMA)
	}
}
