package vmem

// GPU compute kernels: how vmem runs the SPIR-V of package shaders.
//
// Why kernels: data in VRAM sits next to a processor that moves TB/s,
// while the CPU reaches it orders of magnitude more slowly and each GPU
// round trip has a fixed cost (docs/physics.md). Whole-slice passes (sort,
// fill, sum) and scattered reads (gather) therefore run as kernels, and
// each operation is recorded into one command buffer so that it pays one
// round trip (a sort two), not one per step.
//
// How kernels reach memory: through buffer device addresses (Vulkan 1.2).
// Every chunk's VkBuffer has a 64-bit address (vk.Memory.Addr), a block is
// that address plus its offset, and kernels take addresses in push
// constants. No descriptor sets are bound, so one dispatch can touch any
// number of blocks in any chunks (a gather across segments, say), and the
// descriptor range limit (maxStorageBufferRange, 128 MiB on lavapipe) does
// not apply. Devices without buffer device addresses or 64-bit shader
// integers run none of this: every operation has a CPU path.
//
// Where they run: on the compute queue, each operation as a kernBatch of
// ops (dispatches, copies, inline updates) separated by barriers, submitted
// on a compute stream and waited for by polling, like DMA on the transfer
// queue. Pipelines are made on first use and kept until Close.
//
// Adding a kernel (a container's kernel lives beside its container
// instead, e.g. collections/internal/shaders, and is declared with kern.NewKernel
// and its SPIR-V):
//
//  1. Write internal/shaders/<name>.comp (#include "common.glsl" for the
//     address helpers and the workgroup size); declare its push constants
//     with every 64-bit field before the 32-bit ones, so that a Go struct of
//     the same fields has the same layout.
//  2. Run go generate ./internal/shaders and commit the .spv.
//  3. Declare the push struct here and var kernFoo = newKernel("name",
//     kernFooPush{}, needsFloat64); TestKernelPushLayouts checks the struct
//     against the SPIR-V's push-constant block.
//  4. Take k := d.kern() (nil: no kernels here, use the CPU path), build a
//     kernBatch with d.newKernBatch(k), add dispatch/barrier/copy ops, and
//     d.kernRun it (or kernSubmit and wait, to overlap CPU work). Blocks give their addresses with kaddr;
//     temporary buffers come from kernTakeScratch (or Alloc, to count against
//     the tier's limits).
//
// Scratch memory: temporary buffers (staging for gathers and batches, sum
// partials, the sort's key arrays) are raw allocations kept for reuse per
// device (kernScratchKept of at most kernScratchKeep bytes per kind, and
// one larger device-local buffer), so that a batch does not allocate and
// zero fresh memory each time. They are not counted in Stats; an
// allocation that finds VRAM full, Trim and Close free them. A sort whose
// arrays the kept buffer cannot hold takes ordinary blocks.

import (
	"fmt"
	"math/bits"
	"os"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/shaders"
	"github.com/govram/govram/internal/vk"
)

// kernWG is every kernel's workgroup size (WG in common.glsl).
const kernWG = 256

// kernel is one compute kernel: of internal/shaders, or of another
// package that gives its SPIR-V (kern.NewKernel).
type kernel struct {
	name     string       // internal/shaders/<name>.spv unless code is set
	code     []byte       // the SPIR-V of a kernel declared by another package
	push     uint32       // bytes of push constants
	pushType reflect.Type // the Go struct that mirrors them
	f64      bool         // needs shaderFloat64
	id       int          // index into kernState.pipes
}

var kernList []*kernel

// spirv returns the kernel's SPIR-V.
func (kn *kernel) spirv() ([]byte, error) {
	if kn.code != nil {
		return kn.code, nil
	}
	return shaders.FS.ReadFile(kn.name + ".spv")
}

