package lines

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unsafe"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/lineio"
)

// DefaultMaxLines is the batch size NewBatcher uses when given 0: 8192
// lines, 512 KiB of pending data and about 0.9 MiB of host memory in all.
const DefaultMaxLines = 8192

// MaxMaxLines bounds maxLines, and MaxRegion the region's size, so that a
// line number and a slot number fit together in one 64-bit table entry.
const (
	MaxMaxLines = 1<<entrySlotBits - 1
	MaxRegion   = 1 << (64 - entrySlotBits + 6) // 32 TiB
)

// A table entry is line<<entrySlotBits | (slot+1); 0 marks an empty one.
const (
	entrySlotBits = 25
	entrySlotMask = 1<<entrySlotBits - 1
)

const lineMask = LineSize - 1

const fullMask = ^uint64(0)

// stageLines full lines are staged per lineio.Scatter call in a sorted
// flush: 2 KiB, well inside L1.
const stageLines = 32

// hashMul spreads line numbers over the table (Fibonacci hashing: the top
// bits of the product are well mixed even for consecutive lines).
const hashMul = 0x9E3779B97F4A7C15

// Batcher collects stores to one region of mapped memory (VRAM) in host
// memory and writes them out in one pass. See the package comment for what
// it costs and when it is worth it, and NewBatcher for the region.
//
// Pending stores are kept as whole-line images, one slot per line, with a
// 64-bit mask of the bytes written (bit i is byte i of the line). Stores to
// a line already pending merge into its slot. An open-addressing table
// (linear probing, at most half full) maps line numbers to slots; slots are
// handed out in order and the table is never rehashed, so each slot
// remembers its table position and a flush clears exactly those entries.
//
// A Batcher is not safe for concurrent use.
type Batcher struct {
	base     unsafe.Pointer
	size     uintptr
	maxLines int

	n     int              // pending lines: slots [0, n)
	img   [][LineSize]byte // line images
	mask  []uint64         // dirty bytes of each image
	line  []uint64         // line number (offset/64) of each slot
	pos   []uint32         // table position of each slot
	table []uint64         // line<<entrySlotBits | slot+1 per position, 0 when empty
	shift uint             // 64 - log2(len(table))
	sbits uint             // bits a slot number needs
	keys  []uint64         // Flush's sort keys
	tmp   []uint64         // radix sort's other buffer
	count [1 << radixBits]uint32

	stage [stageLines][LineSize]byte // full lines on their way out
	dsts  [stageLines]unsafe.Pointer // where each staged line goes

	stats BatcherStats

	// unsorted writes lines in insertion order; only benchmarks set it, to
	// measure what sorting gains.
	unsorted bool
}

// BatcherStats counts what a Batcher did since it was made.
type BatcherStats struct {
	Flushes      int64 // flushes that wrote at least one line
	AutoFlushes  int64 // of those, the ones made because the batch was full
	Lines        int64 // lines written
	FullLines    int64 // lines written whole with non-temporal stores
	PartialLines int64 // lines of which only the dirty bytes were written
	Merged       int64 // stores that landed on a line already pending

	SortedFlushes int64 // flushes that sorted the batch (see flushOrder)
}

