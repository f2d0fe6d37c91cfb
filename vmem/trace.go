package vmem

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/tlsf"
)

// blockTrace is the raw stack of one live block.
type blockTrace struct {
	pcs  []uintptr
	size uint64
	seq  uint64
}

// traceSeq orders traces by allocation, across tiers and devices.
var traceSeq atomic.Uint64

// trace records the caller of Alloc for block h. ts.mu is held.
func (ts *tierState) trace(h tlsf.Handle, size uint64) {
	var pcs [32]uintptr
	n := runtime.Callers(3, pcs[:]) // skip Callers, trace, alloc
	if ts.traces == nil {
		ts.traces = make(map[tlsf.Handle]blockTrace)
	}
	ts.traces[h] = blockTrace{pcs: slices.Clone(pcs[:n]), size: size, seq: traceSeq.Add(1)}
}

// liveBlocks lists the blocks still allocated, oldest first, with where
// they were allocated when they were traced (kern.Device.LiveBlocks).
func (d *Device) liveBlocks() []kern.LiveBlock {
	type live struct {
		kern.LiveBlock
		seq uint64
	}
	var all []live
	for t := range d.tiers {
		ts := &d.tiers[t]
		ts.mu.Lock()
		traced := 0
		for _, tr := range ts.traces {
			all = append(all, live{kern.LiveBlock{Tier: block.Tier(t), Size: tr.size, Stack: formatStack(tr.pcs)}, tr.seq})
			traced++
		}
		for range ts.blocks - traced {
			all = append(all, live{LiveBlock: kern.LiveBlock{Tier: block.Tier(t)}})
		}
		ts.mu.Unlock()
	}
	slices.SortStableFunc(all, func(a, b live) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]kern.LiveBlock, len(all))
	for i, l := range all {
		out[i] = l.LiveBlock
	}
	return out
}

// formatStack prints frames as a panic does, leaving out the runtime's and
// the testing package's own.
func formatStack(pcs []uintptr) string {
	var b strings.Builder
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if f.Function != "" && !strings.HasPrefix(f.Function, "runtime.") && !strings.HasPrefix(f.Function, "testing.") {
			fmt.Fprintf(&b, "%s\n\t%s:%d\n", f.Function, f.File, f.Line)
		}
		if !more {
			break
		}
	}
	return b.String()
}
