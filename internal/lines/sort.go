package lines

import "math/bits"

// Flush's order. What sorting buys is locality for the CPU's page walks,
// and on mapped VRAM it buys less than it seems (docs/layout.md has the
// figures):
//
//   - stores in address order are several times cheaper than random ones,
//     but only when dense (several lines to a page);
//   - random stores inside a 64 MiB window already cost little more than
//     sorted ones, and sorted stores 128 KiB apart gain nothing;
//   - visiting the slots in address order reads the line images at
//     random, which is slow once the batch outgrows L2;
//   - a full radix sort costs about as much a line as the stores it
//     would speed up.
//
// So Flush sorts only large, dense batches, and only coarsely: lines are
// ordered by bucket of sortBucketLines lines (256 KiB, 64 pages, few enough
// for the TLB to hold while a bucket is written), keeping the order they
// were stored in within a bucket, which is one radix pass for a batch
// spread over up to 1 GiB. A batch that spans less than sortMinSpan bytes,
// or holds fewer than one line per sortDensity bytes of its span, is
// written in the order it was stored. Measured end to end
// (docs/layout.md, BenchmarkRandomStore), the sorted flush won only for
// large dense batches; these thresholds keep it to that case.

const (
	sortBucketShift = 12 // log2 of sortBucketLines
	sortBucketLines = 1 << sortBucketShift
	sortMinSpan     = 256 << 20
	sortDensity     = 32 << 10
)

// radixBits is the widest digit; 4096 counters (16 KiB) stay in L1.
const radixBits = 12

// flushOrder returns the pending slots in the order to write them, as keys
// whose bits under mask are the slot number.
func (b *Batcher) flushOrder() (keys []uint64, mask uint64) {
	n := b.n
	keys = b.keys[:n]
	lines := b.line[:n]
	lo, hi := lines[0], lines[0]
	for _, l := range lines[1:] {
		lo = min(lo, l)
		hi = max(hi, l)
	}
	span := hi - lo + 1
	if b.unsorted || span*LineSize < sortMinSpan || uint64(n)*(sortDensity/LineSize) < span {
		for i := range keys {
			keys[i] = uint64(i)
		}
		return keys, fullMask
	}
	b.stats.SortedFlushes++
	// Bucket numbers need at most 45-6-12 = 27 bits (MaxRegion) and slot
	// numbers 25 (MaxMaxLines): the packed key always fits.
	r := uint(bits.Len64((hi - lo) >> sortBucketShift))
	for i, l := range lines {
		keys[i] = (l-lo)>>sortBucketShift<<b.sbits | uint64(i)
	}
	// The policy above admits only batches of at least
	// sortMinSpan/sortDensity = 8192 lines, where a radix pass is cheaper
	// than a comparison sort.
	return radixSort(keys, b.tmp[:n], b.count[:], b.sbits, r), uint64(1)<<b.sbits - 1
}

// radixSort sorts keys by bits [low, low+nbits) (bits outside are ignored),
// stably, using tmp as the second buffer and count for the counters. It
// returns whichever buffer holds the result.
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
