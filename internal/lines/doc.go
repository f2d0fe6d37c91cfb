// Package lines is the store machinery govram's containers use on mapped
// VRAM: batches of pending stores merged by line ([Batcher]), logs of
// record stores flushed in order ([StoreLog]), and the packing of a node's
// arrays onto lines ([NodeLayout]). Records are laid out by package layout;
// the physics (docs/physics.md) are summed up in layout's package comment.
//
// # Why stores are batched, merged and sorted
//
// [Batcher] keeps pending stores in host memory as whole-line images with
// a mask of the dirty bytes. Stores to one line merge into one image, so a
// record written field by field still leaves as one line. [Batcher.Flush]
// writes each fully dirty line with one non-temporal store and each partly
// dirty line as plain stores of its dirty bytes only (never reading the
// line: that would cost a microsecond), then issues one SFENCE for the
// whole batch. Large, dense batches are first put in address order (see
// sort.go for when that pays). Reads through the batcher ([Batcher.Get])
// see pending stores without flushing: the line is loaded by one
// streaming load and the pending bytes are laid over it; if every wanted
// byte is pending, nothing is loaded.
//
// # What the batcher costs, and when to use it
//
// BenchmarkRandomStore and BenchmarkRandomLoad measure the batcher against
// direct stores and loads on 1 GiB of memory (docs/layout.md has the
// figures). The CPU work of a batch (hashing, copying, sorting) costs as
// much as the stores it saves, so the batcher does not make random stores
// faster than writing them directly; its worth is elsewhere. Use it where
// stores to a line are spread over time (they merge into one write), where
// code must read back what it wrote before the writes are visible (Get
// overlays the batch), or where writes must become visible together at a
// chosen point (one Flush, one fence). Where a caller already has a whole
// line, or writes a record's fields back to back, a direct lineio.Store or
// plain stores followed by one lineio.Fence are at least as fast.
//
// # How the batcher bounds memory
//
// A batcher holds at most maxLines pending lines, chosen at construction,
// and allocates everything then: 64 bytes of image plus 52 to 68 bytes of
// bookkeeping a line (mask, line number, hash table, sort buffers), about
// 0.9 MiB for the default 8192 lines. A store to a new line when maxLines
// are pending flushes the batch first. Nothing is allocated afterwards, so
// steady-state stores cost no garbage.
//
// The batch size also decides whether sorting can gain: sorted stores are
// cheap because neighbours share pages and page-table lines, which needs a
// batch that is dense in a large region. Flush sorts (by 256 KiB bucket)
// only batches that span at least 256 MiB with at least one line per
// 32 KiB of that span, so 32768 lines or more over 1 GiB; smaller batches
// go out in the order they were stored.
//
// # Node layouts
//
// [NodeLayout] packs the arrays of a node (keys, values, counts) so that
// each is read in the fewest lines and the node takes the fewest lines in
// all.
//
// # Caveats
//
//   - A Batcher is for one goroutine at a time.
//   - Pending stores are invisible to anything but the batcher's own Get
//     (DMA, GPU kernels, other batchers, plain reads): Flush first.
//   - Plain Go loads of VRAM are correct but about ten times slower than
//     streaming loads; use Batcher.Get or lineio.
//
// With the invariants build tag the batcher walks its table after every
// operation.
package lines
