package collections

// Ring[T]: a fixed-capacity FIFO whose elements live in device memory.
//
// # Layout
//
// Elements sit back to back as in a Go array ([]T), in one or more mapped
// blocks ("segments", at most 1 GiB each so that no single allocation
// meets the driver's limit). The ring has P physical slots, P being the
// capacity rounded up so that P*sizeof(T) is a whole number of 64-byte
// lines: the wrap point then falls on a line boundary and every line of
// the ring is always written whole. Records are not padded to stay
// inside lines (layout.Record would put 12-byte records 5 to a line): a
// ring is read and written in sequence, so a record that straddles two
// lines costs nothing extra, and the Go-array layout lets a DMA land
// straight in the caller's []T with no re-spacing pass.
//
// Positions are counted, not wrapped: element e (the e-th ever pushed)
// occupies bytes [e*s, e*s+s) of an endless byte stream, global line
// (e*s)/64 of which lives at physical line ((e*s)/64) mod (P*s/64).
//
// # Pushes: a host-side staging ring, whole-line NT stores
//
// Write-combining VRAM takes sequential whole lines fast from one core
// (docs/physics.md), and a partial line only as several small bus writes.
// A fence (SFENCE) waits until the stores have left the core, far longer
// than streaming a line takes; so does any locked instruction, such as the
// atomic store that publishes a push. So a push never stores to VRAM
// directly: it copies the element into a staging ring in host memory (K
// lines, 64 by default). Completed lines wait there until K/2 of them are
// ready, then go out in one burst of non-temporal stores followed by one
// fence, and the producer publishes how many lines are now in VRAM
// ("durable"). Writing each line as it completed would make the next
// push's atomic store wait for it: a drain every few pushes instead of one
// every few hundred. PushBatch copies its head into the partial staged
// line, its whole lines straight from the caller's slice with NT stores
// (split over several cores above 8 MiB: the link takes more than one
// core's stores), and its ragged tail into staging; then one fence.
//
// A published element is visible to the consumer even though its line may
// still sit in staging: the consumer reads lines below "durable" from VRAM
// and the others from the staging ring (ordinary host memory, a few
// nanoseconds).
//
// # Publishing: a release store per push
//
// Go's atomic stores are locked instructions on amd64 (XCHG): each costs
// more than all the rest of a push (BenchmarkRingPush). Publishing needs
// only a release store (the element's bytes visible before the index),
// which any plain x86 store is: Push stores tail with lineio.StoreRelease,
// a plain MOV in assembly (sync/atomic's store under the race detector and
// elsewhere). Every Push is visible to the consumer when it returns.
//
// # Pops: a line window, DMA for bulk
//
// A single Pop reads from a consumer-side window of up to 8 lines: durable
// lines are loaded with streaming loads (lineio.LoadLines, several in
// flight; a plain load of VRAM would cost a round trip per word:
// docs/physics.md), newer ones are copied from staging. Eight uint64s
// share a line, so one refill, a few overlapped round trips, serves 64
// pops, and a consumer that keeps up with the producer reads
// staging only and never waits for VRAM. PopBatch and All move long runs
// by DMA (kern.Device.Read, at the link's speed): All into a pinned host
// block (no staging copy), PopBatch into the caller's buffer through
// staging; short runs use streaming loads.
//
// # Concurrency and memory ordering
//
// One producer goroutine (Push, PushBatch) and one consumer goroutine (Pop,
// PopBatch, Peek, All, Err) may run at once without locks. Each side owns
// its own indexes, and each shared word has exactly one writer:
//
//	tail     producer  elements published (atomic; one store per 16 Pushes)
//	durable  producer  lines fenced into VRAM (atomic; every K/2 lines)
//	floor    producer  overwrite mode: elements below it are dropped
//	head     consumer  elements consumed (atomic; one store per Pop)
//	announce consumer  the staged line the consumer is reading, plus one
//	want     consumer  1 + the tail at which the consumer found the ring empty
//
// Publishing data: the producer writes a line to VRAM with NT stores, then
// lineio.Fence (SFENCE: NT stores are weakly ordered and could otherwise
// become visible after the index that covers them), then stores durable.
// Elements are published by storing tail after their bytes are in staging
// (and, before any burst that rewrites a VRAM line, so that in overwrite mode
// the elements it replaces are already dropped).
// The consumer loads tail, then durable, then (on VRAM) lineio.FullFence
// (MFENCE: WC memory may be read speculatively, and a streaming load must
// not run ahead of the index that says the line is ready), then loads.
//
// Reusing staging: line L's slot is reused for line L+K. The producer does
// that only after L is durable, and only when the consumer has not
// announced that it is reading L or earlier from staging. The consumer
// announces the first staged line it will read (an atomic store), then
// reloads durable and reads from staging only lines that are still not
// durable. Both sides use sequentially consistent atomics, so either the
// producer sees the announcement (and yields until it is withdrawn) or the
// consumer sees the newer durable (and reads VRAM instead). The spin can
// only last while the consumer is descheduled in the middle of a copy.
//
// Error when full (the default): the producer writes a physical line only when every
// element it held has been consumed (head has passed it), so what the
// consumer reads is never overwritten under it.
//
// WithOverwrite(true): the producer never waits and never writes head. The
// oldest live element is max(head, tail-capacity, floor): pushing past the
// capacity drops the oldest simply by moving tail. Because P >= capacity,
// any VRAM line the producer rewrites holds only elements already dropped
// by the tail (single Push: tail is stored, then a fence, then the line is
// written) or by floor (PushBatch stores floor, then a fence, then writes).
// The consumer therefore reads an
// element, fences, and checks that the element is still above the drop
// point; if the producer overtook it meanwhile it retries from the new
// oldest. Every element returned was whole and live when read; elements
// dropped while the consumer was reading them are never returned.
//
// More than one producer (or consumer) needs the caller's lock around that
// side; the two sides may still use separate locks.

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/held"
	"github.com/govram/govram/internal/lines"
	"github.com/govram/govram/layout"
	"github.com/govram/govram/vmem"
)