// NewBatcher returns a batcher for the size bytes of mapped memory at base,
// which must be 64-byte aligned (ErrAlign otherwise). Offsets given to its
// methods are relative to base. At most maxLines lines are held pending
// (0 means DefaultMaxLines); one more and the batch is flushed first. All
// host memory is allocated here, about 120 bytes a line: Put, Get and
// Flush do not allocate.
//
// The region is memory the caller keeps mapped for the batcher's life:
// VRAM, off-heap host memory, or, for tests, any memory. Several disjoint
// mappings can share one batcher by giving it the lowest base and a size
// that reaches the end of the highest; only the lines stored to are ever
// touched, so the holes between mappings stay untouched as long as the
// offsets are right.
func NewBatcher(base unsafe.Pointer, size uintptr, maxLines int) (*Batcher, error) {
	switch {
	case base == nil:
		return nil, errors.New("lines: NewBatcher: nil base")
	case uintptr(base)&lineMask != 0:
		return nil, fmt.Errorf("lines: NewBatcher: base %p: %w", base, ErrAlign)
	case maxLines < 0 || maxLines > MaxMaxLines:
		return nil, fmt.Errorf("lines: NewBatcher: maxLines %d outside [0, %d]", maxLines, MaxMaxLines)
	case uint64(size) > MaxRegion:
		return nil, fmt.Errorf("lines: NewBatcher: region of %d bytes exceeds %d", size, uint64(MaxRegion))
	case maxLines == 0:
		maxLines = DefaultMaxLines
	}
	// Twice as many positions as slots keeps probes short (load factor at
	// most one half).
	tbits := max(bits.Len(uint(2*maxLines-1)), 4)
	return &Batcher{
		base:     base,
		size:     size,
		maxLines: maxLines,
		img:      make([][LineSize]byte, maxLines),
		mask:     make([]uint64, maxLines),
		line:     make([]uint64, maxLines),
		pos:      make([]uint32, maxLines),
		table:    make([]uint64, 1<<tbits),
		shift:    uint(64 - tbits),
		sbits:    uint(bits.Len(uint(maxLines - 1))),
		keys:     make([]uint64, maxLines),
		tmp:      make([]uint64, maxLines),
	}, nil
}

// Base returns the start of the region.
func (b *Batcher) Base() unsafe.Pointer { return b.base }

// Size returns the size of the region in bytes.
func (b *Batcher) Size() uintptr { return b.size }

// MaxLines returns how many lines the batcher holds before it flushes.
func (b *Batcher) MaxLines() int { return b.maxLines }

// Pending returns how many lines wait for the next flush.
func (b *Batcher) Pending() int { return b.n }

// Stats returns the counters.
func (b *Batcher) Stats() BatcherStats { return b.stats }

// Put records a store of data at offset off. Nothing reaches memory until
// a flush; Get sees it at once. A store may span lines. If the batch is
// full, Put flushes it first (possibly midway through a store that spans
// lines, which is harmless: the earlier lines are simply written sooner).
func (b *Batcher) Put(off uintptr, data []byte) error {
	if err := b.checkRange("Put", off, len(data)); err != nil {
		return err
	}
	if len(data) == LineSize && off&lineMask == 0 {
		// A whole aligned line, the commonest large store: one slot, no
		// mask arithmetic, and a fixed-size copy the compiler inlines.
		s := b.slotFor(uint64(off / LineSize))
		b.img[s] = [LineSize]byte(data)
		b.mask[s] = fullMask
		if buildconst.Invariants {
			b.check()
		}
		return nil
	}
	for len(data) > 0 {
		o := off & lineMask
		k := min(LineSize-o, uintptr(len(data)))
		s := b.slotFor(uint64(off / LineSize))
		copy(b.img[s][o:o+k], data[:k])
		b.mask[s] |= byteMask(o, k)
		off += k
		data = data[k:]
	}
	if buildconst.Invariants {
		b.check()
	}
	return nil
}

// PutUint64 records a store of v, in the machine's byte order, at off.
func (b *Batcher) PutUint64(off uintptr, v uint64) error {
	if o := off & lineMask; o <= LineSize-8 && off < b.size && b.size-off >= 8 {
		s := b.slotFor(uint64(off / LineSize))
		binary.NativeEndian.PutUint64(b.img[s][o:], v)
		b.mask[s] |= 0xFF << o
		if buildconst.Invariants {
			b.check()
		}
		return nil
	}
	var t [8]byte
	binary.NativeEndian.PutUint64(t[:], v)
	return b.Put(off, t[:])
}

