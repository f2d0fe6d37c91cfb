package layout

import (
	"cmp"
	"math/bits"
	"slices"
)

// Sorting the batch by address is what makes a flush cheap on VRAM
// (PHYSICS.md: 72 ns a line in random order over 1 GiB, 11 ns sorted), so
// the sort itself must cost a few nanoseconds a line. Each pending line
// becomes one uint64 key, (line - lowest line) << sbits | slot, and the
// keys are sorted by an LSD radix sort over only the bits that differ
// between the lowest and highest line: two passes for a batch spread over
// 1 GiB, one for a batch inside 16 MiB.

// radixBits is the widest digit; 4096 counters (16 KiB) stay in L1.
const radixBits = 12

// radixMin: below this many keys a comparison sort is cheaper than
// clearing and summing the counters.
const radixMin = 256

// sortedKeys returns the pending slots in ascending line order, as keys
// whose low sbits bits are the slot number.
func (b *Batcher) sortedKeys() []uint64 {
	n := b.n
	lines := b.line[:n]
	lo, hi := lines[0], lines[0]
	for _, l := range lines[1:] {
		lo = min(lo, l)
		hi = max(hi, l)
	}
	r := uint(bits.Len64(hi - lo))
	keys := b.keys[:n]
	if r+b.sbits > 64 {
		// The lines span more than a packed key can say (petabytes):
		// sort slot numbers by line instead.
		for i := range keys {
			keys[i] = uint64(i)
		}
		slices.SortFunc(keys, func(x, y uint64) int { return cmp.Compare(lines[x], lines[y]) })
		return keys
	}
	for i, l := range lines {
		keys[i] = (l-lo)<<b.sbits | uint64(i)
	}
	if n < radixMin {
		slices.Sort(keys)
		return keys
	}
	return radixSort(keys, b.tmp[:n], b.count[:], b.sbits, r)
}

// radixSort sorts keys by bits [low, low+nbits) (all bits above are zero,
// and keys differ there), using tmp as the second buffer and count for the
// counters. It returns whichever buffer holds the result.
func radixSort(keys, tmp []uint64, count []uint32, low, nbits uint) []uint64 {
	if nbits == 0 {
		return keys
	}
	// Digits no wider than radixBits and, for small batches, not much
	// wider than log2(n): clearing 4096 counters for 300 keys is waste.
	w := min(uint(radixBits), max(uint(bits.Len(uint(len(keys))))-1, 4))
	passes := (nbits + w - 1) / w
	w = (nbits + passes - 1) / passes
	dm := uint64(1)<<w - 1
	cnt := count[:1<<w]
	src, dst := keys, tmp
	for p := range passes {
		shift := low + p*w
		clear(cnt)
		for _, k := range src {
			cnt[(k>>shift)&dm]++
		}
		var sum uint32
		for i, c := range cnt {
			cnt[i] = sum
			sum += c
		}
		for _, k := range src {
			d := (k >> shift) & dm
			dst[cnt[d]] = k
			cnt[d]++
		}
		src, dst = dst, src
	}
	return src
}