// newKernel declares a kernel; push is a zero value of its push-constant
// struct (a test checks it against the SPIR-V's block, member by member).
func newKernel(name string, push any, f64 bool) *kernel {
	pt := reflect.TypeOf(push)
	if pt.Size()%4 != 0 || pt.Size() > 128 {
		panic("vmem: kernel " + name + ": push constants must be a multiple of 4 bytes, at most 128")
	}
	k := &kernel{name: name, push: uint32(pt.Size()), pushType: pt, f64: f64, id: len(kernList)}
	kernList = append(kernList, k)
	return k
}

// Push-constant blocks. Each mirrors its kernel's layout(push_constant)
// block (std430, 64-bit fields first), so the Go layout is the GLSL one.
type (
	kernFillPush struct {
		dst       uint64
		n, period uint32
	}
	kernGatherPush struct {
		addrs, dst     uint64
		n, esize, mode uint32
		_              uint32
	}
	kernSortKeysPush struct {
		src, keys, vals, bits                                 uint64
		n, first, perLine, group, stride, field, kbytes, kind uint32
	}
	kernSortHistPush struct {
		keys, hist          uint64
		n, tiles, shift, kw uint32
	}
	kernScanPush struct {
		data, part uint64
		n, phase   uint32
	}
	kernSortScatterPush struct {
		kin, kout, vin, vout, hist uint64
		n, tiles, shift, kw        uint32
	}
	kernSortStorePush struct {
		keys, dst             uint64
		n, first, esize, kind uint32
	}
	kernSortPermutePush struct {
		src, perm, dst, segBytes                       uint64
		n, first, words, perLine, group, stride, shift uint32
		_                                              uint32
	}
	kernReducePush struct {
		src, dst      uint64
		n, kind, slot uint32
		_             uint32
	}
)

var (
	kernFill        = newKernel("fill", kernFillPush{}, false)
	kernGather      = newKernel("gather", kernGatherPush{}, false)
	kernSortKeys    = newKernel("sort_keys", kernSortKeysPush{}, false)
	kernSortHist    = newKernel("sort_hist", kernSortHistPush{}, false)
	kernScan        = newKernel("scan", kernScanPush{}, false)
	kernSortScatter = newKernel("sort_scatter", kernSortScatterPush{}, false)
	kernSortStore   = newKernel("sort_store", kernSortStorePush{}, false)
	kernSortPermute = newKernel("sort_permute", kernSortPermutePush{}, false)
	kernReduce      = newKernel("reduce", kernReducePush{}, false)
	kernReduceF64   = newKernel("reduce_f64", kernReducePush{}, true)
)

// envKernels is the environment variable that, set to 0, keeps every
// operation on its CPU path (for comparisons and for ruling kernels out).
const envKernels = "VMEM_KERNELS"

// envCopyQueues, set to 0, keeps each kernel batch on the compute queue
// alone instead of moving its leading and trailing copies to the copy
// engines' queues (for comparisons). Set to 1 on a device without copy
// engines of their own (lavapipe), it submits the three parts all the same,
// one after the other on the compute queue, so that tests run that path.
const envCopyQueues = "VMEM_COPY_QUEUES"

// kernState is a device's kernel machinery: lazily made pipelines, idle
// compute streams, and kept scratch buffers.
type kernState struct {
	once      sync.Once
	err       error // why kernels cannot run; nil when they can
	f64       bool
	maxGroups uint32

	mu    sync.Mutex
	pipes []*vk.Pipeline
	idle  [3][]*vk.Stream // idle streams by queue slot
	sems  []*vk.Semaphore // idle (unsignalled) semaphores
	// copyQueues: a batch's leading and trailing copies go to the copy
	// engines' queues, ordered against its kernels by semaphores; chain
	// holds the queue slots of the three parts.
	copyQueues bool
	chain      [3]int
	scratch    [2][]*vk.Memory
	big        *vk.Memory // one kept device-local buffer larger than kernScratchKeep

	dispatches atomic.Int64 // dispatches submitted, for tests
}