// Get reads len(dst) bytes at off as they will be after the next flush:
// pending bytes come from the batch, the others from memory by streaming
// loads of whole lines (a line whose wanted bytes are all pending is not
// loaded at all). Get flushes nothing; a DMA or a GPU kernel, which cannot
// see the batch, needs a Flush first.
func (b *Batcher) Get(off uintptr, dst []byte) error {
	if err := b.checkRange("Get", off, len(dst)); err != nil {
		return err
	}
	for len(dst) > 0 {
		o := off & lineMask
		ln := uint64(off / LineSize)
		s, _, pending := b.find(ln)
		if o == 0 && len(dst) >= LineSize && !pending {
			// Whole lines with nothing pending: load the run of them
			// straight into dst, several loads in flight.
			run := 1
			for run < len(dst)/LineSize {
				if _, _, p := b.find(ln + uint64(run)); p {
					break
				}
				run++
			}
			lineio.LoadLines(dst[:run*LineSize], lineAt(b.base, ln))
			off += uintptr(run) * LineSize
			dst = dst[run*LineSize:]
			continue
		}
		k := min(LineSize-o, uintptr(len(dst)))
		if pending && byteMask(o, k)&^b.mask[s] == 0 {
			copy(dst[:k], b.img[s][o:o+k])
		} else {
			var t [LineSize]byte
			lineio.Load(&t, lineAt(b.base, ln))
			if pending {
				overlay(&t, &b.img[s], b.mask[s])
			}
			copy(dst[:k], t[o:o+k])
		}
		off += k
		dst = dst[k:]
	}
	return nil
}

// GetUint64 reads a uint64 in the machine's byte order at off, as Get.
func (b *Batcher) GetUint64(off uintptr) (uint64, error) {
	var t [8]byte
	err := b.Get(off, t[:])
	return binary.NativeEndian.Uint64(t[:]), err
}

// PutValue records a store of v's bytes at off. T must be a type that
// recs.CheckType accepts; this is not checked here.
func PutValue[T any](b *Batcher, off uintptr, v T) error { return b.Put(off, bytesOf(&v)) }

// GetValue reads a T at off, as Get.
func GetValue[T any](b *Batcher, off uintptr) (T, error) {
	var v T
	err := b.Get(off, bytesOf(&v))
	return v, err
}

// Flush writes every pending line, then fences once. Large dense batches
// go out in address order (by 256 KiB bucket), others in the order they
// were first stored. A line whose 64 bytes are all dirty goes out as one
// non-temporal store; for any other line only its dirty bytes are
// written, with plain stores, each run of dirty bytes as one move. The
// line is never read back: on write-combining memory a read would cost a
// microsecond, and the partial writes combine in the CPU's buffers anyway.
func (b *Batcher) Flush() {
	if b.n > 0 {
		b.flush()
	}
	if buildconst.Invariants {
		b.check()
	}
}

// Discard drops every pending store without writing it.
func (b *Batcher) Discard() {
	b.reset()
	if buildconst.Invariants {
		b.check()
	}
}

func (b *Batcher) flush() {
	b.stats.Flushes++
	b.stats.Lines += int64(b.n)
	keys, sm := b.flushOrder()
	if sm == fullMask {
		// Insertion order: the slots are read front to back, which the
		// hardware prefetcher follows.
		for s := range b.n {
			b.writeSlot(s)
		}
	} else {
		b.writeStaged(keys, sm)
	}
	lineio.Fence()
	b.reset()
}

// writeStaged writes the lines in key order. Fully dirty lines are copied
// into a small staging buffer and written stageLines at a time by one
// lineio.Scatter; partial lines are written in place as they come.
//
// Staging matters on VRAM: in address order the slots are visited at
// random, and an NT store whose source misses the cache holds one of the
// CPU's few fill buffers while both the load and the PCIe write finish.
// Copying first lets the random loads overlap each other, and the NT
// stores then read from L1 (docs/layout.md compares staged stores with
// stores straight from the slots).
func (b *Batcher) writeStaged(keys []uint64, sm uint64) {
	ns, partial := 0, 0
	for _, k := range keys {
		s := int(k & sm)
		dst := lineAt(b.base, b.line[s])
		if m := b.mask[s]; m != fullMask {
			writeDirty(dst, &b.img[s], m)
			partial++
			continue
		}
		b.dsts[ns] = dst
		b.stage[ns] = b.img[s]
		ns++
		if ns == stageLines {
			lineio.Scatter(b.dsts[:ns], stageBytes(&b.stage, ns))
			ns = 0
		}
	}
	if ns > 0 {
		lineio.Scatter(b.dsts[:ns], stageBytes(&b.stage, ns))
	}
	b.stats.PartialLines += int64(partial)
	b.stats.FullLines += int64(len(keys) - partial)
}

