package lineio

import (
	"errors"
	"fmt"
	"os"
	"unsafe"
)

// LineSize is the unit every function here moves: one cache line, which is
// also the size of one write-combining buffer and of one full PCIe write.
const LineSize = 64

const lineMask = LineSize - 1

// The variants, in increasing order of preference.
const (
	kindGeneric = iota
	kindSSE41
	kindAVX2
	kindAVX512
	numKinds
)

var kindNames = [numKinds]string{"generic", "sse41", "avx2", "avx512"}

// kind is the variant in use; every entry point switches on it (a switch of
// direct calls, not a table of func values, so that escape analysis keeps
// the callers' buffers on their stacks).
var kind int

// Kind names the variant in use: "avx512", "avx2", "sse41" or "generic".
// It is for reading; use [SetKind] to change the variant.
var Kind string

func init() {
	kind = bestKind()
	if want := os.Getenv("VMEM_LINEIO"); want != "" {
		// Only a variant the CPU supports can be chosen; anything else is
		// ignored so that a stale setting never breaks a program.
		_ = SetKind(want)
	}
	Kind = kindNames[kind]
}

// Kinds lists the variants this machine can run, best first. "generic" is
// always last.
func Kinds() []string {
	var out []string
	for k := bestKind(); k >= kindGeneric; k-- {
		if supported(k) {
			out = append(out, kindNames[k])
		}
	}
	return out
}

// SetKind switches to the named variant, for tests and benchmarks that cover
// every variant. It is not safe while other goroutines use the package.
func SetKind(name string) error {
	for k, n := range kindNames {
		if n == name {
			if !supported(k) {
				return fmt.Errorf("lineio: variant %q is not supported by this CPU", name)
			}
			kind = k
			Kind = n
			return nil
		}
	}
	return errors.New("lineio: no variant named " + name)
}

// Load reads the 64-byte line at src into dst with one streaming load
// (avx512) or its narrower equivalent. src must be 64-byte aligned.
func Load(dst *[LineSize]byte, src unsafe.Pointer) {
	checkAligned(src)
	load(dst, src)
}

// Store writes dst's 64-byte line from src with non-temporal stores, which
// fill one write-combining buffer and leave as one bus write. dst must be
// 64-byte aligned. No fence: call [Fence] after the batch.
func Store(dst unsafe.Pointer, src *[LineSize]byte) {
	checkAligned(dst)
	store(dst, src)
}

// LoadLines reads len(dst)/64 contiguous lines starting at src into dst,
// with several streaming loads in flight at once. len(dst) must be a
// multiple of 64 and src 64-byte aligned.
func LoadLines(dst []byte, src unsafe.Pointer) {
	n := linesIn(len(dst))
	if n == 0 {
		return
	}
	checkAligned(src)
	loadLines(&dst[0], src, n)
}

// StoreLines writes src to the contiguous lines starting at dst with
// non-temporal stores. len(src) must be a multiple of 64 and dst 64-byte
// aligned. No fence: call [Fence] after the batch.
func StoreLines(dst unsafe.Pointer, src []byte) {
	n := linesIn(len(src))
	if n == 0 {
		return
	}
	checkAligned(dst)
	storeLines(dst, &src[0], n)
}

// Gather reads the line at each srcs[i] into dst[64*i:64*i+64]. The loads
// are issued four at a time so that four round trips overlap: on VRAM four
// interleaved lines cost about as much as one and a half alone.
// len(dst) must be 64*len(srcs); every srcs[i] must be 64-byte aligned.
func Gather(dst []byte, srcs []unsafe.Pointer) {
	if len(dst) != LineSize*len(srcs) {
		panic(fmt.Sprintf("lineio: Gather: len(dst) = %d, want 64*len(srcs) = %d", len(dst), LineSize*len(srcs)))
	}
	if len(srcs) == 0 {
		return
	}
	for _, p := range srcs {
		checkAligned(p)
	}
	gather(&dst[0], &srcs[0], len(srcs))
}

// Scatter writes src[64*i:64*i+64] to the line at each dsts[i] with
// non-temporal stores, four lines per loop iteration: the counterpart of
// Gather, for writing a sorted batch of scattered lines without a call per
// line. len(src) must be 64*len(dsts); every dsts[i] must be 64-byte
// aligned. No fence: call [Fence] after the batch.
func Scatter(dsts []unsafe.Pointer, src []byte) {
	if len(src) != LineSize*len(dsts) {
		panic(fmt.Sprintf("lineio: Scatter: len(src) = %d, want 64*len(dsts) = %d", len(src), LineSize*len(dsts)))
	}
	if len(dsts) == 0 {
		return
	}
	for _, p := range dsts {
		checkAligned(p)
	}
	scatter(&dsts[0], &src[0], len(dsts))
}

// Fence makes every earlier non-temporal store (and every store to
// write-combining memory) globally visible before any later store: SFENCE on
// amd64. Call it once after a batch, not after every line.
func Fence() { sfence() }

// FullFence orders every earlier load and store before every later one,
// streaming loads included: MFENCE on amd64. Intel asks for it before
// streaming loads of WC memory that another agent may have written since
// this thread last read it; between ordinary batches [Fence] is enough.
func FullFence() { mfence() }

