package vmem

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/govram/govram/internal/tlsf"
)

// LiveBlock describes a block still allocated (see Device.LiveBlocks).
type LiveBlock struct {
	Tier Tier
	Size uint64 // bytes requested
	// Stack is where Alloc was called, one "function\n\tfile:line" pair a
	// frame, innermost first; empty unless Options.TraceBlocks was set.
	Stack string
	seq   uint64
}

func (b LiveBlock) String() string {
	s := fmt.Sprintf("%s block of %d bytes", b.Tier, b.Size)
	if b.Stack == "" {
		return s + " (allocated at an unknown place: set Options.TraceBlocks)"
	}
	return s + " allocated at\n" + b.Stack
}

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
	n := runtime.Callers(3, pcs[:]) // skip Callers, trace, Alloc
	if ts.traces == nil {
		ts.traces = make(map[tlsf.Handle]blockTrace)
	}
	ts.traces[h] = blockTrace{pcs: slices.Clone(pcs[:n]), size: size, seq: traceSeq.Add(1)}
}

// LiveBlocks lists the blocks still allocated, oldest first, with where they
// were allocated when Options.TraceBlocks is set. Test helpers use it to
// report leaks (vmemtest fails a test that leaves one).
func (d *Device) LiveBlocks() []LiveBlock {
	var out []LiveBlock
	for t := range d.tiers {
		ts := &d.tiers[t]
		ts.mu.Lock()
		traced := 0
		for _, tr := range ts.traces {
			out = append(out, LiveBlock{Tier: Tier(t), Size: tr.size, Stack: formatStack(tr.pcs), seq: tr.seq})
			traced++
		}
		for range ts.blocks - traced {
			out = append(out, LiveBlock{Tier: Tier(t)})
		}
		ts.mu.Unlock()
	}
	slices.SortStableFunc(out, func(a, b LiveBlock) int { return cmp.Compare(a.seq, b.seq) })
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
