package vk

import (
	"fmt"
	"unsafe"
)

// Result is a VkResult.
type Result int32

const (
	Success                  Result = 0
	NotReady                 Result = 1
	Timeout                  Result = 2
	ErrorOutOfHostMemory     Result = -1
	ErrorOutOfDeviceMemory   Result = -2
	ErrorInitializationFail  Result = -3
	ErrorDeviceLost          Result = -4
	ErrorMemoryMapFailed     Result = -5
	ErrorExtensionNotPresent Result = -7
	ErrorFeatureNotPresent   Result = -8
	ErrorIncompatibleDriver  Result = -9
	ErrorTooManyObjects      Result = -10
)

var resultNames = map[Result]string{
	Success:                  "VK_SUCCESS",
	NotReady:                 "VK_NOT_READY",
	Timeout:                  "VK_TIMEOUT",
	ErrorOutOfHostMemory:     "VK_ERROR_OUT_OF_HOST_MEMORY",
	ErrorOutOfDeviceMemory:   "VK_ERROR_OUT_OF_DEVICE_MEMORY",
	ErrorInitializationFail:  "VK_ERROR_INITIALIZATION_FAILED",
	ErrorDeviceLost:          "VK_ERROR_DEVICE_LOST",
	ErrorMemoryMapFailed:     "VK_ERROR_MEMORY_MAP_FAILED",
	ErrorExtensionNotPresent: "VK_ERROR_EXTENSION_NOT_PRESENT",
	ErrorFeatureNotPresent:   "VK_ERROR_FEATURE_NOT_PRESENT",
	ErrorIncompatibleDriver:  "VK_ERROR_INCOMPATIBLE_DRIVER",
	ErrorTooManyObjects:      "VK_ERROR_TOO_MANY_OBJECTS",
}

func (r Result) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("VkResult(%d)", int32(r))
}

// CallError is a failed Vulkan call, named.
type CallError struct {
	Call   string
	Result Result
}

func (e *CallError) Error() string { return e.Call + ": " + e.Result.String() }

func check(call string, r Result) error {
	if r == Success {
		return nil
	}
	return &CallError{Call: call, Result: r}
}

// DeviceType is VkPhysicalDeviceType.
type DeviceType int

const (
	TypeOther DeviceType = iota
	TypeIntegrated
	TypeDiscrete
	TypeVirtual
	TypeCPU
)

func (t DeviceType) String() string {
	switch t {
	case TypeIntegrated:
		return "integrated"
	case TypeDiscrete:
		return "discrete"
	case TypeVirtual:
		return "virtual"
	case TypeCPU:
		return "cpu"
	}
	return "other"
}

// Memory property flags (VkMemoryPropertyFlagBits).
const (
	DeviceLocal  uint32 = 1
	HostVisible  uint32 = 2
	HostCoherent uint32 = 4
	HostCached   uint32 = 8
)

// MemoryType is one of a device's memory types.
type MemoryType struct {
	Flags uint32
	Heap  int
}

// Heap is one of a device's memory heaps.
type Heap struct {
	Size        uint64
	DeviceLocal bool
}

// Queue family capability bits.
const (
	QueueGraphics uint32 = 1
	QueueCompute  uint32 = 2
	QueueTransfer uint32 = 4
)

// Family is a queue family.
type Family struct {
	Flags uint32
	Count uint32
}

// PhysicalDevice describes one Vulkan device.
type PhysicalDevice struct {
	Index         int
	Name          string
	Type          DeviceType
	VendorID      uint32
	DeviceID      uint32
	APIVersion    uint32
	DriverVersion uint32
	DriverName    string
	DriverInfo    string
	MaxAllocation uint64 // maxMemoryAllocationSize; 0 when the driver does not say
	MemoryTypes   []MemoryType
	Heaps         []Heap
	Families      []Family
	Extensions    map[string]bool
	Compute       ComputeInfo
	handle        unsafe.Pointer // VkPhysicalDevice
}

// ComputeInfo is what a device offers compute kernels: the features
// govram's kernels need and the limits they must respect.
type ComputeInfo struct {
	// BufferDeviceAddress: kernels can address buffers by 64-bit pointers
	// (Vulkan 1.2 bufferDeviceAddress feature).
	BufferDeviceAddress bool
	ShaderInt64         bool
	ShaderFloat64       bool
	MaxPushConstants    uint32
	MaxSharedMemory     uint32 // maxComputeSharedMemorySize
	MaxGroupInvocations uint32 // maxComputeWorkGroupInvocations
	MaxGroupSize        [3]uint32
	MaxGroupCount       [3]uint32
	// MaxStorageBufferRange bounds a descriptor's range; kernels that use
	// device addresses are not bound by it.
	MaxStorageBufferRange uint32
}

// APIString formats APIVersion as major.minor.patch.
func (p *PhysicalDevice) APIString() string {
	v := p.APIVersion
	return fmt.Sprintf("%d.%d.%d", v>>22&0x7f, v>>12&0x3ff, v&0xfff)
}

// Op kinds for Stream.Run.
const (
	OpCopy    = 0
	OpFill    = 1
	OpUpdate  = 2 // inline data, at most MaxUpdate bytes, size a multiple of 4
	OpBarrier = 3 // orders the ops before it against those after it
	// OpDispatch runs Pipeline over Groups workgroups with push constants
	// data[DataOff:DataOff+Size]; compute queue only.
	OpDispatch = 4
)

// MaxUpdate is the largest OpUpdate (vkCmdUpdateBuffer's limit).
const MaxUpdate = 65536

// Op is one transfer command. Offsets and sizes are in bytes; Fill and Update
// need multiples of 4.
type Op struct {
	Kind           int
	Src, Dst       *Memory
	SrcOff, DstOff uint64
	Size           uint64
	Value          uint32 // Fill: the 32-bit pattern
	DataOff        uint64 // Update, Dispatch: offset into Run's data
	Pipeline       *Pipeline
	Groups         [3]uint32 // Dispatch: workgroups in x, y, z
}

// Memory is one VkDeviceMemory with a VkBuffer bound over all of it, mapped
// when its type is host-visible and the caller asked.
type Memory struct {
	Ptr  unsafe.Pointer // nil unless mapped
	Size uint64
	Type int
	// Addr is the buffer's device address, which kernels use to reach it;
	// 0 unless the device has Kernels.
	Addr uint64
	mem  unsafe.Pointer // VkDeviceMemory
	buf  unsafe.Pointer // VkBuffer
}
