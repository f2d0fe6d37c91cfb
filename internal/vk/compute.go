//go:build cgo && linux

package vk

/*
#include <stdlib.h>
#include "native.h"
*/
import "C"

import (
	"errors"
	"runtime"
	"unsafe"

	vulkan "github.com/goki/vulkan"
)

// usageDeviceAddress is VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT.
const usageDeviceAddress = vulkan.BufferUsageFlags(0x00020000)

// computeInfo reads the features and limits that kernels depend on.
func computeInfo(inst vulkan.Instance, h vulkan.PhysicalDevice, props *vulkan.PhysicalDeviceProperties) ComputeInfo {
	lim := props.Limits
	lim.Deref()
	ci := ComputeInfo{
		MaxPushConstants:      lim.MaxPushConstantsSize,
		MaxSharedMemory:       lim.MaxComputeSharedMemorySize,
		MaxGroupInvocations:   lim.MaxComputeWorkGroupInvocations,
		MaxGroupSize:          lim.MaxComputeWorkGroupSize,
		MaxGroupCount:         lim.MaxComputeWorkGroupCount,
		MaxStorageBufferRange: lim.MaxStorageBufferRange,
	}
	var f vulkan.PhysicalDeviceFeatures
	vulkan.GetPhysicalDeviceFeatures(h, &f)
	f.Deref()
	ci.ShaderInt64 = f.ShaderInt64 == vulkan.True
	ci.ShaderFloat64 = f.ShaderFloat64 == vulkan.True
	if props.ApiVersion >= vulkan.MakeVersion(1, 2, 0) {
		var gf C.gv_features
		if C.gv_query_features(unsafe.Pointer(inst), unsafe.Pointer(h), &gf) != 0 {
			ci.BufferDeviceAddress = gf.buffer_device_address != 0
		}
	}
	return ci
}

// kernelsPossible: govram's kernels address memory by device address (core
// in Vulkan 1.2) and use 64-bit integers for those addresses.
func kernelsPossible(pd *PhysicalDevice) bool {
	c := &pd.Compute
	return pd.APIVersion >= vulkan.MakeVersion(1, 2, 0) && c.BufferDeviceAddress && c.ShaderInt64 &&
		c.MaxPushConstants >= 128 && c.MaxGroupInvocations >= 256 && c.MaxGroupSize[0] >= 256
}

func kernelFeatures() unsafe.Pointer { return unsafe.Pointer(C.gv_bda_features()) }

// Pipeline is a compute pipeline: one SPIR-V kernel with its push-constant
// range and specialization constants. It is safe for concurrent use in
// Ops; destroy it with DestroyPipeline once no submission uses it.
type Pipeline struct {
	p    *C.gv_pipeline
	Push uint32 // push-constant bytes
}

// NewPipeline builds a compute pipeline from SPIR-V code (entry point
// "main") whose push constants take push bytes; spec[i] is the value of
// specialization constant i. The device must have Kernels.
func (d *Device) NewPipeline(code []byte, push uint32, spec []uint32) (*Pipeline, error) {
	if !d.Kernels {
		return nil, errors.New("vkCreateComputePipelines: the device has no buffer device addresses")
	}
	if len(code) == 0 || len(code)%4 != 0 {
		return nil, errors.New("vkCreateShaderModule: SPIR-V size is not a multiple of 4")
	}
	// The code goes through C memory: SPIR-V must be 4-byte aligned, which
	// an embedded []byte need not be.
	cc := C.malloc(C.size_t(len(code)))
	if cc == nil {
		return nil, &CallError{Call: "vkCreateShaderModule", Result: ErrorOutOfHostMemory}
	}
	defer C.free(cc)
	copy(unsafe.Slice((*byte)(cc), len(code)), code)
	var sp *C.uint32_t
	if len(spec) > 0 {
		cs := make([]C.uint32_t, len(spec))
		for i, v := range spec {
			cs[i] = C.uint32_t(v)
		}
		sp = &cs[0]
		defer runtime.KeepAlive(cs)
	}
	var p *C.gv_pipeline
	r := C.gv_pipeline_new(d.native, (*C.uint32_t)(cc), C.size_t(len(code)), C.uint32_t(push), sp, C.uint32_t(len(spec)), &p)
	if err := check("vkCreateComputePipelines", Result(r)); err != nil {
		return nil, err
	}
	return &Pipeline{p: p, Push: push}, nil
}

// DestroyPipeline frees p; no submission may be using it.
func (d *Device) DestroyPipeline(p *Pipeline) {
	if p != nil && p.p != nil {
		C.gv_pipeline_free(d.native, p.p)
		p.p = nil
	}
}