// Scratch kinds.
const (
	kernScratchHost   = iota // host-visible, mapped: the CPU fills or reads it, kernels reach it over the bus
	kernScratchDevice        // device-local: kernels only
)

// Kept scratch: up to kernScratchKept buffers of at most kernScratchKeep
// bytes per kind (the largest are kept: a batch's buffers are reused by the
// next batch, not pushed out by small ones), and one larger device-local
// buffer (a sort's), which goes back to the driver when an allocation finds
// VRAM full (kernDropScratch) or at Trim.
const (
	kernScratchKeep = 64 << 20
	kernScratchKept = 4
)

// errKernUnavailable (kern.ErrNoKernels) is returned by kernel paths on devices that cannot run
// them, or when a kernel's pipeline cannot be made (before anything was
// submitted); callers then take their CPU path.
var errKernUnavailable = kern.ErrNoKernels

// kern returns the device's kernel state, or nil when kernels cannot run
// (host backend, missing features, VMEM_KERNELS=0).
func (d *Device) kern() *kernState {
	if d.vk == nil {
		return nil
	}
	k := &d.vk.kern
	k.once.Do(func() { k.init(d) })
	if k.err != nil {
		return nil
	}
	return k
}

func (k *kernState) init(d *Device) {
	c := &d.vk.pd.Compute
	switch {
	case os.Getenv(envKernels) == "0":
		k.err = fmt.Errorf("%w: %s=0", errKernUnavailable, envKernels)
	case !d.vk.dev.Kernels:
		k.err = fmt.Errorf("%w: no buffer device addresses or 64-bit shader integers", errKernUnavailable)
	case c.MaxSharedMemory < 16<<10:
		k.err = fmt.Errorf("%w: %d bytes of shared memory", errKernUnavailable, c.MaxSharedMemory)
	}
	dev, env := d.vk.dev, os.Getenv(envCopyQueues)
	switch {
	case env == "0":
	case dev.TransferOnly(vk.QueueIndexTransfer) && dev.TransferOnly(vk.QueueIndexTransfer2):
		k.copyQueues = true
		k.chain = [3]int{vk.QueueIndexTransfer, vk.QueueIndexCompute, vk.QueueIndexTransfer2}
	case env == "1":
		k.copyQueues = true
		k.chain = [3]int{vk.QueueIndexCompute, vk.QueueIndexCompute, vk.QueueIndexCompute}
	}
	k.f64 = c.ShaderFloat64
	k.maxGroups = min(65535, max(c.MaxGroupCount[0], 1))
	k.pipes = make([]*vk.Pipeline, len(kernList))
}

// close frees what the kernels hold; the device is idle (Close holds it).
func (k *kernState) close(dev *vk.Device) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, p := range k.pipes {
		if p != nil {
			dev.DestroyPipeline(p)
			k.pipes[i] = nil
		}
	}
	for q := range k.idle {
		for _, s := range k.idle[q] {
			s.Destroy()
		}
		k.idle[q] = nil
	}
	for _, m := range k.sems {
		m.Destroy()
	}
	k.sems = nil
	for kind := range k.scratch {
		for _, m := range k.scratch[kind] {
			dev.Free(m)
		}
		k.scratch[kind] = nil
	}
	if k.big != nil {
		dev.Free(k.big)
		k.big = nil
	}
}

// groups is the workgroup count for a grid-stride kernel over items items.
func (k *kernState) groups(items uint64) uint32 {
	g := (items + kernWG - 1) / kernWG
	return uint32(max(min(g, uint64(k.maxGroups)), 1))
}

