// Package snapfmt is the byte format of govram snapshots: what Slice, Map,
// BTree and Ring write with Save and read back with their Load functions.
//
// A snapshot is a header, a body cut into checksummed blocks, an end mark
// and a trailer. All integers are little-endian.
//
//	header (64 bytes)
//	  0  magic        "GOVRAM\x00S"
//	  8  version      uint16 (1)
//	 10  kind         uint8  (1 Slice, 2 Map, 3 BTree, 4 Ring)
//	 11  flags        uint8  (0)
//	 12  block size   uint32 (payload bytes of every block but the last)
//	 16  fingerprint  uint64 (layout of the element, key and value types)
//	 24  count        uint64 (elements or entries)
//	 32  aux          3 x uint64 (per kind: Slice element size; Ring capacity, policy)
//	 56  reserved     uint32 (0)
//	 60  header CRC   uint32 (CRC-32C of bytes 0-59)
//	block, repeated (every block holds exactly block size bytes but the last)
//	  0  length       uint32 (1 to block size)
//	  4  CRC          uint32 (CRC-32C of the payload)
//	  8  payload
//	end mark (8 bytes): length 0, CRC 0
//	trailer (32 bytes)
//	  0  magic        "GOVRAM\x00E"
//	  8  count        uint64 (as in the header)
//	 16  body bytes   uint64 (sum of the block lengths)
//	 24  CRC of CRCs  uint32 (CRC-32C of the blocks' CRCs, each as 4 bytes)
//	 28  trailer CRC  uint32 (CRC-32C of bytes 0-27)
//
// Why this shape. Every block carries its own checksum so that blocks are
// verified independently, on as many cores as there are (and a block's own
// checksum is computed in parallel parts joined by Combine), while the next
// block is still moving by DMA. The framing is deterministic (only the last
// block may be short), so a flipped length is caught before any payload is
// read, and the CRC of CRCs in the trailer catches blocks dropped,
// repeated or reordered. The header's checksum is checked before any of
// its counts is believed.
//
// The reader never trusts a size it has not checked: block lengths are
// bounded by the header's block size, which is bounded by MaxBlockSize,
// and a block's buffer grows only as its bytes actually arrive, so a forged
// header costs at most the bytes the stream really holds. Every failure is
// an error wrapping ErrCorrupt or ErrTypeMismatch (or the underlying
// reader's own error); nothing panics.
package snapfmt
