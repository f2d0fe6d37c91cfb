// Package vmem is the floor every govram container stands on: it opens a
// device, keeps memory in tiers, moves bytes between them and the Go heap
// by the cheapest path, runs GPU kernels over that memory, and offers
// Slice[T], the primitive container.
//
// # Devices and backends
//
// Open picks a backend once: Vulkan when a GPU is present (internal/vk is
// the only package that talks to the driver), else the host backend
// (anonymous mmap, off the Go heap). VMEM_BACKEND=host|vulkan overrides the
// choice; VMEM_REQUIRE_VULKAN=1 makes tests fail instead of skipping when no
// Vulkan device is found. Code written against one backend runs on the
// other: the Private tier is reached only by copies on either.
//
// # Tiers and the allocator
//
// Mapped is VRAM the CPU can reach (whole-line streaming loads, stores that
// are batched and sorted), Private is VRAM reached only by DMA and kernels,
// Host is system memory (pinned on Vulkan, so DMA reaches it directly).
// Each tier takes chunks from the driver and carves them into blocks with
// a TLSF allocator (internal/tlsf): constant-time, bounded waste.
// Containers are the way to allocate: a Slice[T] for typed memory
// (Slice[byte] for raw bytes), the maps, trees and rings of package
// collections for the rest. Each holds blocks of a device (Stats counts
// them) and frees them at Close; a Device frees whatever is still held
// when it closes.
//
// # Moving bytes
//
// Transfers (a Slice's CopyFrom and CopyTo, the containers' reads and
// writes) ask the access planner (internal/lines: thresholds from
// Options.Costs) whether a transfer is cheaper as streaming loads (a few
// lines, no fixed cost) or as DMA (a fixed cost, then the link's
// bandwidth) and take that path. DMA runs through pinned staging memory,
// pipelined; large host copies are split over goroutines.
//
// # Kernels
//
// Whole-slice passes (sort, fill, sum, gather) and the containers' batch
// operations run as SPIR-V kernels (internal/shaders), reaching memory
// through buffer device addresses. Each operation is recorded into one
// command buffer so that it pays one GPU round trip, not one per step;
// VMEM_KERNELS=0 keeps every operation on its CPU path.
//
// # Containers
//
// Slice[T] is a growable array of pointer-free T in one tier, read by
// streaming loads or DMA, written by Set one element at a time or by
// SetBatch many at once (a store log sorted by address before it is
// written). Made on a Pool instead of a
// Device (both are a Memory), it spreads its elements over the pool's
// devices. It saves and loads snapshots (internal/snapfmt).
//
// The costs these choices follow are measured in docs/physics.md; the
// design is described in docs/vmem.md and docs/gpu.md. With the invariants
// build tag, kernels' results (a sort's order) and the lengths of a
// Slice's parts on a pool are checked after every operation.
package vmem