// Copy copies n bytes from src to dst; either may be mapped VRAM, host
// memory or the Go heap, at any alignment, but they must not overlap.
//
// Source lines are read with streaming loads, always whole aligned lines
// (the ragged first and last lines are loaded whole and the wanted bytes
// picked out; no plain loads touch src). Destination lines that are covered
// completely are written with non-temporal stores; the ragged first and
// last lines of dst get plain stores of exactly the bytes in range, so
// bytes next to the range are never read or rewritten. Copy ends with a
// [Fence].
//
// This is the primitive for reading or writing a few KiB of mapped VRAM;
// longer spans belong to DMA.
func Copy(dst, src unsafe.Pointer, n uintptr) {
	CopyUnfenced(dst, src, n)
	sfence()
}

// CopyUnfenced is Copy without the closing Fence, for several copies that
// share one. The fence waits until the NT stores have left the CPU (many
// times as long as a 64-byte copy to host memory takes: BenchmarkCopy's
// unfenced rows), which a run of small copies need not pay each time.
func CopyUnfenced(dst, src unsafe.Pointer, n uintptr) {
	if n == 0 {
		return
	}
	if kind == kindGeneric {
		// Without streaming loads nothing is gained by whole lines, and
		// an exact copy never reads outside the caller's range.
		copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
		return
	}
	if (uintptr(dst)^uintptr(src))&lineMask == 0 {
		copyCoaligned(dst, src, n)
	} else {
		copyShifted(dst, src, n)
	}
}

// copyCoaligned handles src and dst at the same offset within their lines:
// the interior lines go straight from streaming loads to NT stores.
func copyCoaligned(dst, src unsafe.Pointer, n uintptr) {
	var i uintptr // bytes done; pointers are formed only for i < n
	if off := uintptr(dst) & lineMask; off != 0 {
		h := min(LineSize-off, n)
		var t [LineSize]byte
		loadFloor(&t, src)
		plainStore(dst, t[off:off+h])
		i = h
	}
	if full := (n - i) / LineSize; full > 0 {
		copyLines(unsafe.Add(dst, i), unsafe.Add(src, i), int(full))
		i += full * LineSize
	}
	if i < n {
		var t [LineSize]byte
		load(&t, unsafe.Add(src, i))
		plainStore(unsafe.Add(dst, i), t[:n-i])
	}
}

// copyChunk is how much copyShifted moves per round: 32 lines, enough to
// keep streaming loads back to back, small enough for the stack.
const copyChunk = 32 * LineSize

// copyShifted handles src and dst at different offsets within their lines.
// Each round loads the source lines that cover the next piece into a stack
// buffer and writes the piece out. Pieces end on dst line boundaries, so
// only the very first and last dst lines are ragged; a source line split
// between two pieces is carried over, not loaded twice.
func copyShifted(dst, src unsafe.Pointer, n uintptr) {
	var buf [copyChunk + LineSize]byte
	carried := false // buf[0:64] already holds the line containing src+i
	for i := uintptr(0); i < n; {
		d, s := unsafe.Add(dst, i), unsafe.Add(src, i)
		k := min(copyChunk-uintptr(d)&lineMask, n-i)
		so := uintptr(s) & lineMask
		nl := int((so + k + lineMask) / LineSize)
		first := 0
		if so != 0 {
			if !carried {
				loadFloor((*[LineSize]byte)(buf[:LineSize]), s)
			}
			first = 1
		}
		if nl > first {
			// The first aligned source line at or after s lies inside
			// [s, s+k) because nl > first.
			loadLines(&buf[first*LineSize], unsafe.Add(s, (LineSize-so)&lineMask), nl-first)
		}
		writeOut(d, buf[so:so+k])
		i += k
		// The next piece starts inside the last line loaded unless this
		// piece ended on a source line boundary.
		carried = (so+k)&lineMask != 0
		if carried && nl > 1 {
			copy(buf[:LineSize], buf[(nl-1)*LineSize:nl*LineSize])
		}
	}
}

// writeOut writes b to d: plain stores for the partial line at each end,
// NT stores for every whole line between.
func writeOut(d unsafe.Pointer, b []byte) {
	h := min((LineSize-uintptr(d)&lineMask)&lineMask, uintptr(len(b)))
	if h > 0 {
		plainStore(d, b[:h])
	}
	rest := uintptr(len(b)) - h
	if full := rest / LineSize; full > 0 {
		storeLines(unsafe.Add(d, h), &b[h], int(full))
	}
	if t := rest % LineSize; t > 0 {
		plainStore(unsafe.Add(d, uintptr(len(b))-t), b[uintptr(len(b))-t:])
	}
}

// plainStore writes exactly len(b) bytes at d with ordinary moves. memmove
// never reads its destination, which matters on WC memory.
func plainStore(d unsafe.Pointer, b []byte) {
	copy(unsafe.Slice((*byte)(d), len(b)), b)
}

func linesIn(nbytes int) int {
	if nbytes%LineSize != 0 {
		panic(fmt.Sprintf("lineio: length %d is not a multiple of 64", nbytes))
	}
	return nbytes / LineSize
}

func checkAligned(p unsafe.Pointer) {
	if uintptr(p)&lineMask != 0 {
		panicUnaligned(p)
	}
}

//go:noinline
func panicUnaligned(p unsafe.Pointer) {
	panic(fmt.Sprintf("lineio: address %p is not 64-byte aligned", p))
}
