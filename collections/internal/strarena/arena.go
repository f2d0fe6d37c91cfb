package strarena

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/internal/held"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/vmem"
)

// Handle locates a string in an Arena: its offset in 16-byte units and its
// length, packed in 64 bits so that records can hold it inline. The zero
// Handle is the empty string.
type Handle uint64

const (
	lenBits   = 28
	unitShift = 4
	segShift  = 30 // each segment owns a 1 GiB window of the offset space

	// MaxLen is the longest string an Arena stores: 256 MiB - 1 bytes.
	MaxLen = 1<<lenBits - 1
	// Unit is the allocation granule: every string starts on a 16-byte
	// boundary, so four short strings share one 64-byte line.
	Unit = 1 << unitShift

	maxSegs   = 1 << (64 - lenBits + unitShift - segShift) // 1024 windows: 1 TiB
	segMask   = 1<<segShift - 1
	maxSegLen = 1 << segShift
)

// Len returns the string's length in bytes.
func (h Handle) Len() int { return int(h & MaxLen) }

// Offset returns the string's byte offset in the arena's offset space.
func (h Handle) Offset() uint64 { return uint64(h>>lenBits) << unitShift }

func makeHandle(off uint64, n int) Handle { return Handle(off>>unitShift<<lenBits | uint64(n)) }

// Size classes: exact multiples of 16 bytes up to 1 KiB (64 classes), then
// eight classes per power of two up to 256 MiB, so a block wastes at most
// 15 bytes or 12.5%.
const (
	smallUnits = 64
	numClasses = smallUnits + 8*(lenBits-unitShift-6)
)

// classUnits[c] is the size of class c in units.
var classUnits = func() (t [numClasses]uint64) {
	for c := range t {
		t[c] = sizeOfClass(c)
	}
	return t
}()

func sizeOfClass(c int) uint64 {
	if c < smallUnits {
		return uint64(c + 1)
	}
	e := uint(6 + (c-smallUnits)/8)
	return 1<<e + uint64((c-smallUnits)%8+1)<<(e-3)
}

// classOf returns the smallest class of at least u units (1 <= u <= 2^24).
func classOf(u uint64) int {
	if u <= smallUnits {
		return int(u - 1)
	}
	e := uint(bits.Len64(u-1) - 1)
	return smallUnits + int(e-6)*8 + int((u-1-1<<e)>>(e-3))
}

// floorClass returns the largest class of at most u units (u >= 1).
func floorClass(u uint64) int {
	c := classOf(min(u, classUnits[numClasses-1]))
	if classUnits[c] > u {
		c--
	}
	return c
}

// Options configure New. The zero value keeps strings in mapped VRAM.
type Options struct {
	// Tier is where the bytes live: vmem.Mapped (the default) spills to
	// vmem.Private when the mapped tier is full; vmem.Private and vmem.Host
	// are used as asked.
	Tier vmem.Tier
	// FirstSegment is the size of the first segment (default 64 KiB,
	// rounded up to 64 bytes); each further segment doubles, up to 1 GiB.
	FirstSegment uint64
}

// Stats count an arena's memory.
type Stats struct {
	Segments int    // device blocks held
	Reserved uint64 // their bytes
	Strings  int    // live strings (non-empty)
	Live     uint64 // bytes they take, rounded to their classes
	Free     uint64 // bytes on the free lists
}

// Arena stores byte strings in device memory. See the package comment.
type Arena struct {
	st *state
}

// segment is one block of the arena; its View says how it is reached.
type segment struct {
	blk block.Block
	access.View
	size uint64
}

// state is everything the leak backstop must free; Arena only points at
// it, so the cleanup can run once the Arena is unreachable.
type state struct {
	// released is set by the first release: Close and the cleanup each
	// call it, and the second must neither free twice nor race the first.
	released atomic.Bool
	dev      *vmem.Device
	mem      *held.Set[block.Block, block.Tier] // every block and free-list mapping
	tier     vmem.Tier
	first    uint64
	maxSeg   uint64
	segs     []segment
	cur      int    // segment being carved from the end; len(segs) when none
	bump     uint64 // first unused byte of segs[cur]
	free     [numClasses]stack
	nonEmp   [(numClasses + 63) / 64]uint64 // classes whose free list is not empty
	live     uint64
	nlive    int
	freeB    uint64
	lost     uint64 // space dropped because a free list could not grow
	closed   bool

	liveSet map[uint64]int // invariants builds: offset -> length of each live string
}

