package vmem

import (
	"slices"
	"testing"

	"github.com/govram/govram/internal/vk"
)

// TestKernSplitCopies: a batch's copies before its first kernel and after
// its last go to the copy queues; anything else keeps it whole.
func TestKernSplitCopies(t *testing.T) {
	const (
		c = vk.OpCopy
		b = vk.OpBarrier
		d = vk.OpDispatch
		u = vk.OpUpdate
		f = vk.OpFill
	)
	cases := []struct {
		ops          []int
		ok           bool
		in, mid, out int // lengths
	}{
		{[]int{c, b, d, b, c, c}, true, 1, 3, 2},
		{[]int{c, c, b, d}, true, 2, 2, 0},
		{[]int{d, b, c}, true, 0, 2, 1},
		{[]int{c, b, d, b, c, b, d, b, c}, true, 1, 7, 1},
		{[]int{c, b, c}, false, 0, 0, 0},       // no kernel
		{[]int{b, d, b}, false, 0, 0, 0},       // nothing to move
		{[]int{u, b, d, b, c}, false, 0, 0, 0}, // an update leads
		{[]int{c, b, d, f}, false, 0, 0, 0},    // a fill trails
	}
	for _, tc := range cases {
		ops := make([]vk.Op, len(tc.ops))
		for i, k := range tc.ops {
			ops[i] = vk.Op{Kind: k, Size: uint64(i)}
		}
		in, mid, out, ok := kernSplitCopies(ops)
		if ok != tc.ok {
			t.Fatalf("%v: ok %v, want %v", tc.ops, ok, tc.ok)
		}
		if !ok {
			continue
		}
		if len(in) != tc.in || len(mid) != tc.mid || len(out) != tc.out {
			t.Fatalf("%v: parts %d/%d/%d, want %d/%d/%d", tc.ops, len(in), len(mid), len(out), tc.in, tc.mid, tc.out)
		}
		// The parts keep every kernel and copy, in order.
		var got []vk.Op
		for _, p := range [][]vk.Op{in, mid, out} {
			for _, o := range p {
				if o.Kind != vk.OpBarrier {
					got = append(got, o)
				}
			}
		}
		want := slices.DeleteFunc(slices.Clone(ops), func(o vk.Op) bool { return o.Kind == vk.OpBarrier })
		if !slices.Equal(got, want) {
			t.Fatalf("%v: parts reorder or drop ops", tc.ops)
		}
	}
}