// kernPipeline returns kn's pipeline, making it on first use.
func (d *Device) kernPipeline(kn *kernel) (*vk.Pipeline, error) {
	k := &d.vk.kern
	k.mu.Lock()
	defer k.mu.Unlock()
	if kn.id >= len(k.pipes) {
		// A kernel declared (NewKernel) after the device's first kernel.
		k.pipes = append(k.pipes, make([]*vk.Pipeline, len(kernList)-len(k.pipes))...)
	}
	if p := k.pipes[kn.id]; p != nil {
		return p, nil
	}
	if kn.f64 && !k.f64 {
		return nil, fmt.Errorf("%w: kernel %s needs shaderFloat64", errKernUnavailable, kn.name)
	}
	code, err := kn.spirv()
	if err != nil {
		return nil, fmt.Errorf("%w: kernel %s: %v", errKernUnavailable, kn.name, err)
	}
	if err := kernCheckPush(kn.name, kn.pushType, kn.push, code); err != nil {
		// The Go struct and the shader disagree: a broken build.
		panic("vmem: kernel " + err.Error())
	}
	p, err := d.vk.dev.NewPipeline(code, kn.push, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: kernel %s: %v", errKernUnavailable, kn.name, wrapVk(err))
	}
	k.pipes[kn.id] = p
	return p, nil
}

func (k *kernState) stream(dev *vk.Device, q int) (*vk.Stream, error) {
	k.mu.Lock()
	if n := len(k.idle[q]); n > 0 {
		s := k.idle[q][n-1]
		k.idle[q] = k.idle[q][:n-1]
		k.mu.Unlock()
		return s, nil
	}
	k.mu.Unlock()
	s, err := dev.NewStream(q)
	if err != nil {
		return nil, wrapVk(err)
	}
	return s, nil
}

func (k *kernState) putStream(s *vk.Stream) {
	k.mu.Lock()
	defer k.mu.Unlock()
	q := s.Queue()
	if len(k.idle[q]) < maxLanes {
		k.idle[q] = append(k.idle[q], s)
		return
	}
	s.Destroy()
}

func (k *kernState) sem(dev *vk.Device) (*vk.Semaphore, error) {
	k.mu.Lock()
	if n := len(k.sems); n > 0 {
		m := k.sems[n-1]
		k.sems = k.sems[:n-1]
		k.mu.Unlock()
		return m, nil
	}
	k.mu.Unlock()
	m, err := dev.NewSemaphore()
	if err != nil {
		return nil, wrapVk(err)
	}
	return m, nil
}

// putSem keeps m for reuse; it must be unsignalled (its wait has run).
func (k *kernState) putSem(m *vk.Semaphore) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.sems) < 4*maxLanes {
		k.sems = append(k.sems, m)
		return
	}
	m.Destroy()
}

// kernTakeScratch returns a raw buffer of at least size bytes of the kind,
// kept from an earlier operation or new. The caller holds d.enter(); give
// the buffer back with kernPutScratch.
func (d *Device) kernTakeScratch(kind int, size uint64) (*vk.Memory, error) {
	k := &d.vk.kern
	k.mu.Lock()
	best := -1
	for i, m := range k.scratch[kind] {
		if m.Size >= size && (best < 0 || m.Size < k.scratch[kind][best].Size) {
			best = i
		}
	}
	if best >= 0 {
		m := k.scratch[kind][best]
		k.scratch[kind] = append(k.scratch[kind][:best], k.scratch[kind][best+1:]...)
		k.mu.Unlock()
		return m, nil
	}
	if kind == kernScratchDevice && k.big != nil && k.big.Size >= size {
		m := k.big
		k.big = nil
		k.mu.Unlock()
		return m, nil
	}
	k.mu.Unlock()
	// Powers of two from 1 MiB, so that kept buffers fit the next request.
	alloc := max(uint64(1)<<bits.Len64(max(size, 1)-1), 1<<20)
	if alloc > kernScratchKeep {
		alloc = roundUp(size, chunkGranule)
	}
	typ := d.vk.stype
	if kind == kernScratchDevice {
		typ = d.tiers[Private].memType
		if typ < 0 {
			typ = d.tiers[Mapped].memType
		}
	}
	m, err := d.vk.dev.Allocate(typ, alloc, kind == kernScratchHost)
	if err != nil && d.kernDropScratch() {
		m, err = d.vk.dev.Allocate(typ, alloc, kind == kernScratchHost)
	}
	if err != nil {
		return nil, wrapVk(err)
	}
	return m, nil
}

