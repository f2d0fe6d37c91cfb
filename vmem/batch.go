package vmem

// The plumbing of internal/kern, implemented for a Device: the block
// allocator and transfers the containers of package collections are built
// on, and the batches of GPU commands they run over their blocks
// (Map.GetBatch, Map.PutBatch, BTree.GetBatch), so that collections never
// imports Vulkan and vmem never imports collections. Users never see it;
// internal/kern documents the contract.

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/vk"
)

func init() {
	kern.Register(func(name string, spirv []byte, push any) any {
		if reflect.TypeOf(push).Kind() != reflect.Struct {
			panic("vmem: NewKernel: push must be a struct value")
		}
		k := newKernel(name, push, false)
		k.code = spirv
		return k
	}, func(dev any) kern.Device { return &dev.(*Device).plumb })
}

// devPlumbing is a Device's kern.Device; it lives in the Device so that
// kern.Of allocates nothing.
type devPlumbing struct{ d *Device }

var _ kern.Device = (*devPlumbing)(nil)

func (p *devPlumbing) Alloc(t block.Tier, size, align uint64) (block.Block, error) {
	return p.d.alloc(Tier(t), size, align, false)
}
func (p *devPlumbing) Free(b block.Block) error { return p.d.freeBlock(b) }
func (p *devPlumbing) Read(dst []byte, src block.Block, off uint64) error {
	return p.d.readBlock(dst, src, off)
}
func (p *devPlumbing) Write(dst block.Block, off uint64, src []byte) error {
	return p.d.writeBlock(dst, off, src)
}
func (p *devPlumbing) Copy(dst block.Block, dstOff uint64, src block.Block, srcOff, n uint64) error {
	return p.d.copyBlock(dst, dstOff, src, srcOff, n)
}
func (p *devPlumbing) Fill(dst block.Block, off, n uint64, v byte) error {
	return p.d.fillBlock(dst, off, n, v)
}
func (p *devPlumbing) Trim()                        { p.d.trim() }
func (p *devPlumbing) TraceBlocks()                 { p.d.tracing.Store(true) }
func (p *devPlumbing) LiveBlocks() []kern.LiveBlock { return p.d.liveBlocks() }

func (p *devPlumbing) NewBatch() (kern.Batch, error) {
	kb, err := p.d.newKernelBatch()
	if err != nil {
		return nil, err
	}
	return kb, nil
}
func (p *devPlumbing) KernelsAvailable() bool                     { return p.d.kern() != nil }
func (p *devPlumbing) OnGPU() bool                                { return p.d.backend == BackendVulkan }
func (p *devPlumbing) KernelDispatches() int64                    { return p.d.kernelDispatches() }
func (p *devPlumbing) AtClose(f func()) (cancel func())           { return p.d.atClose(f) }
func (p *devPlumbing) InjectFaults(f kern.Faults)                 { p.d.injectFaults(f) }
func (p *devPlumbing) PendingFaults() kern.Faults                 { return p.d.pendingFaults() }
func (p *devPlumbing) BlockAddr(b block.Block, off uint64) uint64 { return deviceAddr(b, off) }
func (p *devPlumbing) BlockOffset(b block.Block) uint64           { return b.Off }
func (p *devPlumbing) View(b block.Block) access.View             { return p.d.view(b) }

// deviceAddr returns the device address of byte off of b, which kernels
// dereference (GL_EXT_buffer_reference), or 0 where kernels cannot run
// (the host backend).
func deviceAddr(b block.Block, off uint64) uint64 {
	if b.C == nil || b.C.Mem == nil {
		return 0
	}
	return kaddr(b, off)
}

// kernelBatch is a kern.Batch: the commands of one operation of a
// container, recorded, then submitted as one command buffer.
type kernelBatch struct {
	d      *Device
	k      *kernState
	b      *kernBatch
	held   []kernHeld
	open   bool
	flight *flight // started and not yet waited for
	copyQ  bool
}

type kernHeld struct {
	kind int
	m    *vk.Memory
}

