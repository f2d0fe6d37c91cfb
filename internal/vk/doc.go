// Package vk is the only package of govram that talks to Vulkan. It imports
// github.com/goki/vulkan for instance, device, memory and buffer setup, and
// keeps a small C file (native.c) for what those bindings lack: the Vulkan 1.1
// property and memory-budget queries, and the transfer hot path, which
// records, submits and polls a fence in one cgo call.
//
// Compute (compute.go, compute.c): devices with Vulkan 1.2's buffer device
// addresses and 64-bit shader integers get Device.Kernels; every buffer then
// has a device address (Memory.Addr), NewPipeline builds a compute pipeline
// whose only interface is push constants, and OpDispatch runs it within a
// Stream's ops, between barriers, like a copy.
//
// The loader is opened at run time (libvulkan.so.1, the runtime package's
// name; libvulkan.so only exists with the -dev package), so a binary starts
// on machines without Vulkan and the caller falls back to host memory.
// Builds without cgo compile a stub whose Load reports why Vulkan is absent.
//
// Nothing here is safe for concurrent use unless it says so; vmem serialises.
package vk