// kernDropScratch gives every kept scratch buffer back to the driver and
// reports whether there was any. Allocations call it when the driver is
// out of memory, then try again.
func (d *Device) kernDropScratch() bool {
	if d.vk == nil {
		return false
	}
	k := &d.vk.kern
	k.mu.Lock()
	var drop []*vk.Memory
	for kind := range k.scratch {
		drop = append(drop, k.scratch[kind]...)
		k.scratch[kind] = nil
	}
	if k.big != nil {
		drop = append(drop, k.big)
		k.big = nil
	}
	k.mu.Unlock()
	for _, m := range drop {
		d.vkFree(m)
	}
	return len(drop) > 0
}

func (d *Device) kernPutScratch(kind int, m *vk.Memory) {
	if m == nil {
		return
	}
	k := &d.vk.kern
	k.mu.Lock()
	var drop *vk.Memory
	switch {
	case m.Size <= kernScratchKeep:
		k.scratch[kind] = append(k.scratch[kind], m)
		if l := k.scratch[kind]; len(l) > kernScratchKept {
			small := 0
			for i := range l {
				if l[i].Size < l[small].Size {
					small = i
				}
			}
			drop = l[small]
			k.scratch[kind] = append(l[:small], l[small+1:]...)
		}
	case kind == kernScratchDevice:
		drop, k.big = k.big, m
	default:
		drop = m
	}
	k.mu.Unlock()
	if drop != nil {
		d.vkFree(drop)
	}
}

// kaddr is the device address of byte off of b, for kernels.
func kaddr(b block.Block, off uint64) uint64 { return b.C.Mem.Addr + b.Off + off }

// kernBatch is the commands of one operation, submitted together on the
// compute queue: one round trip however many steps.
type kernBatch struct {
	d    *Device
	k    *kernState
	ops  []vk.Op
	data []byte // push constants and inline updates
	n    int    // dispatches
	err  error  // the first error met while recording
	// volume is the bytes the batch works through, which bounds its wait
	// (waitBound): copies count their size, dispatches a nominal 8 bytes
	// an invocation, and operations that loop inside their kernels add
	// what they touch with work.
	volume uint64
	// copyQueues: submit the leading and trailing copies on the copy
	// engines' queues where the device has them (kernSubmitChain).
	copyQueues bool
}

func (d *Device) newKernBatch(k *kernState) *kernBatch { return &kernBatch{d: d, k: k} }

// dispatch runs kn over groups workgroups with push constants push (the
// bytes of kn's push struct).
func (b *kernBatch) dispatch(kn *kernel, groups uint32, push []byte) {
	if b.err != nil {
		return
	}
	if len(push) != int(kn.push) {
		panic(fmt.Sprintf("vmem: kernel %s takes %d bytes of push constants, not %d", kn.name, kn.push, len(push)))
	}
	p, err := b.d.kernPipeline(kn)
	if err != nil {
		b.err = err
		return
	}
	off := b.put(push)
	b.ops = append(b.ops, vk.Op{Kind: vk.OpDispatch, Pipeline: p, Groups: [3]uint32{groups, 1, 1},
		DataOff: off, Size: uint64(len(push))})
	b.n++
	b.work(uint64(groups) * kernWG * 8)
}

// work adds n bytes to the batch's volume.
func (b *kernBatch) work(n uint64) { b.volume = satAdd(b.volume, n) }

// put appends p to the batch's data at an 8-byte boundary.
func (b *kernBatch) put(p []byte) uint64 {
	for len(b.data)%8 != 0 {
		b.data = append(b.data, 0)
	}
	off := uint64(len(b.data))
	b.data = append(b.data, p...)
	return off
}

