package vmem

// Kernel batches for govram's containers.
//
// The containers of package collections keep their slots in Blocks of a
// Device; their batch operations (Map.GetBatch, Map.PutBatch,
// BTree.GetBatch) run kernels of package shaders over those Blocks. This
// file is the small exported surface they use, so that collections never
// imports Vulkan and vmem never imports collections:
//
//	var myKernel = vmem.NewKernel("my_kernel", myPush{}) // package level
//
//	kb, err := dev.NewKernelBatch()  // vmem.ErrNoKernels: take the CPU path
//	defer kb.Close()
//	in, _ := kb.Staging(n * 8)       // pinned host memory: CPU pointer + device address
//	// ... the CPU fills in.Ptr ...
//	tmp, _ := kb.Scratch(n * 4)      // device-local scratch
//	kb.Dispatch(myKernel, n, &myPush{keys: in.Addr, out: tmp, table: blk.DeviceAddr(0)})
//	kb.Barrier()
//	kb.CopyTo(out, 0, tmp, n*4)      // device to pinned host memory
//	err = kb.Run()                   // one submission, one fence wait
//
// Everything recorded between two Runs is one command buffer: one round
// trip (docs/physics.md) however many uploads, dispatches and copies.
// Staging and scratch buffers stay valid until Close, across Runs, so an
// operation of several round trips (look up, decide on the CPU, apply)
// keeps its uploaded keys on the device.
//
// These calls are for govram's own packages; their contract is the same
// as the unexported plumbing described in kernel.go.

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/govram/govram/internal/vk"
)

// ErrNoKernels is returned by NewKernelBatch (and by Run, when a kernel's
// pipeline cannot be built before anything was submitted) on devices that
// run no compute kernels: the host backend, VMEM_KERNELS=0, a device
// without buffer device addresses. The caller then takes its CPU path.
var ErrNoKernels = errKernUnavailable

// Kernel is a compute kernel of package shaders declared by another
// govram package. Create it with NewKernel in a package-level variable.
type Kernel struct{ k *kernel }

// NewKernel declares the kernel shaders/<name>.spv whose push constants
// are the fields of the struct push (a zero value), laid out as the
// shader's push-constant block (std430, 64-bit fields first). The first
// use of the kernel on a device checks the struct against the SPIR-V's
// block, member by member, and panics on a difference (a broken build,
// not a runtime condition). Call it only during package initialisation.
func NewKernel(name string, push any) *Kernel {
	if reflect.TypeOf(push).Kind() != reflect.Struct {
		panic("vmem: NewKernel: push must be a struct value")
	}
	return &Kernel{k: newKernel(name, push, false)}
}

// DeviceAddr returns the device address of byte off of b, which kernels
// dereference (GL_EXT_buffer_reference), or 0 where kernels cannot run
// (the host backend).
func (b Block) DeviceAddr(off uint64) uint64 {
	if b.c == nil || b.c.mem == nil {
		return 0
	}
	return b.kaddr(off)
}

// KernelBatch records the commands of one operation of a container:
// uploads, dispatches, copies. Run submits them as one command buffer and
// waits once. A KernelBatch is used by one goroutine; Close it.
type KernelBatch struct {
	d      *Device
	k      *kernState
	b      *kernBatch
	held   []kernHeld
	open   bool
	flight *Flight // started and not yet waited for
	copyQ  bool
}

type kernHeld struct {
	kind int
	m    *vk.Memory
}

// Staging is pinned host memory of a KernelBatch: the CPU reads and writes
// it through Ptr, kernels and copies reach it at Addr (over the bus).
type Staging struct {
	Ptr  unsafe.Pointer
	Addr uint64
	Size uint64
	mem  *vk.Memory
}

