// Package collections holds containers whose entries live in device memory
// (VRAM on a GPU, off-heap host memory elsewhere): Map, BTree and Ring. They
// are built on vmem (memory, transfers) and layout (how records sit on
// lines), and follow the physics those packages document: a CPU read of VRAM costs one whole-line streaming load, stores
// are batched and written sorted, and bulk data moves by DMA.
//
// Element types hold no pointers (the garbage collector cannot see device
// memory); containers that say so also take string keys or values, whose
// bytes are stored off the Go heap.
//
// With the invariants build tag every write walks the structure it changed
// afterwards (a Map's table, a BTree's index and leaves, a ring's state in
// the tests, each shard of a sharded container holding only the keys routed
// to it) and panics at the first broken invariant.
package collections