// barrier makes the writes of every op before it visible to every op after.
func (b *kernBatch) barrier() { b.ops = append(b.ops, vk.Op{Kind: vk.OpBarrier}) }

// copy copies n bytes between raw buffers (chunk memory or scratch).
func (b *kernBatch) copy(dst *vk.Memory, dstOff uint64, src *vk.Memory, srcOff, n uint64) {
	if n > 0 {
		b.ops = append(b.ops, vk.Op{Kind: vk.OpCopy, Src: src, SrcOff: srcOff, Dst: dst, DstOff: dstOff, Size: n})
		b.work(n)
	}
}

// update writes p (at most vk.MaxUpdate bytes, a multiple of 4) into dst at
// off from the command buffer itself.
func (b *kernBatch) update(dst *vk.Memory, off uint64, p []byte) {
	b.ops = append(b.ops, vk.Op{Kind: vk.OpUpdate, Dst: dst, DstOff: off, Size: uint64(len(p)), DataOff: b.put(p)})
}

// kernRun submits the batch on a compute stream and waits for it.
func (d *Device) kernRun(b *kernBatch) error {
	if b.err != nil {
		return b.err
	}
	if len(b.ops) == 0 {
		return nil
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	return d.kernRunHeld(b)
}

// kernRunHeld is kernRun for a caller that holds d.enter() (to take scratch
// memory, which must not happen on a closed device).
func (d *Device) kernRunHeld(b *kernBatch) error {
	if len(b.ops) == 0 && b.err == nil {
		return nil
	}
	f, err := d.kernSubmit(b)
	if err != nil {
		return err
	}
	return f.wait()
}

// kernFlight is a submitted batch; wait for it exactly once.
type kernFlight struct {
	d    *Device
	k    *kernState
	s    []*vk.Stream // one, or the copy-in, kernel and copy-out streams
	sems []*vk.Semaphore
	n    int
	// volume: the batch's, for the wait bound.
	volume uint64
}

// kernSubmit submits the batch without waiting, so that the CPU can work
// meanwhile (the gather pipeline). The caller holds d.enter() until the
// flight is waited for.
func (d *Device) kernSubmit(b *kernBatch) (*kernFlight, error) {
	if b.err != nil {
		return nil, b.err
	}
	// A lost device stays lost for a batch opened before the loss too.
	if err := d.Err(); err != nil {
		return nil, err
	}
	if b.copyQueues && b.k.copyQueues {
		if in, mid, out, ok := kernSplitCopies(b.ops); ok {
			return d.kernSubmitChain(b, in, mid, out)
		}
	}
	if err := d.faults.submit(); err != nil {
		return nil, d.noteErr(err)
	}
	s, err := b.k.stream(d.vk.dev, vk.QueueIndexCompute)
	if err != nil {
		return nil, d.noteErr(err)
	}
	if err := s.Submit(b.ops, b.data); err != nil {
		b.k.putStream(s)
		return nil, d.gpuErr(err, b.volume)
	}
	return &kernFlight{d: d, k: b.k, s: []*vk.Stream{s}, n: b.n, volume: b.volume}, nil
}

// kernSplitCopies cuts ops into the copies before the first dispatch, the
// kernels, and the copies after the last one (barriers between them
// dropped: semaphores order the parts). ok is false where there are no
// dispatches, or no copies around them to move, or the leading or
// trailing part holds anything but copies and barriers.
func kernSplitCopies(ops []vk.Op) (in, mid, out []vk.Op, ok bool) {
	first, last := -1, -1
	for i, o := range ops {
		if o.Kind == vk.OpDispatch {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil, nil, nil, false
	}
	lo, hi := first, last+1
	for lo > 0 && ops[lo-1].Kind == vk.OpBarrier {
		lo--
	}
	for hi < len(ops) && ops[hi].Kind == vk.OpBarrier {
		hi++
	}
	copies := func(part []vk.Op) bool {
		for _, o := range part {
			if o.Kind != vk.OpCopy && o.Kind != vk.OpBarrier {
				return false
			}
		}
		return true
	}
	in, mid, out = ops[:lo], ops[lo:hi], ops[hi:]
	if !copies(in) || !copies(out) || len(in)+len(out) == 0 {
		return nil, nil, nil, false
	}
	return in, mid, out, true
}

// kernSubmitChain submits a batch as up to three submissions: its leading
// copies on one copy-engine queue, its kernels on the compute queue, its
// trailing copies on the other copy-engine queue, each waiting for the
// one before by a semaphore. Consecutive batches then overlap: one's
// upload, another's kernels and a third's download run at once, on
// engines that a single queue would use one after the other.
func (d *Device) kernSubmitChain(b *kernBatch, in, mid, out []vk.Op) (*kernFlight, error) {
	k, dev := b.k, d.vk.dev
	f := &kernFlight{d: d, k: k, n: b.n, volume: b.volume}
	type part struct {
		q   int
		ops []vk.Op
	}
	parts := [3]part{{k.chain[0], in}, {k.chain[1], mid}, {k.chain[2], out}}
	// fail waits for the parts already submitted (they still run) and
	// drops the semaphores, whose signals nothing will wait for now.
	fail := func(err error) (*kernFlight, error) {
		// Semaphores signalled for a part never submitted cannot be kept.
		f.settle(nil, false)
		return nil, d.noteErr(err)
	}
	var wait *vk.Semaphore
	var waitStage uint32
	for i, p := range parts {
		if len(p.ops) == 0 {
			continue
		}
		// Each part is a submission of its own, for injected faults too.
		if err := d.faults.submit(); err != nil {
			return fail(err)
		}
		s, err := k.stream(dev, p.q)
		if err != nil {
			return fail(err)
		}
		var signal *vk.Semaphore
		if i < 2 && (i == 0 || len(out) > 0) {
			if signal, err = k.sem(dev); err != nil {
				k.putStream(s)
				return fail(err)
			}
		}
		if err := s.SubmitWith(p.ops, b.data, wait, waitStage, signal); err != nil {
			k.putStream(s)
			if signal != nil {
				k.putSem(signal)
			}
			return fail(d.gpuErr(err, b.volume))
		}
		f.s = append(f.s, s)
		if signal != nil {
			f.sems = append(f.sems, signal)
		}
		wait, waitStage = signal, vk.StageTransfer|vk.StageCompute
		if i == 1 {
			waitStage = vk.StageTransfer
		}
	}
	return f, nil
}

func (f *kernFlight) wait() error {
	var err error
	f.settle(&err, true)
	if err == nil {
		f.k.dispatches.Add(int64(f.n))
	}
	return f.d.gpuErr(err, f.volume)
}

// settle waits for the flight's streams and returns them and its
// semaphores to their pools; the first wait error goes to *errp (nil:
// ignored); semaphores are kept only if keepSems and every wait succeeded.
// Where a wait timed out, the streams and semaphores are parked
// until the work ends (stall.go), since they cannot be reused before.
func (f *kernFlight) settle(errp *error, keepSems bool) {
	var err error
	stuck := false
	for _, s := range f.s {
		e := s.Wait(f.d.waitNs(f.volume))
		stuck = stuck || isTimeout(e)
		if err == nil {
			err = e
		}
	}
	if errp != nil {
		*errp = err
	}
	release := func() {
		for _, s := range f.s {
			f.k.putStream(s)
		}
		for _, m := range f.sems {
			if err == nil && keepSems {
				f.k.putSem(m)
			} else {
				m.Destroy()
			}
		}
	}
	if stuck {
		f.d.park(f.s, release)
		return
	}
	release()
}
