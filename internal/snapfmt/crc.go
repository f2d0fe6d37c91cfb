package snapfmt

import "hash/crc32"

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
// join into the block's checksum. It multiplies crcA by x^(8*lenB) modulo
// the polynomial, squaring a matrix over GF(2) per bit of lenB (the method
// of zlib's crc32_combine), so it costs about 32 matrix squarings.
func Combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var even, odd [32]uint32
	// odd: the operator for one zero bit.
	odd[0] = castagnoliReversed
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four zero bits
	// Apply len2 zero bytes: eight zero bits first, doubling each round.
	for {
		gf2Square(&even, &odd)
		if lenB&1 != 0 {
			crcA = gf2Times(&even, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
		gf2Square(&odd, &even)
		if lenB&1 != 0 {
			crcA = gf2Times(&odd, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat *[32]uint32) {
	for n := range square {
		square[n] = gf2Times(mat, mat[n])
	}
}
