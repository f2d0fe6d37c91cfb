// Package kern is the device plumbing govram's containers use and users
// never see: the block allocator (internal/block) and the transfers
// between blocks and the Go heap, batches of GPU commands over a device's
// blocks, pinned staging memory, compute kernels, close hooks, leak
// tracing and fault injection.
//
// vmem implements it (vmem/batch.go) and registers itself when it is
// initialised; package collections reaches a device's plumbing with Of:
//
//	var myKernel = kern.NewKernel("my_kernel", mySPIRV, myPush{}) // package level
//
//	kb, err := kern.Of(dev).NewBatch() // ErrNoKernels: take the CPU path
//	defer kb.Close()
//	in, _ := kb.Staging(n * 8)  // pinned host memory: CPU pointer + device address
//	// ... the CPU fills in.Ptr ...
//	tmp, _ := kb.Scratch(n * 4) // device-local scratch
//	kb.Dispatch(myKernel, n, &myPush{keys: in.Addr, out: tmp, table: addr})
//	kb.Barrier()
//	kb.CopyTo(out, 0, tmp, n*4) // device to pinned host memory
//	err = kb.Run()              // one submission, one fence wait
//
// Everything recorded between two Runs is one command buffer: one round
// trip however many uploads, dispatches and copies. Staging and scratch
// buffers stay valid until Close, across Runs, so an operation of several
// round trips (look up, decide on the CPU, apply) keeps its uploaded keys
// on the device.
//
// A container's memory is blocks:
//
//	kd := kern.Of(dev)
//	b, err := kd.Alloc(block.Mapped, n, 0) // zeroed, 64-byte aligned
//	defer kd.Free(b)
//	err = kd.Write(b, 0, data)             // or through b.Ptr() where the CPU maps it
package kern

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/block"
)

// ErrNoKernels is returned by NewBatch (and by Run, when a kernel's
// pipeline cannot be built before anything was submitted) on devices that
// run no compute kernels: the host backend, VMEM_KERNELS=0, a device
// without buffer device addresses. The caller then takes its CPU path.
var ErrNoKernels = errors.New("vmem: compute kernels are not available on this device")

// Kernel is a compute kernel declared by a govram package with its SPIR-V.
// Create it with NewKernel in a package-level variable.
type Kernel struct {
	// Impl is the implementation's state for the kernel (vmem's).
	Impl any
}

// NewKernel declares the kernel name, of SPIR-V module spirv (nil: the
// kernel internal/shaders/<name>.spv), whose push
// constants are the fields of the struct push (a zero value), laid out as the
// shader's push-constant block (std430, 64-bit fields first). The first
// use of the kernel on a device checks the struct against the SPIR-V's
// block, member by member, and panics on a difference (a broken build,
// not a runtime condition). Call it only during package initialisation:
// the implementation registers itself before its importers initialise.
func NewKernel(name string, spirv []byte, push any) *Kernel {
	if impl.newKernel == nil {
		panic("kern: NewKernel before vmem registered")
	}
	return &Kernel{Impl: impl.newKernel(name, spirv, push)}
}

// Staging is pinned host memory of a Batch: the CPU reads and writes it
// through Ptr, kernels and copies reach it at Addr (over the bus).
type Staging struct {
	Ptr  unsafe.Pointer
	Addr uint64
	Size uint64
	// Mem is the implementation's handle for the memory.
	Mem any
}