// ringPolicy says what Push does when the ring is full (WithOverwrite).
type ringPolicy int

const (
	// ringErrorWhenFull makes Push return ErrFull and PushBatch push only
	// what fits. It is the default.
	ringErrorWhenFull ringPolicy = iota
	// ringOverwriteOldest makes Push drop the oldest element to make room,
	// so pushes never fail and the ring keeps the newest Cap elements.
	ringOverwriteOldest
)

func (p ringPolicy) String() string {
	switch p {
	case ringErrorWhenFull:
		return "error when full"
	case ringOverwriteOldest:
		return "overwrite the oldest"
	}
	return fmt.Sprintf("ring policy %d", int(p))
}

// RingOption configures NewRing and LoadRing: WithOverwrite.
type RingOption interface{ applyRing(*ringConfig) }

// ringOpt is a RingOption of its own function.
type ringOpt func(*ringConfig)

func (f ringOpt) applyRing(c *ringConfig) { f(c) }

type ringConfig struct {
	policy      ringPolicy
	segLines    uint64 // lines per segment (a power of two); 0: the default
	stageLines  uint64 // staging slots (a power of two >= 2); 0: the default
	parallelMin uint64 // PushBatch runs at least this long use several cores
}

// WithOverwrite(true) makes a push into a full ring drop the oldest
// element to make room: pushes never fail, and the ring keeps the newest
// Cap elements (a log of recent samples). By default, and with
// WithOverwrite(false), Push into a full ring returns ErrFull and changes
// nothing, and PushBatch pushes what fits: producers wait, nothing is
// lost.
func WithOverwrite(on bool) RingOption {
	if on {
		return withPolicy(ringOverwriteOldest)
	}
	return withPolicy(ringErrorWhenFull)
}

func withPolicy(p ringPolicy) RingOption { return ringOpt(func(c *ringConfig) { c.policy = p }) }

const (
	ringLine = 64
	// ringStageLines: staging slots by default. 64 lines (4 KiB) let the
	// producer write lines in bursts of 32 with one fence each: small
	// against the 256 pushes of uint64 that fill a burst.
	ringStageLines = 64
	// ringWinLines: the consumer's window. Eight lines are two groups of
	// four interleaved streaming loads; a longer window only adds latency to
	// the refill.
	ringWinLines = 8
	// ringMaxSegment bounds one block (as vmem.Slice does): under the
	// driver's allocation limit, and a shift for the index arithmetic.
	ringMaxSegment = 1 << 30
	// ringParallelMin: a PushBatch run of whole lines this long is split
	// over several cores (several cores' NT stores reach more than one
	// core's: docs/physics.md), in parts of at least half of it: a
	// goroutine costs a small fraction of what 512 KiB of stores take.
	ringParallelMin = 512 << 10
	// ringStoreWorkers: goroutines for one long PushBatch run. Two already
	// reach the link's limit for CPU writes; four leave room for the source
	// reads from the Go heap.
	ringStoreWorkers = 4
	// ringAllChunk: All reads this much per DMA; the DMA's fixed round
	// trip (docs/physics.md) is then small against the transfer.
	ringAllChunk = 16 << 20
)