// newKernelBatch starts a batch on d. It fails with errKernUnavailable
// where kernels cannot run, or with ErrClosed or ErrDeviceLost. The device
// stays open until Close.
func (d *Device) newKernelBatch() (*kernelBatch, error) {
	k := d.kern()
	if k == nil {
		if err := d.enter(); err != nil {
			return nil, err
		}
		d.exit()
		return nil, errKernUnavailable
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	return &kernelBatch{d: d, k: k, b: d.newKernBatch(k), open: true}, nil
}

// Staging returns size bytes of pinned host memory, kept until Close. Its
// contents are not zeroed.
func (kb *kernelBatch) Staging(size uint64) (kern.Staging, error) {
	m, err := kb.take(kernScratchHost, size)
	if err != nil {
		return kern.Staging{}, err
	}
	return kern.Staging{Ptr: m.Ptr, Addr: m.Addr, Size: size, Mem: m}, nil
}

// Scratch returns the device address of size bytes of device-local
// memory (the private tier's memory type where there is one), kept until
// Close. Its contents are not zeroed.
func (kb *kernelBatch) Scratch(size uint64) (uint64, error) {
	m, err := kb.take(kernScratchDevice, size)
	if err != nil {
		return 0, err
	}
	return m.Addr, nil
}

func (kb *kernelBatch) take(kind int, size uint64) (*vk.Memory, error) {
	if !kb.open {
		return nil, ErrClosed
	}
	m, err := kb.d.kernTakeScratch(kind, max(size, 64))
	if err != nil {
		return nil, err
	}
	kb.held = append(kb.held, kernHeld{kind, m})
	return m, nil
}

// Dispatch records kn over items items (grid-stride: workgroups of 256,
// as many as items need up to the device's limit) with push constants
// *push, which must be a pointer to kn's push struct.
func (kb *kernelBatch) Dispatch(kn *kern.Kernel, items uint64, push any) {
	kb.dispatchGroups(kn, kb.k.groups(items), push)
}

// dispatchGroups is Dispatch with an explicit workgroup count.
func (kb *kernelBatch) dispatchGroups(kn *kern.Kernel, groups uint32, push any) {
	k := kn.Impl.(*kernel)
	v := reflect.ValueOf(push)
	if v.Kind() != reflect.Pointer || v.Elem().Type() != k.pushType {
		panic(fmt.Sprintf("vmem: kernel %s takes a *%v, not a %T", k.name, k.pushType, push))
	}
	kb.b.dispatch(k, max(groups, 1), unsafe.Slice((*byte)(v.UnsafePointer()), k.push))
}

// Barrier makes the writes of every command before it visible to every
// command after it.
func (kb *kernelBatch) Barrier() { kb.b.barrier() }

// CopyBlock records a copy of n bytes from src at srcOff to dst at dstOff
// (any tiers of kb's device).
func (kb *kernelBatch) CopyBlock(dst block.Block, dstOff uint64, src block.Block, srcOff, n uint64) {
	kb.b.copy(dst.C.Mem, dst.Off+dstOff, src.C.Mem, src.Off+srcOff, n)
}

// Upload records a copy of n bytes from staging memory at srcOff to the
// scratch buffer at device address dst.
func (kb *kernelBatch) Upload(dst uint64, src kern.Staging, srcOff, n uint64) {
	m, off := kb.scratchAt(dst)
	kb.b.copy(m, off, src.Mem.(*vk.Memory), srcOff, n)
}

// CopyTo records a copy of n bytes from the scratch buffer at device
// address src to staging memory at dstOff.
func (kb *kernelBatch) CopyTo(dst kern.Staging, dstOff uint64, src uint64, n uint64) {
	m, off := kb.scratchAt(src)
	kb.b.copy(dst.Mem.(*vk.Memory), dstOff, m, off, n)
}

// scratchAt finds the held buffer that holds device address a.
func (kb *kernelBatch) scratchAt(a uint64) (*vk.Memory, uint64) {
	for _, h := range kb.held {
		if a >= h.m.Addr && a < h.m.Addr+h.m.Size {
			return h.m, a - h.m.Addr
		}
	}
	panic("vmem: kernel batch: address is not a buffer of this batch")
}

// UseCopyQueues makes every later Run and Start submit the copies recorded
// before the first dispatch and after the last one on the device's copy
// engines (where it has a queue family of its own for them, with two
// queues), ordered against the dispatches by semaphores. Operations that
// Start round after round of upload, kernel and download gain: one
// round's upload and another's download run beside a third's kernels,
// where one queue runs them one after the other. A batch with only one
// round trip gains nothing and pays two more submissions. VMEM_COPY_QUEUES
// turns this off (0), or on for devices without copy engines (1: the
// three submissions on the one queue, for tests).
func (kb *kernelBatch) UseCopyQueues() { kb.copyQ = true }

// Run submits what was recorded since the last Run as one command buffer
// and waits for it. The batch can then record more. A failed submission
// returns ErrDeviceLost (every later call fails too); ErrNoKernels means a
// pipeline could not be built and nothing was submitted.
func (kb *kernelBatch) Run() error {
	fl, err := kb.Start()
	if err != nil {
		return err
	}
	return fl.Wait()
}

// Start submits the commands recorded since the last Run or Start, as Run
// does, and returns without waiting: the CPU works while the device runs
// them, and the Flight's Wait ends the run. The caller that drives several
// devices submits to each from one goroutine, which no busy core can hold
// back (a goroutine started per device waits for a free core before its
// submit). Run, Start and Close wait for a flight not yet waited for.
func (kb *kernelBatch) Start() (kern.Flight, error) {
	if !kb.open {
		return nil, ErrClosed
	}
	kb.settle()
	b := kb.b
	b.copyQueues = kb.copyQ
	kb.b = kb.d.newKernBatch(kb.k)
	fl := &flight{kb: kb}
	if len(b.ops) == 0 && b.err == nil {
		fl.done = true
		return fl, nil
	}
	f, err := kb.d.kernSubmit(b)
	if err != nil {
		return nil, err
	}
	fl.f, kb.flight = f, fl
	return fl, nil
}

// flight is a kernelBatch's run in progress (Start): a kern.Flight.
type flight struct {
	kb   *kernelBatch
	f    *kernFlight
	err  error
	done bool
}

// Wait waits for the run's commands to complete and returns Run's error
// for them; later calls return the same.
func (fl *flight) Wait() error {
	if fl.done {
		return fl.err
	}
	fl.done = true
	fl.err = fl.f.wait()
	if fl.kb.flight == fl {
		fl.kb.flight = nil
	}
	return fl.err
}

// settle waits for a flight left unwaited, whose memory the next commands
// (or Close) may reuse; its error stays with the Flight.
func (kb *kernelBatch) settle() {
	if kb.flight != nil {
		kb.flight.Wait()
	}
}

// Close returns the batch's staging and scratch memory and releases the
// device. It is idempotent.
func (kb *kernelBatch) Close() {
	if !kb.open {
		return
	}
	kb.settle()
	kb.open = false
	for _, h := range kb.held {
		kb.d.kernPutScratch(h.kind, h.m)
	}
	kb.held = nil
	kb.d.exit()
}

// kernelDispatches returns how many kernel dispatches d has completed,
// for tests and diagnostics.
func (d *Device) kernelDispatches() int64 {
	if d.vk == nil {
		return 0
	}
	return d.vk.kern.dispatches.Load()
}
