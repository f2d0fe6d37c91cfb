package vmem

import (
	"fmt"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/hostmem"
	"github.com/govram/govram/internal/lines"
	"github.com/govram/govram/internal/vk"
)

// streams asks the planner whether a mapped read of n bytes at p is
// cheaper by streaming loads (a few lines: no fixed cost) than by DMA
// (a fixed start cost, then the link's speed: docs/physics.md).
func (d *Device) streams(p unsafe.Pointer, n uint64) bool {
	first := uintptr(p) &^ 63
	span := (uintptr(p)+uintptr(n)+63)&^63 - first
	return d.planner.Plan(int(span/64), int(span), true) == lines.Stream
}

// checkRange validates [off, off+n) inside b.
func (d *Device) checkRange(b block.Block, off, n uint64) error {
	if b.C == nil || b.C.Dev != d {
		return fmt.Errorf("%w: not a block of this device", block.ErrInvalid)
	}
	if b.C.Ptr == nil && b.C.Mem == nil {
		return fmt.Errorf("%w: its chunk was freed", block.ErrInvalid)
	}
	if !d.live(b) {
		// Its memory may belong to another block now: the handle's
		// generation no longer matches.
		return fmt.Errorf("%w: already freed", block.ErrInvalid)
	}
	if off > b.N || n > b.N-off {
		return fmt.Errorf("%w: [%d, %d) in a block of %d bytes", ErrRange, off, off+n, b.N)
	}
	return nil
}

func sliceAddr(p []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(p)) }

// writeBlock copies src into dst at off. Mapped blocks are written by the CPU
// with non-temporal full-line stores; private blocks by DMA (inline in the
// command buffer when small, directly when src lies in a host or mapped
// block of this device, else through pinned staging, pipelined).
func (d *Device) writeBlock(dst block.Block, off uint64, src []byte) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	if err := d.checkRange(dst, off, uint64(len(src))); err != nil {
		return err
	}
	return d.write(dst, off, src)
}

func (d *Device) write(dst block.Block, off uint64, src []byte) error {
	n := uint64(len(src))
	if n == 0 {
		return nil
	}
	p := dst.CPU(off)
	if p != nil {
		if err := d.faults.submit(); err != nil {
			return d.noteErr(err)
		}
		if d.kindOf(dst) == access.WC {
			wcCopy(p, sliceAddr(src), n)
		} else {
			memcpy(p, sliceAddr(src), n)
		}
		return nil
	}
	if ok, err := d.dmaFrom(dst, off, src); ok {
		return err
	}
	at := dst.Off + off
	if n <= vk.MaxUpdate && n%4 == 0 && at%4 == 0 {
		return d.run([]vk.Op{{Kind: vk.OpUpdate, Dst: dst.C.Mem, DstOff: at, Size: n}}, src)
	}
	return d.staged(n, false,
		func(_, k int, o, size uint64) vk.Op {
			return vk.Op{Dst: dst.C.Mem, DstOff: at + o, Size: size}
		},
		func(stage unsafe.Pointer, o, size uint64) {
			memcpy(stage, unsafe.Add(sliceAddr(src), o), size)
		})
}

// canDMAFrom reports whether p lies in a block of this device that DMA
// reads from (host or mapped memory).
func (d *Device) canDMAFrom(p []byte) bool {
	if d.vk == nil || len(p) == 0 {
		return false
	}
	c, _ := d.vk.chunkOf(sliceAddr(p), uint64(len(p)))
	return c != nil
}

// writeDMA is writeBlock by one DMA from src, which lies in a block of this
// device (canDMAFrom), whatever dst's tier: the CPU touches nothing.
func (d *Device) writeDMA(dst block.Block, off uint64, src []byte) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	n := uint64(len(src))
	if err := d.checkRange(dst, off, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if ok, err := d.dmaFrom(dst, off, src); ok {
		return err
	}
	return d.write(dst, off, src)
}

// dmaFrom copies src into dst at off by one DMA when src lies in a block
// of this device, and reports whether it did.
func (d *Device) dmaFrom(dst block.Block, off uint64, src []byte) (bool, error) {
	n := uint64(len(src))
	c, coff := d.vk.chunkOf(sliceAddr(src), n)
	if c == nil {
		return false, nil
	}
	return true, d.run([]vk.Op{{Kind: vk.OpCopy, Src: c.Mem, SrcOff: coff, Dst: dst.C.Mem, DstOff: dst.Off + off, Size: n}}, nil)
}