// Bulk reads (PopBatch) of at least 2*ringDMAPiece bytes are split into
// pieces of ringDMAPiece, read by ringDMAWorkers goroutines at once: a DMA
// has a fixed cost to submit and wait for, and one alone at 16 MiB moves
// well below the link's speed; several in flight keep the copy engine busy
// (docs/ring.md has the figures, BenchmarkRingPopBatch measures
// them), and for a destination outside pinned memory the staging copies of one
// piece run on the CPUs while the next pieces move. Variables, not
// constants, so that a benchmark can tune them on new hardware.
var (
	ringDMAPiece   uint64 = 16 << 20
	ringDMAWorkers        = 3
)

// ringTSO: on these architectures a plain or NT store is never made visible
// before an earlier locked instruction, and loads are not reordered with
// loads of ordinary memory; elsewhere the code adds the barriers.
const ringTSO = runtime.GOARCH == "amd64" || runtime.GOARCH == "386"

// Ring is a fixed-capacity FIFO queue of T in device memory (mapped VRAM on
// a GPU, off-heap memory on the host backend): pushes at the back, pops at
// the front. When full, a push either fails with ErrFull or drops the oldest
// element, as chosen by WithOverwrite.
//
// T must hold no pointers (vmem.ErrPointerType). Push and Pop move single
// elements (whole-line stores and streaming loads); PushBatch, PopBatch and
// All move runs (NT stores in, DMA out) and are the fast paths.
//
// Every Push is visible to the consumer when it returns (see Push).
//
// Concurrency: one goroutine may push while another pops, without locks.
// See docs/ring.md for the memory-ordering argument.
//
// Concurrency, as in the table of docs/guide.md:
//   - at the same time: one producer (Push, PushBatch, Flush) with one consumer (Pop, PopBatch, Peek, All, Save, Err); Len and Stats from any goroutine
//   - alone: Clear, Close; several producers, or several consumers, need the caller's lock around their side
//
// Device loss: Peek, Pop and All panic with an error matching
// vmem.ErrDeviceLost, consuming nothing; PopBatch and Save return the loss.
type Ring[T any] struct {
	// Set by NewRing, then only read (Close sets closed and segs, with no
	// other call running).
	dev       *vmem.Device
	size      uint64 // bytes per element (0 for zero-size T)
	capacity  uint64 // elements the ring holds
	phys      uint64 // physical slots: capacity rounded up to whole lines
	lines     uint64 // lines of the ring: phys*size/64
	ringBytes uint64 // lines*64
	segShift  uint   // a segment holds 1<<segShift lines
	segs      []ringSeg
	wc        bool // the segments are mapped VRAM (access.WC): streaming loads, NT stores, fences
	overwrite bool
	dmaMin    uint64 // bulk reads at least this long go by DMA
	parMin    uint64
	stageMask uint64 // stage bytes - 1
	stageK    uint64 // staging slots
	// stage is the staging ring: stageK lines, line L in slot L mod stageK.
	// The producer writes it; the consumer reads lines not yet durable.
	stage  []uint64
	held   *owner // what the leak backstop frees
	closed bool
	unreg  func() // removes the ring from the device's AtClose list

	_        [128]byte // the words below are written by one side and read by the other
	tail     atomic.Uint64
	durable  atomic.Uint64
	floor    atomic.Uint64
	_        [128 - 24]byte
	head     atomic.Uint64
	announce atomic.Uint64
	_        [128 - 16]byte
	// want has a line of its own: the producer loads it on every push, and
	// the consumer writes it only when it finds the ring empty.
	want atomic.Uint64
	_    [128 - 8]byte

	p ringProducer
	_ [128]byte
	c ringConsumer
	_ [128]byte
}

type ringSeg struct {
	blk  block.Block
	base unsafe.Pointer
}

