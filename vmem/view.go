package vmem

import (
	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/block"
)

// view returns b as the CPU reaches it: the one place that decides how a
// block is touched (internal/access). Slices, the containers of package
// collections (through internal/kern) and the transfers below all ask here
// (a Slice on the host backend then reads its private segments in place:
// allocSegWith says why).
func (d *Device) view(b block.Block) access.View {
	return access.New(b.Ptr(), d.kindOf(b), blockMover{d, b})
}

// kindOf is the rule itself: private blocks are DMA-only (on the host
// backend too, so that every backend runs the same paths), mapped VRAM is
// write-combining, the rest cacheable.
func (d *Device) kindOf(b block.Block) access.Kind {
	return access.KindOf(b.Ptr() != nil, d.vk != nil && b.Tier() == block.Mapped)
}

// blockMover moves a block's bytes through the device's transfers (DMA
// where the CPU does not map the block).
type blockMover struct {
	d *Device
	b block.Block
}

func (m blockMover) ReadAt(dst []byte, off uint64) error  { return m.d.readBlock(dst, m.b, off) }
func (m blockMover) WriteAt(off uint64, src []byte) error { return m.d.writeBlock(m.b, off, src) }
