package lines

import (
	"time"

	"github.com/govram/govram/layout"
)

// Method is how a read of VRAM lines should be done.
type Method uint8

const (
	// Stream: whole-line streaming loads by the CPU (lineio), a few in
	// flight. A PCIe round trip a line, overlapped; no fixed cost.
	Stream Method = iota
	// DMA: one copy command over the whole span into host memory. A large
	// fixed cost, then the link's speed; bytes between the wanted lines
	// come along at that rate.
	DMA
	// Gather: a compute kernel collects the lines into one contiguous
	// buffer, which one copy brings back. A larger fixed cost (a dispatch
	// and a copy), whatever the spread of the lines.
	Gather
)

func (m Method) String() string {
	switch m {
	case Stream:
		return "stream"
	case DMA:
		return "dma"
	case Gather:
		return "gather"
	}
	return "Method(?)"
}

// Planner picks how to read n lines of VRAM. The zero value uses the
// defaults (PlannerFor(layout.H200Costs)); set a field to override it. A negative
// DMAMinBytes or GatherMinLines turns that method off (the host backend has
// no DMA worth the name and no GPU to gather).
type Planner struct {
	// StreamMaxLines: reads of at most this many lines always stream; no
	// other method's fixed cost pays off below it (default 147: the
	// default DMA round trip over the default cost of a streamed line).
	StreamMaxLines int
	// DMAMinBytes: a contiguous read (or one whose lines fill at least a
	// quarter of its span) of more than StreamMaxLines lines goes by DMA
	// when the span is at least this long (default 9,472 bytes: the span
	// of StreamMaxLines+1 lines).
	DMAMinBytes int
	// GatherMinLines: a scattered read of at least this many lines goes by
	// GPU gather (default 373: the default gather round trip over the
	// default cost of a streamed line).
	GatherMinLines int
}

// denseSpan: a scattered set whose lines fill at least 1/denseSpan of its
// span is read by one DMA of the whole span. DMA moves bytes so much
// faster than streaming loads move lines (docs/physics.md) that even
// reading four times the wanted bytes costs a small fraction of a
// streamed line per wanted line.
const denseSpan = 4

// PlannerFor derives the thresholds from measured costs (vmem.Open passes
// Options.Costs).
func PlannerFor(c layout.Costs) Planner {
	if c.StreamLine <= 0 {
		return PlannerFor(layout.H200Costs)
	}
	// Per line, DMA costs 64 bytes of bandwidth; streaming costs StreamLine.
	perLine := float64(c.StreamLine)
	if c.DMABytesPerSec > 0 {
		perLine -= LineSize / c.DMABytesPerSec * float64(time.Second)
	}
	p := Planner{StreamMaxLines: 1, DMAMinBytes: -1, GatherMinLines: -1}
	if c.DMARoundTrip > 0 && perLine > 0 {
		p.StreamMaxLines = max(int(float64(c.DMARoundTrip)/perLine), 1)
		p.DMAMinBytes = (p.StreamMaxLines + 1) * LineSize
	}
	if c.GatherRoundTrip > 0 {
		p.GatherMinLines = max(int(c.GatherRoundTrip/c.StreamLine), p.StreamMaxLines+1)
	}
	return p
}

var defaultPlanner = PlannerFor(layout.H200Costs)

// DefaultPlanner returns the planner the zero value stands for.
func DefaultPlanner() Planner { return defaultPlanner }

func (p Planner) resolved() Planner {
	if p.StreamMaxLines <= 0 {
		p.StreamMaxLines = defaultPlanner.StreamMaxLines
	}
	if p.DMAMinBytes == 0 {
		p.DMAMinBytes = defaultPlanner.DMAMinBytes
	}
	if p.GatherMinLines == 0 {
		p.GatherMinLines = defaultPlanner.GatherMinLines
	}
	return p
}

// Plan picks the method for reading lines lines that lie within spanBytes
// bytes (from the start of the first line to the end of the last);
// contiguous says they are every line of that span.
func (p Planner) Plan(lines int, spanBytes int, contiguous bool) Method {
	p = p.resolved()
	if lines <= p.StreamMaxLines {
		return Stream
	}
	dense := contiguous || spanBytes <= denseSpan*LineSize*lines
	if dense && p.DMAMinBytes >= 0 && spanBytes >= p.DMAMinBytes {
		return DMA
	}
	if !contiguous && p.GatherMinLines >= 0 && lines >= p.GatherMinLines {
		return Gather
	}
	return Stream
}