// ringProducer is the producer's private state.
type ringProducer struct {
	tail     uint64 // elements pushed
	pub      uint64 // elements published: the last tail stored
	served   uint64 // the last want answered by a push that published itself
	headSeen uint64 // a recent r.head: room is certain below it
	floor    uint64 // the last floor stored
	// durable is the last durable stored. Complete lines from durable on
	// wait in staging until half of it is full, then go out in one burst.
	durable uint64
	scratch []byte // one element, for pushes of elements over a line
}

// ringConsumer is the consumer's private state.
type ringConsumer struct {
	head     uint64 // elements consumed (r.head)
	tail     uint64 // a recent r.tail
	wanted   uint64 // the last want stored
	winStart uint64 // stream byte offset of win[0]
	winEnd   uint64 // stream byte offset just past the window's valid bytes
	err      error  // the first error that stopped an All (Err)
	win      [ringWinLines * ringLine / 8]uint64
}

// NewRing makes an empty ring that holds capacity elements of T, in the
// device's mapped tier. It fails with vmem.ErrPointerType when T holds pointers,
// with vmem.ErrOutOfMemory (nothing allocated) when the memory is not there, and
// with vmem.ErrRange for a capacity below 1.
func NewRing[T any](dev *vmem.Device, capacity int, opts ...RingOption) (*Ring[T], error) {
	if err := layout.Check[T](); err != nil {
		return nil, fmt.Errorf("collections: NewRing: %w", err)
	}
	if dev == nil {
		return nil, fmt.Errorf("collections: NewRing: nil device: %w", vmem.ErrNoDevice)
	}
	if capacity < 1 {
		return nil, fmt.Errorf("collections: NewRing: capacity %d: %w", capacity, vmem.ErrRange)
	}
	cfg := ringConfig{stageLines: ringStageLines, parallelMin: ringParallelMin}
	for _, o := range opts {
		if o != nil {
			o.applyRing(&cfg)
		}
	}
	if cfg.policy != ringErrorWhenFull && cfg.policy != ringOverwriteOldest {
		return nil, fmt.Errorf("collections: NewRing: unknown %v: %w", cfg.policy, vmem.ErrRange)
	}
	if cfg.stageLines < 2 || cfg.stageLines&(cfg.stageLines-1) != 0 {
		cfg.stageLines = ringStageLines
	}
	var zero T
	r := &Ring[T]{
		dev:       dev,
		size:      uint64(unsafe.Sizeof(zero)),
		capacity:  uint64(capacity),
		overwrite: cfg.policy == ringOverwriteOldest,
		dmaMin:    uint64(lines.DefaultPlanner().DMAMinBytes),
		parMin:    cfg.parallelMin,
		stageK:    cfg.stageLines,
		stageMask: cfg.stageLines*ringLine - 1,
		held:      newOwner(dev),
	}
	r.phys = r.capacity
	if r.size > 0 {
		// The smallest run of elements that fills whole lines: 64/gcd(s, 64),
		// a power of two.
		period := uint64(ringLine) >> bits.TrailingZeros64(r.size|ringLine)
		r.phys = (r.capacity + period - 1) &^ (period - 1)
		hi, lo := bits.Mul64(r.phys, r.size)
		if hi != 0 || r.phys < r.capacity || lo > 1<<62 {
			return nil, fmt.Errorf("collections: NewRing: %d elements of %d bytes: %w", capacity, r.size, vmem.ErrTooLarge)
		}
		r.ringBytes = lo
		r.lines = lo / ringLine
		if err := r.allocSegments(cfg.segLines); err != nil {
			return nil, fmt.Errorf("collections: NewRing: %w", err)
		}
		r.wc = kdev(dev).View(r.segs[0].blk).Kind == access.WC // every segment is of one tier
		r.stage = make([]uint64, cfg.stageLines*ringLine/8)
	}
	held.Attach(r, r.held)
	r.unreg = lcAtClose(dev, r, (*Ring[T]).Close)
	return r, nil
}

