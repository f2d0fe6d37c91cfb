// Package tlsf is a constant-time sub-allocator of offsets, used by vmem to
// carve device memory chunks (a VkDeviceMemory, an mmap'd arena) into blocks.
//
// It manages no memory: it hands out (region, offset) pairs and keeps all its
// bookkeeping on the Go heap, in a form the garbage collector scans cheaply.
//
// # Why TLSF
//
// Device memory is allocated by the driver in large chunks, slowly and in
// limited number, so the library keeps a few chunks per tier and splits them
// itself. The splitter must be fast on every call (it sits under container
// growth and vmem.Slice), bounded in the worst case rather than on average,
// and keep fragmentation low, because a chunk cannot be compacted behind the
// program's back. Two-level segregated fit (Masmano et al., 2004; also the
// default of AMD's VMA for Vulkan) meets all three: every operation is a few
// bit scans plus constant work on linked lists, and freed blocks are merged
// with their free neighbours at once, so no free block ever sits next to
// another.
//
// # Terminology
//
//   - Region: one chunk, [0, size). Regions are independent; a block never
//     spans two.
//   - Block: a contiguous range of a region, used or free. The blocks of a
//     region form its physical list, in address order, covering it exactly.
//   - Class: free blocks are kept in one list per size class, with a bitmap
//     of non-empty classes.
//
// # Classes
//
// Sizes are counted in granules of 64 bytes (a cache line, and the unit
// every offset and size is a multiple of). A size of u granules belongs to
// first level fl = floor(log2 u) - 4 and to one of 32 second-level
// subdivisions of [2^l, 2^(l+1)). Below 64 granules (4 KiB) the classes are
// linear, one per granule count, so small blocks are sorted exactly. A
// 64-bit bitmap marks non-empty first levels and one 32-bit bitmap per first
// level marks non-empty second levels.
//
// # Search and the waste bound
//
// Alloc first looks at the head of the request's own class and takes it if
// it fits. Otherwise it rounds the request up to the next class boundary and
// takes the head of the first non-empty class at or above it: every block
// there is large enough, so no list is ever walked. The chosen block is split
// exactly; the remainder goes back to the free lists, so an allocation wastes
// nothing inside its block beyond rounding its size up to 64 bytes.
//
// The price of good fit is in what the search may overlook: Alloc can fail
// while some free block of size s, n <= s < round(n), exists, where round(n)
// is n rounded up to the next class boundary, and
//
//	round(n) < n + n/32  (n >= 4 KiB; exact below)
//
// Stated the other way, Alloc of n bytes succeeds whenever some free block
// has at least round(n) bytes, 3.125% above n at most. An alignment a > 64
// is served by searching for n + a - 64 bytes, which is certain to contain
// an aligned range of n bytes, and splitting the leading gap off as a free
// block; the guarantee then holds for round(n + a - 64).
//
// # Complexity and footprint
//
// Alloc, Free, AddRegion and RemoveRegion are O(1) (amortized, where the
// node slice grows). Stats is O(length of the largest class's list), Check
// is O(blocks). Each block costs one 40-byte node in a slice indexed by
// uint32, with no pointers, so the collector never scans it; the class
// tables cost about 6 KiB per Allocator. Node slots and region ids are
// recycled.
//
// # Handles
//
// A Handle holds a node index and that node's generation, which changes
// whenever the block is freed or the node reused. A stale, double-freed or
// made-up Handle is refused by Free and Size without touching any state. A
// generation is 32 bits, so a Handle kept across 2^32 reuses of its node, or
// forged with a matching generation, could be taken as live; detection is a
// safety net, not a security boundary.
//
// # Caveats
//
//   - Not safe for concurrent use; the caller serializes (vmem holds a lock).
//   - Offsets are relative to the region's start. An alignment is honoured
//     relative to that start, so the base of each chunk must itself be
//     aligned at least as strictly as any alignment requested.
//   - The id of a removed region may be returned again by a later AddRegion.
//   - Build with the invariants tag to run Check after every mutation and
//     panic on the first broken invariant.
package tlsf
