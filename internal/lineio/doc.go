// Package lineio reads and writes memory in whole 64-byte lines with
// streaming instructions. It is the only place in govram that touches mapped
// VRAM with vector instructions; everything above it speaks in lines.
//
// # Why lines, and why streaming instructions
//
// Mapped VRAM is uncached for loads and write-combining (WC) for stores
// (see docs/physics.md). A plain 8-byte Go load from it is slow, because
// every load is a separate round trip over PCIe. One 64-byte VMOVNTDQA
// (AVX-512 streaming load) costs about an order of magnitude less and
// returns the whole line, so reading a line costs less than reading one
// word the plain way. Stores go through the CPU's write-combining buffers;
// a buffer that is filled completely leaves as one 64-byte PCIe write,
// which is what a non-temporal (NT) store of a whole line does. Partial
// lines leave as several smaller writes.
//
// # Variants
//
// One variant is chosen at start-up from golang.org/x/sys/cpu, best first:
//
//	avx512   VMOVNTDQA/VMOVNTDQ on Z registers: one instruction a line
//	avx2     VMOVNTDQA/VMOVNTDQ on Y registers: two a line
//	sse41    MOVNTDQA/MOVNTDQ on X registers: four a line
//	generic  plain Go loads and stores (other architectures, -tags purego,
//	         or an amd64 without SSE4.1)
//
// The wider the registers, the fewer instructions a line and the more
// lines in flight: each variant is faster than the next, and the generic
// one, whose plain loads of mapped VRAM are not streaming, is slower by an
// order of magnitude. BenchmarkLoad, BenchmarkGather, BenchmarkLoadLines,
// BenchmarkStoreLines and BenchmarkCopy measure them; docs/layout.md has
// the figures of each variant.
//
// [Kind] names the one in use. The environment variable VMEM_LINEIO may
// name a lesser variant (for measurements); it cannot select one the CPU
// lacks. [SetKind] does the same for tests and benchmarks.
//
// # Rules for callers
//
//   - Addresses given to [Load], [Store], [LoadLines], [StoreLines] and
//     [Gather] must be 64-byte aligned. An unaligned one is the caller's bug
//     and panics (the vector instructions themselves would fault).
//   - NT stores are weakly ordered: call [Fence] after a batch of [Store] or
//     [StoreLines] before another agent (the GPU, a DMA, another thread) may
//     look at the lines, and before reading them back with streaming loads.
//     [Copy] fences by itself.
//   - Host-side buffers (the []byte and *[64]byte arguments) need no
//     alignment: the vector moves to and from them are unaligned ones.
//   - Streaming loads read whole lines: [Copy] may read up to 63 bytes before
//     and after the source range, within the same lines. A 64-byte line never
//     crosses a page, so this never faults; it only matters to tools that
//     check bounds, which do not see assembly.
//   - On host memory (write-back), streaming loads behave like ordinary
//     loads and NT stores bypass the cache; everything is correct there,
//     just not the point.
package lineio
