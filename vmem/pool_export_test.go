package vmem

import (
	"fmt"
	"strings"
)

// What the tests of package vmem_test see of a Slice on a pool.

// WithStripe is withStripe: small stripes spread small test arrays over
// every device.
func WithStripe(n int) SliceOption { return withStripe(n) }

// ParsePlacement is parsePlacement.
func ParsePlacement(s string) (Placement, error) { return parsePlacement(s) }

// DeviceLens returns how many elements each device of s's pool holds (nil
// for a Slice on one device).
func DeviceLens[T any](s *Slice[T]) []int {
	if s.sh == nil {
		return nil
	}
	return s.sh.DeviceLens()
}

// PlacementOf returns the placement of s, a Slice on a pool.
func PlacementOf[T any](s *Slice[T]) Placement { return s.sh.place }

// Part returns device d's part of s, a Slice on a pool: an ordinary Slice
// holding the elements device d holds, in s's order.
func Part[T any](s *Slice[T], d int) *Slice[T] { return s.sh.parts[d] }

// SetPlacement sets the placement of Slices made on p from now on without
// WithPlacement, so that a test runs with both.
func SetPlacement(p *Pool, pl Placement) { p.fillFirst.Store(pl == FillFirst) }

// GetManyCPU is getMany: the batch read by interleaved line loads, which
// panics where GetBatch returns an error.
func (s *Slice[T]) GetManyCPU(idx []int, dst []T) { s.getMany(idx, dst) }

// parsePlacement reads "stripe" or "fill-first" (also "fillfirst"), as in
// the benchmarks' VMEM_POOL_PLACEMENT.
func parsePlacement(s string) (Placement, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "stripe", "":
		return Stripe, nil
	case "fill-first", "fillfirst", "fill":
		return FillFirst, nil
	}
	return Stripe, fmt.Errorf("vmem: unknown placement %q (want stripe or fill-first)", s)
}

// withStripe sets a striped pool Slice's stripe to n elements (rounded up
// to a power of two; ignored on a Device). Default: 16 MiB of elements.
// Small stripes spread small arrays over every device (tests use them);
// large ones make bulk copies larger transfers.
func withStripe(n int) SliceOption {
	return func(c *sliceConfig) { c.stripe = n }
}

// PoolStats is the pool's counters of tier t, summed over its devices.
func PoolStats(p *Pool, t Tier) TierInfo {
	s := p.stats(t)
	return TierInfo{Tier: t, Reserved: s.Reserved, InUse: s.InUse, Blocks: s.Blocks, Chunks: s.Chunks, LargestFree: s.LargestFree}
}