// writeSlot writes one line straight from its slot.
func (b *Batcher) writeSlot(s int) {
	dst := lineAt(b.base, b.line[s])
	if m := b.mask[s]; m == fullMask {
		lineio.Store(dst, &b.img[s])
		b.stats.FullLines++
	} else {
		writeDirty(dst, &b.img[s], m)
		b.stats.PartialLines++
	}
}

// writeDirty writes the bytes of img selected by m to the line at dst,
// one plain move per run of consecutive dirty bytes.
func writeDirty(dst unsafe.Pointer, img *[LineSize]byte, m uint64) {
	for m != 0 {
		start := uint(bits.TrailingZeros64(m))
		run := uint(bits.TrailingZeros64(^(m >> start)))
		copy(bytesAt(dst, uintptr(start), int(run)), img[start:start+run])
		if start+run == LineSize {
			return
		}
		m &^= (uint64(1)<<run - 1) << start
	}
}

func (b *Batcher) reset() {
	for _, p := range b.pos[:b.n] {
		b.table[p] = 0
	}
	b.n = 0
}

// find looks line ln up. It returns its slot if pending, and otherwise the
// table position where it would go. The key sits in the table entry
// itself, so a probe reads consecutive words of one or two cache lines
// instead of chasing each entry into the slot arrays.
func (b *Batcher) find(ln uint64) (slot int, pos uint32, ok bool) {
	tm := uint32(len(b.table) - 1)
	i := uint32((ln * hashMul) >> b.shift)
	for {
		e := b.table[i]
		if e == 0 {
			return -1, i, false
		}
		if e>>entrySlotBits == ln {
			return int(e&entrySlotMask) - 1, i, true
		}
		i = (i + 1) & tm
	}
}

// slotFor returns the slot of line ln, making one (after a flush if the
// batch is full) when the line is not pending yet.
func (b *Batcher) slotFor(ln uint64) int {
	s, p, ok := b.find(ln)
	if ok {
		b.stats.Merged++
		return s
	}
	if b.n == b.maxLines {
		b.stats.AutoFlushes++
		b.flush()
		_, p, _ = b.find(ln)
	}
	s = b.n
	b.n++
	b.table[p] = ln<<entrySlotBits | uint64(s+1)
	b.line[s] = ln
	b.pos[s] = p
	b.mask[s] = 0
	return s
}

func (b *Batcher) checkRange(op string, off uintptr, n int) error {
	if off > b.size || uintptr(n) > b.size-off {
		return fmt.Errorf("lines: Batcher.%s of %d bytes at offset %d in a region of %d: %w", op, n, off, b.size, ErrRange)
	}
	return nil
}

// byteMask selects k bytes (1 <= k <= 64-o) starting at byte o of a line.
func byteMask(o, k uintptr) uint64 {
	if k >= LineSize {
		return fullMask
	}
	return (uint64(1)<<k - 1) << o
}

// spread maps each 8-bit slice of a dirty mask to the 64-bit word mask of
// the bytes it selects, so that overlay merges a word per step.
var spread = func() (t [256]uint64) {
	for m := range t {
		for i := range 8 {
			if m&(1<<i) != 0 {
				t[m] |= 0xFF << (8 * i)
			}
		}
	}
	return t
}()

// overlay replaces the bytes of line selected by m with those of img.
func overlay(line, img *[LineSize]byte, m uint64) {
	for w := 0; w < LineSize; w += 8 {
		bm := spread[(m>>w)&0xFF]
		if bm == 0 {
			continue
		}
		// Little-endian so that byte i of the word is bits 8i..8i+7,
		// as spread assumes, on every machine.
		x := binary.LittleEndian.Uint64(line[w:])
		y := binary.LittleEndian.Uint64(img[w:])
		binary.LittleEndian.PutUint64(line[w:], x&^bm|y&bm)
	}
}
