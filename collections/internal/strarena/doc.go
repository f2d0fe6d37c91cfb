// Package strarena stores byte strings off the Go heap, in the memory of a
// vmem.Device (mapped VRAM by default), and hands back a compact Handle that
// containers keep inline in their records.
//
// # Why
//
// A container whose keys or values are strings cannot keep the bytes on the
// Go heap: the garbage collector would scan them, and a map of fifty million
// strings would cost the program seconds of GC work per cycle. The bytes
// live here instead; the record in VRAM holds an 8-byte Handle (offset and
// length) and, usually, the first bytes of the string inline, so that most
// comparisons are settled by the record's own line.
//
// # Layout
//
// The arena is a list of segments (device blocks). Segment i owns the 1 GiB
// window [i<<30, (i+1)<<30) of a 40-bit offset space, so an offset names its
// segment with a shift and no table search. Segments start small (64 KiB by
// default) and double up to 1 GiB, so a small arena costs little and a large
// one few blocks. Allocations are rounded up to 16-byte units and to size
// classes (exact up to 1 KiB, then eight classes per power of two, at most
// 12.5% waste), taken from the free list of their class or from the end of
// the current segment.
//
// Free lists are stacks of offsets in anonymous memory outside the Go heap,
// one per class, so freeing and reusing space never reads the device (a
// list threaded through VRAM would cost a streaming load, or on the private
// tier a DMA round trip, per allocation) and the Go heap does not grow with
// the number of strings. A request whose class list is empty may split a
// block of a slightly larger class before it extends the segment.
//
// # Reads and writes
//
// Where the segment lies decides the path: host memory (the host backend,
// or the vmem.Host tier) is read and written with plain moves; mapped VRAM
// is read with whole-line streaming loads (internal/lineio: a plain load
// from VRAM costs a microsecond) and written with non-temporal stores and a
// fence; private VRAM goes by DMA. Equal and Compare stream the bytes
// through a small stack buffer and never allocate.
//
// # Handles
//
// A Handle packs the offset in 16-byte units (36 bits: a 1 TiB arena) and
// the length (28 bits: strings up to 256 MiB - 1). The zero Handle is the
// empty string, which takes no space.
//
// # Concurrency
//
// Read, Equal, Compare, AppendTo and String may run in any number of
// goroutines at once. Put, PutString, Free, Reset and Close change the
// arena and must not overlap with any other call.
//
// With the invariants build tag the free lists are checked after every
// change, and a record of the live strings catches double frees.
package strarena