// NewKernelBatch starts a batch on d. It fails with ErrNoKernels where
// kernels cannot run, or with ErrClosed or ErrDeviceLost. The device stays
// open until Close.
func (d *Device) NewKernelBatch() (*KernelBatch, error) {
	k := d.kern()
	if k == nil {
		if err := d.enter(); err != nil {
			return nil, err
		}
		d.exit()
		return nil, ErrNoKernels
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	return &KernelBatch{d: d, k: k, b: d.newKernBatch(k), open: true}, nil
}

// Staging returns size bytes of pinned host memory, kept until Close. Its
// contents are not zeroed.
func (kb *KernelBatch) Staging(size uint64) (Staging, error) {
	m, err := kb.take(kernScratchHost, size)
	if err != nil {
		return Staging{}, err
	}
	return Staging{Ptr: m.Ptr, Addr: m.Addr, Size: size, mem: m}, nil
}

// Scratch returns the device address of size bytes of device-local
// memory (the private tier's memory type where there is one), kept until
// Close. Its contents are not zeroed.
func (kb *KernelBatch) Scratch(size uint64) (uint64, error) {
	m, err := kb.take(kernScratchDevice, size)
	if err != nil {
		return 0, err
	}
	return m.Addr, nil
}

func (kb *KernelBatch) take(kind int, size uint64) (*vk.Memory, error) {
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
func (kb *KernelBatch) Dispatch(kn *Kernel, items uint64, push any) {
	kb.dispatchGroups(kn, kb.k.groups(items), push)
}

// dispatchGroups is Dispatch with an explicit workgroup count.
func (kb *KernelBatch) dispatchGroups(kn *Kernel, groups uint32, push any) {
	v := reflect.ValueOf(push)
	if v.Kind() != reflect.Pointer || v.Elem().Type() != kn.k.pushType {
		panic(fmt.Sprintf("vmem: kernel %s takes a *%v, not a %T", kn.k.name, kn.k.pushType, push))
	}
	kb.b.dispatch(kn.k, max(groups, 1), unsafe.Slice((*byte)(v.UnsafePointer()), kn.k.push))
}

// Barrier makes the writes of every command before it visible to every
// command after it.
func (kb *KernelBatch) Barrier() { kb.b.barrier() }

// CopyBlock records a copy of n bytes from src at srcOff to dst at dstOff
// (any tiers of kb's device).
func (kb *KernelBatch) CopyBlock(dst Block, dstOff uint64, src Block, srcOff, n uint64) {
	kb.b.copy(dst.c.mem, dst.off+dstOff, src.c.mem, src.off+srcOff, n)
}

// Upload records a copy of n bytes from staging memory at srcOff to the
// scratch buffer at device address dst.
func (kb *KernelBatch) Upload(dst uint64, src Staging, srcOff, n uint64) {
	m, off := kb.scratchAt(dst)
	kb.b.copy(m, off, src.mem, srcOff, n)
}

// CopyTo records a copy of n bytes from the scratch buffer at device
// address src to staging memory at dstOff.
func (kb *KernelBatch) CopyTo(dst Staging, dstOff uint64, src uint64, n uint64) {
	m, off := kb.scratchAt(src)
	kb.b.copy(dst.mem, dstOff, m, off, n)
}

// scratchAt finds the held buffer that holds device address a.
func (kb *KernelBatch) scratchAt(a uint64) (*vk.Memory, uint64) {
	for _, h := range kb.held {
		if a >= h.m.Addr && a < h.m.Addr+h.m.Size {
			return h.m, a - h.m.Addr
		}
	}
	panic("vmem: KernelBatch: address is not a buffer of this batch")
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
func (kb *KernelBatch) UseCopyQueues() { kb.copyQ = true }

// Run submits what was recorded since the last Run as one command buffer
// and waits for it. The batch can then record more. A failed submission
// returns ErrDeviceLost (every later call fails too); ErrNoKernels means a
// pipeline could not be built and nothing was submitted.
func (kb *KernelBatch) Run() error {
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
func (kb *KernelBatch) Start() (*Flight, error) {
	if !kb.open {
		return nil, ErrClosed
	}
	kb.settle()
	b := kb.b
	b.copyQueues = kb.copyQ
	kb.b = kb.d.newKernBatch(kb.k)
	fl := &Flight{kb: kb}
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

// Flight is a KernelBatch's run in progress (Start).
type Flight struct {
	kb   *KernelBatch
	f    *kernFlight
	err  error
	done bool
}

// Wait waits for the run's commands to complete and returns Run's error
// for them; later calls return the same.
func (fl *Flight) Wait() error {
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
func (kb *KernelBatch) settle() {
	if kb.flight != nil {
		kb.flight.Wait()
	}
}

// Close returns the batch's staging and scratch memory and releases the
// device. It is idempotent.
func (kb *KernelBatch) Close() {
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

// KernelsAvailable reports whether d runs compute kernels (else batch
// operations take their CPU paths).
func (d *Device) KernelsAvailable() bool { return d.kern() != nil }

// KernelDispatches returns how many kernel dispatches d has completed,
// for tests and diagnostics.
func (d *Device) KernelDispatches() int64 {
	if d.vk == nil {
		return 0
	}
	return d.vk.kern.dispatches.Load()
}