// Batch records the commands of one operation of a container: uploads,
// dispatches, copies. Run submits them as one command buffer and waits
// once. A Batch is used by one goroutine; Close it.
type Batch interface {
	// Staging returns size bytes of pinned host memory, kept until
	// Close. Its contents are not zeroed.
	Staging(size uint64) (Staging, error)
	// Scratch returns the device address of size bytes of device-local
	// memory, kept until Close. Its contents are not zeroed.
	Scratch(size uint64) (uint64, error)
	// Dispatch records k over items items (grid-stride) with push
	// constants *push, a pointer to k's push struct.
	Dispatch(k *Kernel, items uint64, push any)
	// Barrier makes the writes of every command before it visible to
	// every command after it.
	Barrier()
	// CopyBlock records a copy of n bytes from src at srcOff to dst at
	// dstOff (any tiers of the batch's device).
	CopyBlock(dst block.Block, dstOff uint64, src block.Block, srcOff, n uint64)
	// Upload records a copy of n bytes from staging memory at srcOff to
	// the scratch buffer at device address dst.
	Upload(dst uint64, src Staging, srcOff, n uint64)
	// CopyTo records a copy of n bytes from the scratch buffer at device
	// address src to staging memory at dstOff.
	CopyTo(dst Staging, dstOff uint64, src uint64, n uint64)
	// UseCopyQueues makes every later Run and Start submit the copies
	// recorded before the first dispatch and after the last one on the
	// device's copy engines, ordered against the dispatches by
	// semaphores (docs/gpu.md). VMEM_COPY_QUEUES=0 turns it off.
	UseCopyQueues()
	// Run submits what was recorded since the last Run as one command
	// buffer and waits for it. A failed submission returns ErrDeviceLost
	// (every later call fails too); ErrNoKernels means a pipeline could
	// not be built and nothing was submitted.
	Run() error
	// Start submits as Run does and returns without waiting; the
	// Flight's Wait ends the run. Run, Start and Close wait for a flight
	// not yet waited for.
	Start() (Flight, error)
	// Close returns the batch's staging and scratch memory and releases
	// the device. It is idempotent.
	Close()
}

// Flight is a Batch's run in progress (Start).
type Flight interface {
	// Wait waits for the run's commands and returns Run's error for
	// them; later calls return the same.
	Wait() error
}

// Faults makes a device fail on purpose, so tests can show that containers
// survive out-of-memory and device loss. Production code never arms it.
// Counts are 1-based and start when InjectFaults is called: FailAlloc 3
// fails the third Alloc from then. Zero disables a fault.
//
// What counts as a submission: every GPU submission (a copy, a fill, a
// kernel batch — three where Batch.UseCopyQueues splits it — a staged
// transfer) and, so that the host backend can be tested the same way,
// every Read, Write, Copy and Fill of the host backend and every
// CPU-side Read or Write of mapped memory. Plain loads and stores through
// block.Block.Ptr are not submissions and never fail.
type Faults struct {
	// FailAlloc: the Nth Alloc returns ErrOutOfMemory and allocates
	// nothing.
	FailAlloc int64
	// FailSubmit: the Nth submission returns ErrDeviceLost and loses the
	// device, as a real device loss does: every later operation but Free
	// and Close returns ErrDeviceLost.
	FailSubmit int64
	// LoseDevice loses the device at once, as if the GPU had stopped
	// answering between two calls.
	LoseDevice bool
}