// New returns an empty arena on dev. No device memory is taken until the
// first Put.
func New(dev *vmem.Device, o Options) (*Arena, error) {
	if dev == nil {
		return nil, errors.New("strarena: New: nil device")
	}
	if o.Tier < 0 || o.Tier > vmem.Host {
		return nil, fmt.Errorf("strarena: New: unknown tier %d", int(o.Tier))
	}
	first := o.FirstSegment
	if first == 0 {
		first = 64 << 10
	}
	first = (first + 63) &^ 63
	info := dev.Info()
	maxSeg := uint64(maxSegLen)
	for _, t := range []vmem.Tier{o.Tier, vmem.Private} {
		if ti := info.Tiers[t]; ti.Available && ti.MaxBlock > 0 {
			maxSeg = min(maxSeg, ti.MaxBlock&^63)
		}
		if o.Tier != vmem.Mapped {
			break
		}
	}
	st := &state{dev: dev, mem: held.New[block.Block, block.Tier](kern.Of(dev)), tier: o.Tier, first: min(first, maxSeg), maxSeg: maxSeg}
	if buildconst.Invariants {
		st.liveSet = map[uint64]int{}
	}
	a := &Arena{st: st}
	// keepAlive: every method that works on st keeps a alive until it
	// returns (defer runtime.KeepAlive(a)). Without that, a caller's last
	// call could find its memory freed, and st released twice at once, by
	// this cleanup running as soon as a is no longer used in the method.
	runtime.AddCleanup(a, func(s *state) { s.release() }, st)
	return a, nil
}

// Put stores b and returns its handle. An empty b takes no space and
// returns the zero Handle. On error (ErrOutOfMemory, ErrTooLarge, device
// loss) nothing is stored.
func (a *Arena) Put(b []byte) (Handle, error) {
	defer runtime.KeepAlive(a) // see keepAlive
	st := a.st
	if st.closed {
		return 0, vmem.ErrClosed
	}
	n := len(b)
	if n == 0 {
		return 0, nil
	}
	if n > MaxLen {
		return 0, fmt.Errorf("strarena: Put of %d bytes (at most %d): %w", n, MaxLen, vmem.ErrTooLarge)
	}
	off, err := st.alloc(n)
	if err != nil {
		return 0, err
	}
	if err := st.write(off, b); err != nil {
		st.freeOff(off, n)
		return 0, err
	}
	if buildconst.Invariants {
		st.mustCheck()
	}
	return makeHandle(off, n), nil
}

