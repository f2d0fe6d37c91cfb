package main

// The slice suite: vmem.Slice[uint64] against a []uint64 on the Go heap
// and against the naive path (a mapped block used as a []uint64).

import (
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/vmem"
)

// sliceChunk is the elements one bulk copy moves (8 MiB of uint64).
const sliceChunk = 1 << 20

func sliceSuite() *suite {
	return &suite{
		Name: "slice",
		About: "vmem.Slice[uint64] against a []uint64 on the Go heap (the baseline) and the naive path " +
			"(a mapped block of the same device used as a []uint64 with plain Go loads and stores). " +
			"One operation is one element.",
		Ops: []opDoc{
			{"get", "read the element at a random index (govram: Get; govram/batch: GetBatch of 256 indices, loads interleaved)"},
			{"set", "write the element at a random index (govram: Set, store and fence; govram/batch: a Writer, sorted whole-line stores, flushed at the end)"},
			{"append", "append one element, from empty up to the size, then start again (govram/batch: Append of 1024 elements at a time)"},
			{"copy-in", "bulk copy from a Go []uint64 into the container in 8 MiB pieces (CopyFrom; naive: copy())"},
			{"copy-out", "bulk copy out into a Go []uint64 (CopyTo; govram/pinned: into a vmem.Host block, the DMA's direct path)"},
			{"scan", "read every element in order (govram: Chunks, read in bulk; others: a loop)"},
		},
		Groups: func(e *env, n int) []*group {
			return []*group{{Suite: "slice", Name: "slice", Size: n, Baselines: []string{"[]uint64"},
				Impls: []*impl{sliceGovram(e, n), sliceNaive(e, n), sliceHeap(n)}}}
		},
	}
}

func sliceGovram(e *env, n int) *impl {
	return &impl{
		Name: "govram", Role: RoleGovram,
		Ops: []string{"get", "get#batch", "set", "set#batch", "append", "append#batch", "copy-in", "copy-out", "copy-out#pinned", "scan"},
		Need: func() (uint64, uint64) {
			return 2 * 8 * sliceChunk, uint64(n) * 8 * 3 // the slice, and an append slice growing to n
		},
		Setup: func() (*fixture, error) {
			var cl closer
			s, err := vmem.NewSlice[uint64](e.dev, n)
			if err != nil {
				return nil, err
			}
			cl.add(s.Close)
			fill := make([]uint64, min(n, sliceChunk))
			for at := 0; at < n; at += len(fill) {
				m := min(len(fill), n-at)
				for i := range m {
					fill[i] = uint64(at + i)
				}
				if err := s.CopyFrom(fill[:m], at); err != nil {
					return cl.fail(err)
				}
			}
			fill = nil
			mem := builtMem(e.dev)
			buf := make([]uint64, min(n, sliceChunk))
			pinned, err := kern.Of(e.dev).Alloc(block.Host, uint64(len(buf))*8, 0)
			havePinned := err == nil
			if havePinned {
				cl.add(func() error { return kern.Of(e.dev).Free(pinned) })
			}
			idx := randomIdx(n, probeCount(n), 1)
			fx := &fixture{entries: n, close: cl.close, mem: mem}
			fx.add("get", func(b *B) error {
				var sum uint64
				for i := range b.N {
					sum += s.Get(idx[i&(len(idx)-1)])
				}
				sink += sum
				return s.Err()
			})
			fx.add("get#batch", func(b *B) error {
				const batch = 256
				dst := make([]uint64, batch)
				var sum uint64
				for i := 0; i < b.N; i += batch {
					k := i & (len(idx) - 1)
					m := min(batch, b.N-i)
					if err := s.GetBatch(idx[k:k+m], dst[:m]); err != nil {
						return err
					}
					sum += dst[0]
				}
				sink += sum
				return s.Err()
			})
			fx.add("set", func(b *B) error {
				for i := range b.N {
					s.Set(idx[i&(len(idx)-1)], uint64(i))
				}
				return s.Err()
			})
			fx.add("set#batch", func(b *B) error {
				const batch = 1 << 16 // the batch SetBatch's writer collects per segment
				ix, vs := make([]int, 0, batch), make([]uint64, 0, batch)
				for i := range b.N {
					ix, vs = append(ix, idx[i&(len(idx)-1)]), append(vs, uint64(i))
					if len(ix) == batch {
						if err := s.SetBatch(ix, vs); err != nil {
							return err
						}
						ix, vs = ix[:0], vs[:0]
					}
				}
				return s.SetBatch(ix, vs)
			})
			fx.add("append", sliceAppendOp(e, n, 1))
			fx.add("append#batch", sliceAppendOp(e, n, 1024))
			fx.add("copy-in", bulkOp(n, len(buf), func(at, m int) error { return s.CopyFrom(buf[:m], at) }))
			fx.add("copy-out", bulkOp(n, len(buf), func(at, m int) error { return s.CopyTo(buf[:m], at) }))
			if havePinned {
				pb := blockU64s(pinned)
				fx.add("copy-out#pinned", bulkOp(n, len(buf), func(at, m int) error { return s.CopyTo(pb[:m], at) }))
			}
			fx.add("scan", func(b *B) error {
				b.SetBytes(8)
				left := b.N
				var sum uint64
				for left > 0 {
					for _, run := range s.Chunks() {
						run = run[:min(len(run), left)]
						for _, v := range run {
							sum += v
						}
						left -= len(run)
						if left == 0 {
							break
						}
					}
					if err := s.Err(); err != nil {
						return err
					}
				}
				sink += sum
				return nil
			})
			return fx, nil
		},
	}
}

