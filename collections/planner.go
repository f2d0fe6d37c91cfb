package collections

import (
	"github.com/govram/govram/internal/lines"
	"github.com/govram/govram/internal/recs"
)

// planStreams reports whether the access planner reads nl lines spread
// over span bytes by streaming loads (rather than DMA or a GPU gather).
func planStreams(nl, span int) bool {
	return lines.DefaultPlanner().Plan(nl, span, nl*recs.LineSize == span) == lines.Stream
}
