package snapfmt

import (
	"hash/crc32"
	"sync/atomic"
)

// castagnoli is CRC-32C, which amd64 and arm64 compute with an
// instruction.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// castagnoliReversed is the polynomial in the bit order of the table-driven
// (reflected) CRC that hash/crc32 computes.
const castagnoliReversed = 0x82f63b78

// Sum returns the CRC-32C of p on the calling goroutine.
func Sum(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

// Update continues crc with p.
func Update(crc uint32, p []byte) uint32 { return crc32.Update(crc, castagnoli, p) }

// Combine returns the CRC-32C of a followed by b, given crcA of a, crcB of
// b and b's length: parts of one block checksummed on different cores
// join into the block's checksum. crcA is multiplied by x^(8*lenB) modulo
// the polynomial; that power is built from a table of x^(2^k) by one
// product per set bit of the bit count: over a hundred times faster than
// the matrix method (zlib's), which a load paid sixteen times per 16 MiB
// block, on one core (BenchmarkCombine measures it).
func Combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	return mulMod(powX8(uint64(lenB)), crcA) ^ crcB
}

// Polynomials modulo the CRC's are held reflected, as the CRC is: bit 31
// is the coefficient of x^0, bit 0 that of x^31.
const polyOne = uint32(1) << 31

// mulMod returns a*b modulo the polynomial.
func mulMod(a, b uint32) uint32 {
	var p uint32
	for m := polyOne; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ castagnoliReversed
		} else {
			b >>= 1
		}
	}
	return p
}

// xPow2[k] is x^(2^k) modulo the polynomial; the powers of x repeat with
// a period dividing 2^32-1, so 2^k for k up to 63 covers any length.
var xPow2 = func() (t [64]uint32) {
	t[0] = polyOne >> 1 // x^1
	for k := 1; k < len(t); k++ {
		t[k] = mulMod(t[k-1], t[k-1])
	}
	return t
}()

// powX8 returns x^(8n) modulo the polynomial: n zero bytes.
func powX8(n uint64) uint32 {
	p := polyOne
	for k := 3; n != 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			p = mulMod(xPow2[k], p)
		}
	}
	return p
}

// CombineParts returns the CRC-32C of consecutive parts of part bytes
// each (the last one may be shorter: last bytes), given each part's CRC
// in sums: the block checksum of chunks checksummed on a GPU. Joining a
// part of the common length is a multiplication by one constant, done by
// four lookups in tables built once per length (an order of magnitude
// faster than Combine: BenchmarkCombineParts against BenchmarkCombine).
func CombineParts(sums []uint32, part, last int) uint32 {
	switch len(sums) {
	case 0:
		return 0
	case 1:
		return sums[0]
	}
	t := mulTables(part)
	crc := sums[0]
	for _, s := range sums[1 : len(sums)-1] {
		crc = t[0][crc&0xff] ^ t[1][crc>>8&0xff] ^ t[2][crc>>16&0xff] ^ t[3][crc>>24] ^ s
	}
	return Combine(crc, sums[len(sums)-1], int64(last))
}

// mulTable is multiplication by one polynomial k, byte by byte:
// mulMod(k, x) is the xor over the bytes of x of t[j][byte j], as the
// product is linear in x.
type mulTable struct {
	n int
	t [4][256]uint32
}

var lastMulTable atomic.Pointer[mulTable]

// mulTables returns the tables of x^(8n), kept for the last n asked.
func mulTables(n int) *[4][256]uint32 {
	if m := lastMulTable.Load(); m != nil && m.n == n {
		return &m.t
	}
	m := &mulTable{n: n}
	k := powX8(uint64(n))
	for j := range 4 {
		for b := range 256 {
			// Byte j of a reflected polynomial holds bits 8j..8j+7 counted
			// from bit 0, as a uint32's byte j does.
			m.t[j][b] = mulMod(k, uint32(b)<<(8*j))
		}
	}
	lastMulTable.Store(m)
	return &m.t
}