// allocSegments allocates the ring's lines in segments of a power-of-two
// number of lines. On error nothing stays allocated.
func (r *Ring[T]) allocSegments(segLines uint64) error {
	maxBytes := uint64(ringMaxSegment)
	if mb := r.dev.Info().Tiers[vmem.Mapped].MaxBlock; mb > 0 && mb < maxBytes {
		maxBytes = mb
	}
	maxLines := max(maxBytes/ringLine, 1)
	if segLines == 0 || segLines > maxLines {
		segLines = maxLines
	}
	r.segShift = uint(bits.Len64(segLines) - 1)
	n := (r.lines + 1<<r.segShift - 1) >> r.segShift
	segs := make([]ringSeg, 0, n)
	for i := uint64(0); i < n; i++ {
		lines := min(uint64(1)<<r.segShift, r.lines-i<<r.segShift)
		b, err := kdev(r.dev).Alloc(block.Mapped, lines*ringLine, ringLine)
		if err != nil {
			for _, s := range segs {
				kdev(r.dev).Free(s.blk)
			}
			return err
		}
		segs = append(segs, ringSeg{blk: b, base: b.Ptr()})
	}
	r.segs = segs
	for _, s := range segs {
		r.held.Add(s.blk)
	}
	return nil
}

// Len returns the number of published elements in the ring (see Flush). With
// a producer or consumer running at the same time it is a snapshot: at most
// Cap, and right at some instant during the call.
func (r *Ring[T]) Len() int {
	if r.closed {
		return 0
	}
	t := r.tail.Load()
	h := r.head.Load() // after tail: h can only be newer, so t-h <= capacity
	if r.overwrite {
		h = max(h, r.dropFloor(t))
	}
	if h >= t {
		return 0
	}
	return int(t - h)
}

// dropFloor is, in overwrite mode, the oldest element not yet dropped by
// the producer, given a recent tail.
func (r *Ring[T]) dropFloor(t uint64) uint64 {
	lo := r.floor.Load()
	if t > r.capacity {
		lo = max(lo, t-r.capacity)
	}
	return lo
}

// Clear empties the ring. It must not overlap any other call. As every
// container's Clear, it returns vmem.ErrClosed after Close and the device's
// error after a loss, with the ring unchanged.
func (r *Ring[T]) Clear() error {
	if err := r.ringUsable(); err != nil {
		return fmt.Errorf("collections: Ring.Clear: %w", err)
	}
	r.tail.Store(0)
	r.durable.Store(0)
	r.floor.Store(0)
	r.head.Store(0)
	r.announce.Store(0)
	r.want.Store(0)
	r.p = ringProducer{}
	r.c.head, r.c.tail, r.c.winStart, r.c.winEnd, r.c.err = 0, 0, 0, 0, nil
	r.c.wanted = 0
	return nil
}

// Close frees the ring's memory. It is idempotent, and must not overlap any
// other call. The ring is invalid afterwards: Push, PushBatch, PopBatch
// and Clear return vmem.ErrClosed, Pop and Peek panic, Len returns 0.
func (r *Ring[T]) Close() error {
	if r.closed || r.dev == nil {
		return nil
	}
	r.closed = true
	if r.unreg != nil {
		r.unreg()
	}
	var first error
	for _, s := range r.segs {
		if err := kdev(r.dev).Free(s.blk); err != nil && first == nil {
			first = err
		}
	}
	r.segs = nil
	r.held.Exactly()
	return first
}

func (r *Ring[T]) mustOpen() {
	if r.dev == nil {
		zeroUse("Ring")
	}
	if r.closed {
		panic("collections: Ring used after Close")
	}
}

// lineRun returns where global line L lives and how many of the at most
// want lines from L on are contiguous there (up to the segment's end or the
// ring's wrap).
func (r *Ring[T]) lineRun(L, want uint64) (unsafe.Pointer, uint64) {
	pl := L % r.lines
	s := pl >> r.segShift
	first := s << r.segShift
	end := min(first+1<<r.segShift, r.lines)
	return unsafe.Add(r.segs[s].base, (pl-first)*ringLine), min(want, end-pl)
}

// byteRun returns the segment and offset of stream byte g, and how many of
// the at most want bytes from g on are contiguous there.
func (r *Ring[T]) byteRun(g, want uint64) (seg *ringSeg, off, n uint64) {
	pb := g % r.ringBytes
	s := pb >> (r.segShift + 6)
	first := s << (r.segShift + 6)
	end := min(first+1<<(r.segShift+6), r.ringBytes)
	return &r.segs[s], pb - first, min(want, end-pb)
}

// stageBytes views the staging ring as bytes.
func (r *Ring[T]) stageBytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(r.stage))), len(r.stage)*8)
}

// ringBytesOf views n values at p as bytes.
func ringBytesOf[T any](p *T, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), uintptr(n)*unsafe.Sizeof(*p))
}