// PutString is Put for a string, without copying it to a []byte first.
func (a *Arena) PutString(s string) (Handle, error) {
	return a.Put(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// Free returns h's space for reuse. Freeing the zero Handle does nothing;
// freeing a handle twice, or one of another arena, corrupts the arena
// (builds with the invariants tag catch it).
func (a *Arena) Free(h Handle) {
	defer runtime.KeepAlive(a) // see keepAlive
	st := a.st
	if st.closed || h.Len() == 0 {
		return
	}
	st.freeOff(h.Offset(), h.Len())
	if buildconst.Invariants {
		st.mustCheck()
	}
}

// Reset frees every string at once and keeps the segments for reuse.
func (a *Arena) Reset() {
	defer runtime.KeepAlive(a) // see keepAlive
	st := a.st
	if st.closed {
		return
	}
	for c := range st.free {
		st.free[c].n = 0
	}
	clear(st.nonEmp[:])
	st.cur, st.bump = 0, 0
	st.live, st.nlive, st.freeB, st.lost = 0, 0, 0, 0
	if buildconst.Invariants {
		clear(st.liveSet)
		st.mustCheck()
	}
}

// Close frees the arena's memory. It is idempotent; the arena and its
// handles are invalid afterwards (Put returns vmem.ErrClosed).
func (a *Arena) Close() error {
	defer runtime.KeepAlive(a) // see keepAlive
	st := a.st
	if st.closed {
		return nil
	}
	st.closed = true
	st.release()
	return nil
}

// Stats returns the arena's counters.
func (a *Arena) Stats() Stats {
	defer runtime.KeepAlive(a) // see keepAlive
	st := a.st
	s := Stats{Segments: len(st.segs), Strings: st.nlive, Live: st.live, Free: st.freeB}
	for _, sg := range st.segs {
		s.Reserved += sg.size
	}
	return s
}

// Read copies len(dst) bytes of h's string, starting at byte off, into dst.
func (a *Arena) Read(dst []byte, h Handle, off int) error {
	defer runtime.KeepAlive(a) // see keepAlive
	st := a.st
	if st.closed {
		return vmem.ErrClosed
	}
	if off < 0 || off > h.Len() || len(dst) > h.Len()-off {
		return fmt.Errorf("strarena: Read of [%d, %d) from a string of %d bytes: %w", off, off+len(dst), h.Len(), vmem.ErrRange)
	}
	if len(dst) == 0 {
		return nil
	}
	sg, o, err := st.locate(h.Offset()+uint64(off), len(dst))
	if err != nil {
		return err
	}
	return sg.Read(dst, o)
}

// AppendTo appends h's string to dst.
func (a *Arena) AppendTo(dst []byte, h Handle) ([]byte, error) {
	n := len(dst)
	dst = append(dst, make([]byte, h.Len())...)
	if err := a.Read(dst[n:], h, 0); err != nil {
		return dst[:n], err
	}
	return dst, nil
}

// String returns h's string as a new Go string.
func (a *Arena) String(h Handle) (string, error) {
	if h.Len() == 0 {
		return "", nil
	}
	b := make([]byte, h.Len())
	if err := a.Read(b, h, 0); err != nil {
		return "", err
	}
	return unsafe.String(&b[0], len(b)), nil
}

// Equal reports whether h's string equals b. It reads the arena in small
// pieces and never allocates on the host and mapped paths.
func (a *Arena) Equal(h Handle, b []byte) (bool, error) {
	if h.Len() != len(b) {
		return false, a.st.usable()
	}
	c, err := a.cmp(h, b, true)
	return c == 0, err
}

// EqualString is Equal for a string.
func (a *Arena) EqualString(h Handle, s string) (bool, error) {
	return a.Equal(h, unsafe.Slice(unsafe.StringData(s), len(s)))
}

// Compare compares h's string with b as bytes.Compare does.
func (a *Arena) Compare(h Handle, b []byte) (int, error) {
	return a.cmp(h, b, false)
}

// CompareString is Compare for a string.
func (a *Arena) CompareString(h Handle, s string) (int, error) {
	return a.cmp(h, unsafe.Slice(unsafe.StringData(s), len(s)), false)
}

func (st *state) usable() error {
	if st.closed {
		return vmem.ErrClosed
	}
	return nil
}

// cmp compares h's string with b: the common prefix first, then the
// lengths. eqOnly allows stopping at a length mismatch (Equal checked it).
func (a *Arena) cmp(h Handle, b []byte, eqOnly bool) (int, error) {
	defer runtime.KeepAlive(a) // see keepAlive
	st := a.st
	if st.closed {
		return 0, vmem.ErrClosed
	}
	n := min(h.Len(), len(b))
	c := 0
	if n > 0 {
		sg, o, err := st.locate(h.Offset(), n)
		if err != nil {
			return 0, err
		}
		if c, err = sg.Compare(o, b[:n]); err != nil {
			return 0, err
		}
	}
	if c != 0 || eqOnly {
		return c, nil
	}
	switch {
	case h.Len() < len(b):
		return -1, nil
	case h.Len() > len(b):
		return 1, nil
	}
	return 0, nil
}

// locate returns the segment and in-segment offset of [off, off+n).
func (st *state) locate(off uint64, n int) (*segment, uint64, error) {
	si := int(off >> segShift)
	o := off & segMask
	if si >= len(st.segs) || o+uint64(n) > st.segs[si].size {
		return nil, 0, fmt.Errorf("strarena: handle outside the arena (offset %#x, %d bytes): %w", off, n, vmem.ErrRange)
	}
	return &st.segs[si], o, nil
}

func (st *state) write(off uint64, b []byte) error {
	sg, o, err := st.locate(off, len(b))
	if err != nil {
		return err
	}
	return sg.Write(o, b)
}

// alloc reserves room for n bytes (1 <= n <= MaxLen) and returns its
// offset. On error nothing changes.
func (st *state) alloc(n int) (uint64, error) {
	u := (uint64(n) + Unit - 1) >> unitShift
	c := classOf(u)
	size := classUnits[c] << unitShift
	off, ok := st.pop(c)
	if !ok {
		// The smallest larger free block, split.
		if c2 := st.nextNonEmpty(c + 1); c2 >= 0 {
			off, _ = st.pop(c2)
			st.carve(off+size, (classUnits[c2]-classUnits[c])<<unitShift)
			ok = true
		}
	}
	if !ok {
		var err error
		if off, err = st.bumpAlloc(size); err != nil {
			return 0, err
		}
	}
	st.live += size
	st.nlive++
	if buildconst.Invariants {
		st.liveSet[off] = n
	}
	return off, nil
}

// bumpAlloc takes size bytes from the end of the current segment, moving
// to a kept segment or a new one when it does not fit.
func (st *state) bumpAlloc(size uint64) (uint64, error) {
	for st.cur < len(st.segs) {
		sg := &st.segs[st.cur]
		if st.bump+size <= sg.size {
			off := uint64(st.cur)<<segShift + st.bump
			st.bump += size
			return off, nil
		}
		if st.cur+1 == len(st.segs) {
			break
		}
		// A segment kept by Reset: leave the rest of this one on the free
		// lists and go on.
		st.carve(uint64(st.cur)<<segShift+st.bump, sg.size-st.bump)
		st.cur++
		st.bump = 0
	}
	if len(st.segs) == maxSegs {
		return 0, fmt.Errorf("strarena: the arena's %d segments are in use: %w", maxSegs, vmem.ErrOutOfMemory)
	}
	if size > st.maxSeg {
		return 0, fmt.Errorf("strarena: a string of %d bytes exceeds the largest block (%d): %w", size, st.maxSeg, vmem.ErrTooLarge)
	}
	want := st.maxSeg
	if i := uint(len(st.segs)); i < 40 {
		want = min(st.first<<i, st.maxSeg)
	}
	want = max(want, 1<<bits.Len64(size-1))
	want = min(want, st.maxSeg)
	sg, err := st.newSegment(want)
	if err != nil {
		return 0, err
	}
	if st.cur < len(st.segs) {
		st.carve(uint64(st.cur)<<segShift+st.bump, st.segs[st.cur].size-st.bump)
	}
	st.segs = append(st.segs, sg)
	st.cur = len(st.segs) - 1
	st.bump = size
	return uint64(st.cur) << segShift, nil
}

func (st *state) newSegment(size uint64) (segment, error) {
	blk, err := st.mem.Alloc(block.Tier(st.tier), size)
	if err != nil && st.tier == vmem.Mapped && errors.Is(err, vmem.ErrOutOfMemory) {
		blk, err = st.mem.Alloc(block.Private, size)
	}
	if err != nil {
		return segment{}, err
	}
	return segment{blk: blk, View: kern.Of(st.dev).View(blk), size: size}, nil
}

// carve puts [off, off+n) on the free lists as blocks of the largest
// classes that fit.
func (st *state) carve(off, n uint64) {
	for n >= Unit {
		c := floorClass(n >> unitShift)
		size := classUnits[c] << unitShift
		st.push(c, off)
		off += size
		n -= size
	}
}

func (st *state) freeOff(off uint64, n int) {
	c := classOf((uint64(n) + Unit - 1) >> unitShift)
	if buildconst.Invariants {
		if m, ok := st.liveSet[off]; !ok || m != n {
			panic(fmt.Sprintf("strarena: Free of offset %#x (%d bytes), which is not a live string", off, n))
		}
		delete(st.liveSet, off)
	}
	st.live -= classUnits[c] << unitShift
	st.nlive--
	st.push(c, off)
}

func (st *state) push(c int, off uint64) {
	if !st.free[c].push(st.mem, off) {
		st.lost += classUnits[c] << unitShift
		return
	}
	st.freeB += classUnits[c] << unitShift
	st.nonEmp[c/64] |= 1 << (c % 64)
}

func (st *state) pop(c int) (uint64, bool) {
	off, ok := st.free[c].pop()
	if !ok {
		return 0, false
	}
	st.freeB -= classUnits[c] << unitShift
	if st.free[c].n == 0 {
		st.nonEmp[c/64] &^= 1 << (c % 64)
	}
	return off, true
}

// nextNonEmpty returns the first class >= c with a free block, or -1.
func (st *state) nextNonEmpty(c int) int {
	for w := c / 64; w < len(st.nonEmp) && c < numClasses; w++ {
		m := st.nonEmp[w]
		if w == c/64 {
			m &^= 1<<(c%64) - 1
		}
		if m != 0 {
			return w*64 + bits.TrailingZeros64(m)
		}
	}
	return -1
}

// release frees every block and free list; calls after the first do
// nothing.
func (st *state) release() {
	if !st.released.CompareAndSwap(false, true) {
		return
	}
	st.mem.FreeAll() // the blocks and the free lists' host memory
	st.segs = nil
	st.cur, st.bump = 0, 0
	for c := range st.free {
		st.free[c].release(nil)
	}
	clear(st.nonEmp[:])
	st.live, st.nlive, st.freeB, st.lost = 0, 0, 0, 0
}
