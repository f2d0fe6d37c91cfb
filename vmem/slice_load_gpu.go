package vmem

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/snapfmt"
)

// Checking a loaded block on the GPU: LoadSlice's path for blocks in
// pinned memory (a staging buffer, or a Host block read without a copy).
//
// Such a block goes to its segment by one DMA, and the CPU used to read
// it again for its checksum, beside the DMA: the two share the host's
// memory bandwidth, which held a large load well below the link's speed
// (docs/snapshots.md). Here one submit moves the block and runs crc32c
// over it where it landed, one 2 KiB chunk per invocation; the CPU joins
// the chunks' checksums (snapfmt.CombineParts, a few table lookups a
// chunk). The block crosses host memory once, and the CPU does nothing
// else.

// loadCRCChunk is the bytes of a block one invocation checksums: a 16 MiB
// block makes 8192 invocations, and its checksums 32 KiB.
const loadCRCChunk = 2048

type kernCRCPush struct {
	src, dst         uint64
	n, chunk, chunks uint32
	_                uint32
}

var kernCRC = newKernel("crc32c", kernCRCPush{}, false)

// loadGPUDest returns where the block of elements [at, at+k) goes when
// the GPU can write and check it: the layout is dense, the block lies in
// one segment at a 16-byte-aligned device address, its length is a
// multiple of 4, the data lies in pinned memory (pinned: canDMAFrom) and
// kernels run here. It reads s.segs: the loading goroutine calls it.
func (s *Slice[T]) loadGPUDest(at, k int, data []byte, pinned bool) (block.Block, uint64, bool) {
	d := s.dev
	if !pinned || len(data)%4 != 0 || !s.dense(0) || d.kern() == nil {
		return block.Block{}, 0, false
	}
	sg := &s.segs[at>>s.shift]
	j := at & (1<<s.shift - 1)
	if j+k > sg.cap {
		return block.Block{}, 0, false
	}
	off := uint64(s.off(j))
	if kaddr(sg.blk, off)%16 != 0 {
		return block.Block{}, 0, false
	}
	return sg.blk, off, true
}

// loadChecked copies block b's data (in pinned memory) into dst at off by
// DMA and checks its checksum on the GPU, in one submit. It reports false,
// having written nothing, where no kernel pipeline can be built.
func (d *Device) loadChecked(dst block.Block, off uint64, b *snapfmt.Block) (bool, error) {
	k := d.kern()
	if k == nil {
		return false, nil
	}
	if err := d.enter(); err != nil {
		return true, err
	}
	defer d.exit()
	n := uint64(len(b.Data))
	if err := d.checkRange(dst, off, n); err != nil {
		return true, err
	}
	c, coff := d.vk.chunkOf(sliceAddr(b.Data), n)
	if c == nil {
		return false, nil
	}
	chunks := (n + loadCRCChunk - 1) / loadCRCChunk
	dev, err := d.kernTakeScratch(kernScratchDevice, chunks*4)
	if err != nil {
		return true, d.noteErr(err)
	}
	defer d.kernPutScratch(kernScratchDevice, dev)
	host, err := d.kernTakeScratch(kernScratchHost, chunks*4)
	if err != nil {
		return true, d.noteErr(err)
	}
	defer d.kernPutScratch(kernScratchHost, host)
	kb := d.newKernBatch(k)
	kb.copy(dst.C.Mem, dst.Off+off, c.Mem, coff, n)
	kb.barrier()
	p := kernCRCPush{src: kaddr(dst, off), dst: dev.Addr, n: uint32(n), chunk: loadCRCChunk, chunks: uint32(chunks)}
	kb.dispatch(kernCRC, k.groups(chunks), bytesOf(&p))
	kb.barrier()
	kb.copy(host, 0, dev, 0, chunks*4)
	if err := d.kernRunHeld(kb); err != nil {
		if errors.Is(err, errKernUnavailable) {
			return false, nil // nothing was submitted
		}
		return true, err
	}
	sums := unsafe.Slice((*uint32)(host.Ptr), chunks)
	last := int(n - (chunks-1)*loadCRCChunk)
	if crc := snapfmt.CombineParts(sums, loadCRCChunk, last); crc != b.CRC {
		return true, fmt.Errorf("%w: block %d: checksum %08x, computed %08x", snapfmt.ErrCorrupt, b.Index, b.CRC, crc)
	}
	return true, nil
}