// readBlock copies len(dst) bytes of src at off into dst. Small mapped reads use
// streaming loads; larger reads and private blocks use DMA, directly into
// dst when dst lies in a host or mapped block of this device (the fastest
// path: one copy at the link's speed), else through pinned staging.
func (d *Device) readBlock(dst []byte, src block.Block, off uint64) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	n := uint64(len(dst))
	if err := d.checkRange(src, off, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	p := src.CPU(off)
	if p != nil && (d.vk == nil || src.C.Tier == block.Host || d.backendCPUType() || d.streams(p, n)) {
		if err := d.faults.submit(); err != nil {
			return d.noteErr(err)
		}
		if d.kindOf(src) == access.WC {
			wcCopy(sliceAddr(dst), p, n)
		} else {
			memcpy(sliceAddr(dst), p, n)
		}
		return nil
	}
	at := src.Off + off
	if c, coff := d.vk.chunkOf(sliceAddr(dst), n); c != nil {
		return d.run([]vk.Op{{Kind: vk.OpCopy, Src: src.C.Mem, SrcOff: at, Dst: c.Mem, DstOff: coff, Size: n}}, nil)
	}
	return d.staged(n, true,
		func(_, k int, o, size uint64) vk.Op {
			return vk.Op{Src: src.C.Mem, SrcOff: at + o, Size: size}
		},
		func(stage unsafe.Pointer, o, size uint64) {
			memcpy(unsafe.Add(sliceAddr(dst), o), stage, size)
		})
}

// copyBlock copies n bytes from src at srcOff to dst at dstOff, between any
// tiers. On the GPU it runs as one copy command (VRAM to VRAM moves several
// times as fast as the link: docs/physics.md). Overlapping ranges of one
// chunk are copied as by memmove on the host backend and refused with
// ErrRange on Vulkan.
func (d *Device) copyBlock(dst block.Block, dstOff uint64, src block.Block, srcOff uint64, n uint64) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	if err := d.checkRange(dst, dstOff, n); err != nil {
		return err
	}
	if err := d.checkRange(src, srcOff, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if d.vk == nil {
		if err := d.faults.submit(); err != nil {
			return d.noteErr(err)
		}
		copy(hostmem.Bytes(dst.CPU(dstOff), n), hostmem.Bytes(src.CPU(srcOff), n))
		return nil
	}
	da, sa := dst.Off+dstOff, src.Off+srcOff
	if dst.C == src.C && da < sa+n && sa < da+n {
		return fmt.Errorf("%w: overlapping copy inside one chunk", ErrRange)
	}
	return d.run([]vk.Op{{Kind: vk.OpCopy, Src: src.C.Mem, SrcOff: sa, Dst: dst.C.Mem, DstOff: da, Size: n}}, nil)
}

// fillBlock sets n bytes of dst at off to v (on the GPU for device tiers).
func (d *Device) fillBlock(dst block.Block, off, n uint64, v byte) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	if err := d.checkRange(dst, off, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if err := d.faults.submit(); err != nil {
		return d.noteErr(err)
	}
	if p := dst.CPU(off); p != nil && (d.vk == nil || dst.C.Tier == block.Host || d.backendCPUType()) {
		b := hostmem.Bytes(p, n)
		for i := range b {
			b[i] = v
		}
		return nil
	}
	// The GPU fills 4-byte words; the ragged ends (3 bytes at most each)
	// go through write's paths.
	at := dst.Off + off
	head := min((4-at%4)%4, n)
	tail := (n - head) % 4
	if body := n - head - tail; body > 0 {
		op := vk.Op{Kind: vk.OpFill, Dst: dst.C.Mem, DstOff: at + head, Size: body, Value: uint32(v) * 0x01010101}
		if err := d.run([]vk.Op{op}, nil); err != nil {
			return err
		}
	}
	edge := [3]byte{v, v, v}
	if head > 0 {
		if err := d.write(dst, off, edge[:head]); err != nil {
			return err
		}
	}
	if tail > 0 {
		return d.write(dst, off+n-tail, edge[:tail])
	}
	return nil
}
