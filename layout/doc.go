// Package layout says how govram lays a type out in mapped VRAM: how its
// records sit on 64-byte lines ([RecordOf], [Record]) and what n of them
// take ([Record.Lines], [Record.Bytes]), which types may live in device
// memory ([Check], [ErrPointerType]), and the costs that decide how reads
// go ([Costs], [H200Costs]). A user reads it to see what a record of T
// costs in lines (its padding, whether it straddles a line) before
// choosing a value type, and sets Costs on hardware other than the H200.
// It works on sizes and types and knows nothing of devices; vmem and the
// collections build on it, and their line I/O, store batching and read
// planning are not part of the API.
//
// # The physics
//
// The figures are in docs/physics.md. Mapped VRAM is uncached for loads
// and write-combining (WC) for stores:
//
//   - A plain load costs a PCIe round trip, however small. A 64-byte
//     streaming load (VMOVNTDQA) costs about an order of magnitude less
//     and brings the whole line. So the unit of every read is a line,
//     never a word, and govram's reads are whole-line streaming loads,
//     never Go loads.
//   - A store is dear when stores land at random over a large region
//     (each one a page walk and a lone PCIe write), several times cheaper
//     when the same stores are sorted by address, and cheaper again when
//     each one fills a whole line, which leaves the CPU as one 64-byte
//     write.
//   - DMA has a fixed cost before the first byte, then moves bulk data
//     at the link's speed; a GPU kernel round trip costs more again and
//     then touches VRAM at TB/s.
//
// # Why records never straddle lines
//
// A record that fits in 64 bytes but crosses a line boundary costs two
// streaming loads to read and two partial lines to write. [Record] places
// records so that this never happens; each rule says in its comment which
// line it saves.
//
// # Planning reads
//
// govram reads a few lines by streaming loads, a long contiguous (or
// dense) span by one DMA, and many scattered lines by a GPU gather, from
// thresholds derived from the costs above. Machines whose costs differ
// from those of docs/physics.md pass their own [Costs] to vmem through
// vmem.Options.Costs.
//
// # Types
//
// Values that live in VRAM must hold no Go pointers: the garbage collector
// cannot see them there. [Check] refuses such types and names the field;
// strings are refused too (containers that support them store the bytes
// themselves). vmem and the collections check their element types the
// same way when they are built.
package layout