// sliceAppendOp appends b.N elements, batch at a time, to a fresh Slice,
// starting again with an empty one whenever it reaches n.
func sliceAppendOp(e *env, n, batch int) benchFunc {
	return func(b *B) error {
		vs := make([]uint64, batch)
		a, err := vmem.NewSlice[uint64](e.dev, 0)
		if err != nil {
			return err
		}
		defer func() { a.Close() }()
		for i := 0; i < b.N; {
			if a.Len() >= n {
				b.StopTimer()
				a.Close()
				if a, err = vmem.NewSlice[uint64](e.dev, 0); err != nil {
					return err
				}
				b.StartTimer()
			}
			m := min(batch, b.N-i, n-a.Len())
			if m == 1 {
				err = a.Append(uint64(i))
			} else {
				err = a.Append(vs[:m]...)
			}
			if err != nil {
				return err
			}
			i += m
		}
		return nil
	}
}

// bulkOp moves b.N elements in pieces of at most chunk through move,
// walking the container's index space from a place that changes per run.
func bulkOp(n, chunk int, move func(at, m int) error) benchFunc {
	next := 0
	return func(b *B) error {
		b.SetBytes(8)
		for left := b.N; left > 0; {
			if next >= n {
				next = 0
			}
			m := min(chunk, left, n-next)
			if err := move(next, m); err != nil {
				return err
			}
			next += m
			left -= m
		}
		return nil
	}
}

// mappedU64s allocates n uint64 of mapped memory for the naive path,
// written once so that no case pays the pages' first touch.
func mappedU64s(dev *vmem.Device, n int) (block.Block, []uint64, error) {
	blk, err := kern.Of(dev).Alloc(block.Mapped, uint64(n)*8, 0)
	if err != nil {
		return blk, nil, err
	}
	u := blockU64s(blk)
	if u == nil {
		kern.Of(dev).Free(blk)
		return block.Block{}, nil, skipf("the mapped tier has no CPU address here")
	}
	if err := kern.Of(dev).Fill(blk, 0, blk.Size(), 0); err != nil {
		kern.Of(dev).Free(blk)
		return block.Block{}, nil, err
	}
	return blk, u[:n], nil
}

func sliceNaive(e *env, n int) *impl {
	return &impl{
		Name: "naive", Role: RoleNaive,
		Ops:  []string{"get", "set", "copy-in", "copy-out", "scan"},
		Need: func() (uint64, uint64) { return 8 * sliceChunk, uint64(n) * 8 },
		Setup: func() (*fixture, error) {
			blk, u, err := mappedU64s(e.dev, n)
			if err != nil {
				return nil, err
			}
			for i := range u {
				u[i] = uint64(i)
			}
			fx := &fixture{entries: n, close: func() error { return kern.Of(e.dev).Free(blk) }, mem: builtMem(e.dev)}
			buf := make([]uint64, min(n, sliceChunk))
			idx := randomIdx(n, probeCount(n), 1)
			fx.add("get", func(b *B) error {
				var sum uint64
				for i := range b.N {
					sum += u[idx[i&(len(idx)-1)]]
				}
				sink += sum
				return nil
			})
			fx.add("set", func(b *B) error {
				for i := range b.N {
					u[idx[i&(len(idx)-1)]] = uint64(i)
				}
				return nil
			})
			fx.add("copy-in", bulkOp(n, len(buf), func(at, m int) error { copy(u[at:at+m], buf); return nil }))
			fx.add("copy-out", bulkOp(n, len(buf), func(at, m int) error { copy(buf[:m], u[at:]); return nil }))
			fx.add("scan", scanU64s(u))
			return fx, nil
		},
	}
}

// scanU64s sums b.N elements of u in order, wrapping around.
func scanU64s(u []uint64) benchFunc {
	return func(b *B) error {
		b.SetBytes(8)
		var sum uint64
		for left := b.N; left > 0; {
			m := min(left, len(u))
			for _, v := range u[:m] {
				sum += v
			}
			left -= m
		}
		sink += sum
		return nil
	}
}

func sliceHeap(n int) *impl {
	return &impl{
		Name: "[]uint64", Role: RoleBaseline,
		Ops:  []string{"get", "set", "append", "copy-in", "copy-out", "scan"},
		Need: func() (uint64, uint64) { return uint64(n)*8*4 + 8*sliceChunk, 0 },
		Setup: func() (*fixture, error) {
			h := make([]uint64, n)
			for i := range h {
				h[i] = uint64(i)
			}
			fx := &fixture{entries: n, mem: builtMem(nil)}
			buf := make([]uint64, min(n, sliceChunk))
			idx := randomIdx(n, probeCount(n), 1)
			fx.add("get", func(b *B) error {
				var sum uint64
				for i := range b.N {
					sum += h[idx[i&(len(idx)-1)]]
				}
				sink += sum
				return nil
			})
			fx.add("set", func(b *B) error {
				for i := range b.N {
					h[idx[i&(len(idx)-1)]] = uint64(i)
				}
				return nil
			})
			fx.add("append", func(b *B) error {
				var a []uint64
				for i := range b.N {
					if len(a) >= n {
						b.StopTimer()
						a = nil
						b.StartTimer()
					}
					a = append(a, uint64(i))
				}
				sink += uint64(len(a))
				return nil
			})
			fx.add("copy-in", bulkOp(n, len(buf), func(at, m int) error { copy(h[at:at+m], buf); return nil }))
			fx.add("copy-out", bulkOp(n, len(buf), func(at, m int) error { copy(buf[:m], h[at:]); return nil }))
			fx.add("scan", scanU64s(h))
			return fx, nil
		},
	}
}