// Device is a device's plumbing.
type Device interface {
	// Alloc returns a zeroed block of size bytes in tier t, aligned to
	// align (0 or a power of two up to 64 KiB, else vmem.ErrRange; values
	// under block.MinAlign mean block.MinAlign). It fails with
	// vmem.ErrOutOfMemory when neither the chunks held nor the driver
	// have room (nothing is allocated then), vmem.ErrTooLarge when size
	// exceeds the tier's MaxBlock; a tier the device has no memory for is
	// out of memory too.
	Alloc(t block.Tier, size, align uint64) (block.Block, error)
	// Free returns b to its tier. It fails with block.ErrInvalid when b
	// was not allocated by this device or was already freed; nothing
	// changes then. It still works after device loss, so that containers
	// can release what they hold.
	Free(b block.Block) error
	// Read copies len(dst) bytes of src at off into dst. Small mapped
	// reads use streaming loads; larger reads and private blocks use DMA,
	// directly into dst when dst lies in a host or mapped block of this
	// device, else through pinned staging.
	Read(dst []byte, src block.Block, off uint64) error
	// Write copies src into dst at off. Mapped blocks are written by the
	// CPU with non-temporal full-line stores; private blocks by DMA
	// (inline in the command buffer when small, directly when src lies in
	// a host or mapped block of this device, else through pinned staging,
	// pipelined).
	Write(dst block.Block, off uint64, src []byte) error
	// Copy copies n bytes from src at srcOff to dst at dstOff, between
	// any tiers. On the GPU it runs as one copy command. Overlapping
	// ranges of one chunk are copied as by memmove on the host backend
	// and refused with vmem.ErrRange on Vulkan.
	Copy(dst block.Block, dstOff uint64, src block.Block, srcOff, n uint64) error
	// Fill sets n bytes of dst at off to v (on the GPU for device tiers).
	Fill(dst block.Block, off, n uint64, v byte) error
	// Trim returns every empty chunk, and the kernels' kept scratch, to
	// the driver.
	Trim()
	// TraceBlocks makes every later Alloc record where it was called (a
	// stack walk per allocation: for tests), so that LiveBlocks can say
	// who leaked a block.
	TraceBlocks()
	// LiveBlocks lists the blocks still allocated, oldest first, with
	// where they were allocated when they were traced. Test helpers use
	// it to report leaks (vmemtest fails a test that leaves one).
	LiveBlocks() []LiveBlock
	// NewBatch starts a batch. It fails with ErrNoKernels where kernels
	// cannot run, or with the device's error. The device stays open
	// until the batch's Close.
	NewBatch() (Batch, error)
	// KernelsAvailable reports whether the device runs compute kernels
	// (else batch operations take their CPU paths).
	KernelsAvailable() bool
	// OnGPU reports whether the device is a GPU reached through Vulkan
	// (Info().Backend is vmem.BackendVulkan), without Info's query of
	// the driver.
	OnGPU() bool
	// KernelDispatches returns how many kernel dispatches the device has
	// completed, for tests and diagnostics.
	KernelDispatches() int64
	// AtClose registers f to run when the device is closed, before its
	// memory is freed; cancel removes it (call it when the owner closes
	// first). A container registers its own Close this way, so that
	// closing the device closes the container rather than leaving it
	// pointing at freed memory. f must not keep the container reachable
	// (capture a weak.Pointer), or the container's garbage-collection
	// backstop never runs. On a closed device f runs at once.
	AtClose(f func()) (cancel func())
	// InjectFaults arms f, replacing what was armed before. A lost
	// device stays lost.
	InjectFaults(f Faults)
	// PendingFaults returns the faults still armed: the counts left
	// before each fires (0 once it fired, or if it was never armed).
	PendingFaults() Faults
	// BlockAddr returns the device address of byte off of b, which
	// kernels dereference (GL_EXT_buffer_reference), or 0 where kernels
	// cannot run (the host backend).
	BlockAddr(b block.Block, off uint64) uint64
	// BlockOffset returns b's offset in the device memory it was carved
	// from.
	BlockOffset(b block.Block) uint64
	// View returns b as the CPU reaches it (internal/access): the rule is
	// the device's, decided once per block.
	View(b block.Block) access.View
}

// impl is what the implementation registered.
var impl struct {
	newKernel func(name string, spirv []byte, push any) any
	device    func(dev any) Device
}

// Register installs the implementation: newKernel makes a kernel's state,
// device returns a device's plumbing. vmem calls it from its init
// function.
func Register(newKernel func(name string, spirv []byte, push any) any, device func(dev any) Device) {
	impl.newKernel, impl.device = newKernel, device
}

// Of returns dev's plumbing. dev is a *vmem.Device; anything else panics
// (a broken build).
func Of(dev any) Device {
	return impl.device(dev)
}

// LiveBlock describes a block still allocated (see Device.LiveBlocks).
type LiveBlock struct {
	Tier block.Tier
	Size uint64 // bytes requested
	// Stack is where Alloc was called, one "function\n\tfile:line" pair a
	// frame, innermost first; empty unless the block was traced
	// (Device.TraceBlocks).
	Stack string
}

func (b LiveBlock) String() string {
	s := fmt.Sprintf("%s block of %d bytes", b.Tier, b.Size)
	if b.Stack == "" {
		return s + " (allocated at an unknown place: trace blocks with kern.Device.TraceBlocks)"
	}
	return s + " allocated at\n" + b.Stack
}

// Hooks for tests, set by vmem when it is initialised: constructors vmem
// keeps out of its API, which internal/vmemtest wraps in typed helpers.
var (
	// NewPool makes a pool (a *vmem.Pool) of devices (*vmem.Device) the
	// caller opened and keeps closing: tests simulate several GPUs with
	// several host devices, or one Vulkan device opened twice.
	NewPool func(devs []any) (any, error)
	// SegmentBytes returns a vmem.SliceOption that caps a Slice's
	// segments at n bytes, so that tests cover segment boundaries with
	// little data.
	SegmentBytes func(n uint64) any
)
