//go:build cgo && linux

package vk

/*
#cgo LDFLAGS: -ldl -lpthread
#include <stdlib.h>
#include "native.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	vulkan "github.com/goki/vulkan"

	"github.com/govram/govram/internal/waithook"
)

// Available reports whether this build can use Vulkan at all.
const Available = true

var (
	loadOnce sync.Once
	loadErr  error
)

// Load opens the Vulkan loader once. It is safe for concurrent use.
func Load() error {
	loadOnce.Do(func() {
		var buf [256]C.char
		p := C.gv_load(&buf[0], C.size_t(len(buf)))
		if p == nil {
			loadErr = errors.New(C.GoString(&buf[0]))
			return
		}
		vulkan.SetGetInstanceProcAddr(p)
		if err := vulkan.Init(); err != nil {
			loadErr = err
		}
	})
	return loadErr
}

// Instance is a VkInstance.
type Instance struct {
	h vulkan.Instance
}

// NewInstance creates an instance for compute and transfer work (no
// surfaces, no layers).
func NewInstance() (*Instance, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	app := vulkan.ApplicationInfo{
		SType:            vulkan.StructureTypeApplicationInfo,
		PApplicationName: "govram\x00",
		PEngineName:      "govram\x00",
		ApiVersion:       vulkan.MakeVersion(1, 2, 0),
	}
	ci := vulkan.InstanceCreateInfo{
		SType:            vulkan.StructureTypeInstanceCreateInfo,
		PApplicationInfo: &app,
	}
	var h vulkan.Instance
	if err := check("vkCreateInstance", Result(vulkan.CreateInstance(&ci, nil, &h))); err != nil {
		return nil, err
	}
	if err := vulkan.InitInstance(h); err != nil {
		vulkan.DestroyInstance(h, nil)
		return nil, err
	}
	return &Instance{h: h}, nil
}

// Destroy destroys the instance.
func (i *Instance) Destroy() {
	if i != nil && i.h != nil {
		vulkan.DestroyInstance(i.h, nil)
		i.h = nil
	}
}

func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// Devices lists the physical devices with their memory, queues and
// extensions.
func (i *Instance) Devices() ([]PhysicalDevice, error) {
	var n uint32
	if err := check("vkEnumeratePhysicalDevices", Result(vulkan.EnumeratePhysicalDevices(i.h, &n, nil))); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	hs := make([]vulkan.PhysicalDevice, n)
	if err := check("vkEnumeratePhysicalDevices", Result(vulkan.EnumeratePhysicalDevices(i.h, &n, hs))); err != nil {
		return nil, err
	}
	out := make([]PhysicalDevice, 0, n)
	for idx, h := range hs[:n] {
		var props vulkan.PhysicalDeviceProperties
		vulkan.GetPhysicalDeviceProperties(h, &props)
		props.Deref()
		pd := PhysicalDevice{
			Index:         idx,
			Name:          cstr(props.DeviceName[:]),
			Type:          DeviceType(props.DeviceType),
			VendorID:      props.VendorID,
			DeviceID:      props.DeviceID,
			APIVersion:    props.ApiVersion,
			DriverVersion: props.DriverVersion,
			Extensions:    map[string]bool{},
			handle:        unsafe.Pointer(h),
		}
		pd.Compute = computeInfo(i.h, h, &props)
		var mp vulkan.PhysicalDeviceMemoryProperties
		vulkan.GetPhysicalDeviceMemoryProperties(h, &mp)
		mp.Deref()
		for t := uint32(0); t < mp.MemoryTypeCount; t++ {
			mt := mp.MemoryTypes[t]
			mt.Deref()
			pd.MemoryTypes = append(pd.MemoryTypes, MemoryType{Flags: uint32(mt.PropertyFlags), Heap: int(mt.HeapIndex)})
		}
		for t := uint32(0); t < mp.MemoryHeapCount; t++ {
			hp := mp.MemoryHeaps[t]
			hp.Deref()
			pd.Heaps = append(pd.Heaps, Heap{Size: uint64(hp.Size), DeviceLocal: hp.Flags&1 != 0})
		}
		pd.Families = queueFamilies(i.h, h)
		for _, e := range deviceExtensions(i.h, h, 16<<10) {
			pd.Extensions[e] = true
		}
		var p2 C.gv_props2
		wantDriver := 0
		if pd.APIVersion >= vulkan.MakeVersion(1, 2, 0) || pd.Extensions["VK_KHR_driver_properties"] {
			wantDriver = 1
		}
		if pd.APIVersion >= vulkan.MakeVersion(1, 1, 0) &&
			C.gv_query_props2(unsafe.Pointer(i.h), unsafe.Pointer(h), C.int(wantDriver), &p2) != 0 {
			pd.MaxAllocation = uint64(p2.max_alloc)
			if wantDriver == 1 {
				pd.DriverName = C.GoString(&p2.driver_name[0])
				pd.DriverInfo = C.GoString(&p2.driver_info[0])
			}
		}
		out = append(out, pd)
	}
	return out, nil
}

// queueFamilies lists phys's queue families (native.c: the bindings'
// version of this call may free its output array under the driver).
func queueFamilies(inst vulkan.Instance, phys vulkan.PhysicalDevice) []Family {
	var flags, counts [64]C.uint32_t
	n := C.gv_queue_families(unsafe.Pointer(inst), unsafe.Pointer(phys), &flags[0], &counts[0], C.uint32_t(len(flags)))
	fs := make([]Family, min(int(n), len(flags)))
	for k := range fs {
		fs[k] = Family{Flags: uint32(flags[k]), Count: uint32(counts[k])}
	}
	return fs
}

// deviceExtensions lists phys's extensions (native.c, as queueFamilies).
func deviceExtensions(inst vulkan.Instance, phys vulkan.PhysicalDevice, size int) []string {
	buf := make([]byte, size)
	for {
		n := int64(C.gv_extensions(unsafe.Pointer(inst), unsafe.Pointer(phys), (*C.char)(unsafe.Pointer(&buf[0])), C.int64_t(len(buf))))
		if n <= 0 {
			return nil
		}
		if n <= int64(len(buf)) {
			return strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00")
		}
		buf = make([]byte, n)
	}
}

// Budget returns the driver's per-heap budget and usage (VK_EXT_memory_budget).
func (i *Instance) Budget(pd *PhysicalDevice) (budget, usage []uint64, ok bool) {
	if !pd.Extensions["VK_EXT_memory_budget"] {
		return nil, nil, false
	}
	var b, u [16]C.uint64_t
	if C.gv_query_budget(unsafe.Pointer(i.h), pd.handle, &b[0], &u[0]) == 0 {
		return nil, nil, false
	}
	for h := range pd.Heaps {
		budget = append(budget, uint64(b[h]))
		usage = append(usage, uint64(u[h]))
	}
	return budget, usage, true
}

// Device is a logical device with a transfer queue (the dedicated copy
// engine where the device has one) and a compute queue.
type Device struct {
	inst           *Instance
	h              vulkan.Device
	native         *C.gv_device
	queues         []vulkan.Queue // by slot: QueueIndexTransfer, QueueIndexCompute, QueueIndexTransfer2
	families       []uint32       // each slot's family
	budgetEnabled  bool
	TransferFamily int
	ComputeFamily  int
	// Kernels: buffer device addresses and 64-bit integers are enabled, so
	// govram's compute kernels can run (see NewPipeline).
	Kernels bool
}

// Queue indexes for NewStream.
const (
	QueueIndexTransfer = 0
	QueueIndexCompute  = 1
	// QueueIndexTransfer2 is a second queue of the copy engines' family,
	// where the device has one (HasQueue): copies in both directions at
	// once, beside the compute queue.
	QueueIndexTransfer2 = 2
)

// Pipeline stages a semaphore wait can hold back (SubmitWith).
const (
	StageTransfer = 0x1000
	StageCompute  = 0x800
)

// HasQueue reports whether queue slot q exists on d.
func (d *Device) HasQueue(q int) bool { return q >= 0 && q < len(d.queues) }

// TransferOnly reports whether queue slot q is a copy engine's (no compute).
func (d *Device) TransferOnly(q int) bool {
	return d.HasQueue(q) && d.families[q] != d.families[QueueIndexCompute]
}

// NewDevice creates a logical device on pd, enabling those of exts the
// device has.
func (i *Instance) NewDevice(pd *PhysicalDevice, exts []string) (*Device, error) {
	compute, transfer := -1, -1
	for f, fam := range pd.Families {
		if fam.Count == 0 {
			continue
		}
		if compute < 0 && fam.Flags&QueueCompute != 0 {
			compute = f
		}
		// A family with transfer but neither graphics nor compute is a copy engine.
		if transfer < 0 && fam.Flags&QueueTransfer != 0 && fam.Flags&(QueueGraphics|QueueCompute) == 0 {
			transfer = f
		}
	}
	if compute < 0 {
		return nil, errors.New("device has no compute queue")
	}
	if transfer < 0 {
		transfer = compute
	}
	prio := []float32{1, 1}
	qcis := []vulkan.DeviceQueueCreateInfo{{
		SType:            vulkan.StructureTypeDeviceQueueCreateInfo,
		QueueFamilyIndex: uint32(compute),
		QueueCount:       1,
		PQueuePriorities: prio[:1],
	}}
	ntq := 0
	if transfer != compute {
		// Two copy-engine queues where the family has them: one for each
		// direction of a kernel batch's copies.
		ntq = min(int(pd.Families[transfer].Count), 2)
		qcis = append(qcis, vulkan.DeviceQueueCreateInfo{
			SType:            vulkan.StructureTypeDeviceQueueCreateInfo,
			QueueFamilyIndex: uint32(transfer),
			QueueCount:       uint32(ntq),
			PQueuePriorities: prio[:ntq],
		})
	}
	var enabled []string
	for _, e := range exts {
		if pd.Extensions[e] {
			enabled = append(enabled, e+"\x00")
		}
	}
	ci := vulkan.DeviceCreateInfo{
		SType:                   vulkan.StructureTypeDeviceCreateInfo,
		QueueCreateInfoCount:    uint32(len(qcis)),
		PQueueCreateInfos:       qcis,
		EnabledExtensionCount:   uint32(len(enabled)),
		PpEnabledExtensionNames: enabled,
	}
	kernels := kernelsPossible(pd)
	if kernels {
		ci.PNext = kernelFeatures()
		feats := vulkan.PhysicalDeviceFeatures{ShaderInt64: vulkan.True}
		if pd.Compute.ShaderFloat64 {
			feats.ShaderFloat64 = vulkan.True
		}
		ci.PEnabledFeatures = []vulkan.PhysicalDeviceFeatures{feats}
	}
	var h vulkan.Device
	r := Result(vulkan.CreateDevice(vulkan.PhysicalDevice(pd.handle), &ci, nil, &h))
	if r != Success && kernels {
		// A driver that refuses the kernel features still serves memory.
		kernels = false
		ci.PNext, ci.PEnabledFeatures = nil, nil
		r = Result(vulkan.CreateDevice(vulkan.PhysicalDevice(pd.handle), &ci, nil, &h))
	}
	// The bindings hand the driver pointers into Go memory reachable only
	// from ci (the queue priorities, the extension names): ci must outlive
	// the calls.
	runtime.KeepAlive(&ci)
	if err := check("vkCreateDevice", r); err != nil {
		return nil, err
	}
	nat := C.gv_device_new(unsafe.Pointer(i.h), unsafe.Pointer(h))
	if nat == nil {
		vulkan.DestroyDevice(h, nil)
		return nil, errors.New("vkGetDeviceProcAddr: missing transfer entry points")
	}
	d := &Device{inst: i, h: h, native: nat, TransferFamily: transfer, ComputeFamily: compute,
		Kernels: kernels && C.gv_device_has_bda(nat) != 0}
	d.families = []uint32{uint32(transfer), uint32(compute)}
	// Locals: cgo refuses a pointer into a struct that holds Go pointers.
	var tq, cq vulkan.Queue
	vulkan.GetDeviceQueue(h, uint32(transfer), 0, &tq)
	vulkan.GetDeviceQueue(h, uint32(compute), 0, &cq)
	d.queues = []vulkan.Queue{tq, cq}
	if ntq == 2 {
		var t2 vulkan.Queue
		vulkan.GetDeviceQueue(h, uint32(transfer), 1, &t2)
		d.queues = append(d.queues, t2)
		d.families = append(d.families, uint32(transfer))
	}
	if tq == cq {
		// One VkQueue for both indexes: vkQueueSubmit needs one lock for it.
		C.gv_device_share_queue(nat)
	}
	return d, nil
}

// Destroy waits for the device to go idle and destroys it. Every Memory and
// Stream must have been freed.
func (d *Device) Destroy() {
	if d == nil || d.h == nil {
		return
	}
	vulkan.DeviceWaitIdle(d.h)
	C.gv_device_free(d.native)
	vulkan.DestroyDevice(d.h, nil)
	d.h = nil
}

// bufferUsage lets every chunk be a copy source and target and a storage
// buffer for kernels.
const bufferUsage = vulkan.BufferUsageFlags(vulkan.BufferUsageTransferSrcBit |
	vulkan.BufferUsageTransferDstBit | vulkan.BufferUsageStorageBufferBit)

// Allocate allocates size bytes of memory type typ with a buffer over all of
// it, and maps it when mapIt is set.
func (d *Device) Allocate(typ int, size uint64, mapIt bool) (*Memory, error) {
	usage := bufferUsage
	if d.Kernels {
		usage |= usageDeviceAddress
	}
	// Both queues touch every buffer: where their families differ, the
	// buffer is shared by both (no ownership transfers).
	fams := [2]C.uint32_t{C.uint32_t(d.families[0]), C.uint32_t(d.families[1])}
	nfam := 1
	if fams[0] != fams[1] {
		nfam = 2
	}
	var out C.gv_memory
	var step C.int
	r := C.gv_allocate(d.native, C.uint64_t(size), C.uint32_t(typ), C.uint32_t(usage), C.uint32_t(nfam),
		&fams[0], cbool(d.Kernels), cbool(mapIt), &out, &step)
	switch {
	case r == 0:
	case step == C.GV_ALLOC_TYPE:
		return nil, errors.New("vkGetBufferMemoryRequirements: memory type not allowed for buffers")
	default:
		call := [...]string{C.GV_ALLOC_BUFFER: "vkCreateBuffer", C.GV_ALLOC_MEMORY: "vkAllocateMemory",
			C.GV_ALLOC_BIND: "vkBindBufferMemory", C.GV_ALLOC_MAP: "vkMapMemory"}[step]
		return nil, check(call, Result(r))
	}
	return &Memory{Size: size, Type: typ, mem: out.mem, buf: out.buf, Ptr: out.ptr, Addr: uint64(out.addr)}, nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func (m *Memory) handles() (vulkan.DeviceMemory, vulkan.Buffer) {
	return vulkan.DeviceMemory(m.mem), vulkan.Buffer(m.buf)
}

// Free unmaps and frees m.
func (d *Device) Free(m *Memory) {
	mem, buf := m.handles()
	if m.Ptr != nil {
		vulkan.UnmapMemory(d.h, mem)
		m.Ptr = nil
	}
	vulkan.DestroyBuffer(d.h, buf, nil)
	vulkan.FreeMemory(d.h, mem, nil)
	m.mem, m.buf = nil, nil
}

// Stream is a command buffer and fence on one queue. One goroutine uses a
// Stream at a time; several Streams may submit concurrently.
type Stream struct {
	d     *Device
	q     int
	pool  vulkan.CommandPool
	cmd   vulkan.CommandBuffer
	fence vulkan.Fence
	ops   []C.gv_op
}

// NewStream creates a stream on queue slot q (see HasQueue).
func (d *Device) NewStream(q int) (*Stream, error) {
	if !d.HasQueue(q) {
		return nil, fmt.Errorf("vk: the device has no queue slot %d", q)
	}
	s := &Stream{d: d, q: q}
	pci := vulkan.CommandPoolCreateInfo{
		SType:            vulkan.StructureTypeCommandPoolCreateInfo,
		Flags:            vulkan.CommandPoolCreateFlags(vulkan.CommandPoolCreateResetCommandBufferBit),
		QueueFamilyIndex: d.families[q],
	}
	var pool vulkan.CommandPool
	if err := check("vkCreateCommandPool", Result(vulkan.CreateCommandPool(d.h, &pci, nil, &pool))); err != nil {
		return nil, err
	}
	s.pool = pool
	cbs := make([]vulkan.CommandBuffer, 1)
	ai := vulkan.CommandBufferAllocateInfo{
		SType:              vulkan.StructureTypeCommandBufferAllocateInfo,
		CommandPool:        s.pool,
		Level:              vulkan.CommandBufferLevelPrimary,
		CommandBufferCount: 1,
	}
	if err := check("vkAllocateCommandBuffers", Result(vulkan.AllocateCommandBuffers(d.h, &ai, cbs))); err != nil {
		vulkan.DestroyCommandPool(d.h, s.pool, nil)
		return nil, err
	}
	s.cmd = cbs[0]
	fci := vulkan.FenceCreateInfo{SType: vulkan.StructureTypeFenceCreateInfo}
	var fence vulkan.Fence
	if err := check("vkCreateFence", Result(vulkan.CreateFence(d.h, &fci, nil, &fence))); err != nil {
		vulkan.DestroyCommandPool(d.h, s.pool, nil)
		return nil, err
	}
	s.fence = fence
	return s, nil
}

// Queue returns the stream's queue slot.
func (s *Stream) Queue() int { return s.q }

// Destroy frees the stream; it must be idle.
func (s *Stream) Destroy() {
	if s.pool == nil {
		return
	}
	vulkan.DestroyFence(s.d.h, s.fence, nil)
	vulkan.DestroyCommandPool(s.d.h, s.pool, nil)
	s.pool = nil
}

// Submit records ops into the stream's command buffer and submits it; data
// holds the bytes of OpUpdate commands. Wait must follow before the next
// Submit on this stream.
func (s *Stream) Submit(ops []Op, data []byte) error {
	return s.SubmitWith(ops, data, nil, 0, nil)
}

// SubmitWith is Submit ordered against other queues: the commands' stages
// waitStage wait for wait to be signalled (nil: no wait), and signal is
// signalled once they are done (nil: none). A binary semaphore is
// signalled and waited for once per use.
func (s *Stream) SubmitWith(ops []Op, data []byte, wait *Semaphore, waitStage uint32, signal *Semaphore) error {
	s.ops = s.ops[:0]
	for _, o := range ops {
		g := C.gv_op{kind: C.uint32_t(o.Kind), value: C.uint32_t(o.Value),
			src_off: C.uint64_t(o.SrcOff), dst_off: C.uint64_t(o.DstOff),
			size: C.uint64_t(o.Size), data_off: C.uint64_t(o.DataOff)}
		if o.Src != nil {
			g.src = C.uint64_t(uintptr(o.Src.buf))
		}
		if o.Dst != nil {
			g.dst = C.uint64_t(uintptr(o.Dst.buf))
		}
		if o.Kind == OpDispatch {
			if o.Pipeline == nil || o.Pipeline.p == nil {
				return errors.New("vkCmdDispatch: no pipeline")
			}
			if o.Size > 0 && o.DataOff+o.Size > uint64(len(data)) {
				return errors.New("vkCmdPushConstants: push constants outside the data")
			}
			g.src = C.uint64_t(uintptr(unsafe.Pointer(o.Pipeline.p)))
			g.groups = [3]C.uint32_t{C.uint32_t(o.Groups[0]), C.uint32_t(o.Groups[1]), C.uint32_t(o.Groups[2])}
		}
		s.ops = append(s.ops, g)
	}
	var dp unsafe.Pointer
	if len(data) > 0 {
		dp = unsafe.Pointer(&data[0])
	}
	var op0 *C.gv_op
	if len(s.ops) > 0 {
		op0 = &s.ops[0]
	}
	var ws, ss C.uint64_t
	if wait != nil {
		ws = C.uint64_t(uintptr(unsafe.Pointer(wait.h)))
	}
	if signal != nil {
		ss = C.uint64_t(uintptr(unsafe.Pointer(signal.h)))
	}
	tonly := 0
	if s.d.TransferOnly(s.q) {
		tonly = 1
	}
	r := C.gv_submit(s.d.native, C.int(s.q), C.int(tonly), unsafe.Pointer(s.d.queues[s.q]), unsafe.Pointer(s.cmd),
		C.uint64_t(uintptr(unsafe.Pointer(s.fence))), op0, C.int(len(s.ops)), dp, ws, C.uint32_t(waitStage), ss)
	runtime.KeepAlive(data)
	return check("vkQueueSubmit", Result(r))
}

// Wait waits for the last Submit, polling first.
func (s *Stream) Wait(timeoutNs uint64) error {
	waithook.Run()
	r := C.gv_wait(s.d.native, C.uint64_t(uintptr(unsafe.Pointer(s.fence))), C.uint64_t(timeoutNs))
	return check("vkWaitForFences", Result(r))
}

// Done reports, without waiting, whether the last Submit has completed;
// an error means the device was lost.
func (s *Stream) Done() (bool, error) {
	r := Result(C.gv_fence_status(s.d.native, C.uint64_t(uintptr(unsafe.Pointer(s.fence)))))
	if r == NotReady {
		return false, nil
	}
	return r == Success, check("vkGetFenceStatus", r)
}

// Run submits ops and waits for them.
func (s *Stream) Run(ops []Op, data []byte, timeoutNs uint64) error {
	if err := s.Submit(ops, data); err != nil {
		return err
	}
	return s.Wait(timeoutNs)
}

// Semaphore orders submissions of different queues on the device.
type Semaphore struct {
	d *Device
	h vulkan.Semaphore
}

// NewSemaphore creates a binary semaphore.
func (d *Device) NewSemaphore() (*Semaphore, error) {
	ci := vulkan.SemaphoreCreateInfo{SType: vulkan.StructureTypeSemaphoreCreateInfo}
	var h vulkan.Semaphore
	if err := check("vkCreateSemaphore", Result(vulkan.CreateSemaphore(d.h, &ci, nil, &h))); err != nil {
		return nil, err
	}
	return &Semaphore{d: d, h: h}, nil
}

// Destroy frees the semaphore; no submission may use it any more.
func (m *Semaphore) Destroy() {
	if m == nil || m.h == nil {
		return
	}
	vulkan.DestroySemaphore(m.d.h, m.h, nil)
	m.h = nil
}
