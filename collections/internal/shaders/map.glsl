// Shared by the Map kernels (map_get, map_put): the Map's hash, its home
// bucket, and its probe, computed exactly as package collections does on
// the CPU (map_layout.go: mapMix, mapHome; map.go: Get's probe).
//
// The table: buckets of one 64-byte line holding pp slots, stride bytes
// apart; key at byte 0 of a slot. Segments of 1<<shift buckets; segs holds
// per segment the slots' address and the address of a device copy of its
// control bytes (pp per bucket: 0x00-0x7F full with seven bits of the
// hash, 0x80 empty, 0xFE deleted). Probes walk buckets from the home
// bucket and stop at one with an empty slot; there is no wraparound (the
// table ends in a tail of overflow buckets, nbAll in all).

// mul128 is the 64x64->128-bit product, from 32-bit halves.
void mul128(uint64_t a, uint64_t b, out uint64_t hi, out uint64_t lo) {
	uint64_t a0 = a & 0xffffffffUL, a1 = a >> 32;
	uint64_t b0 = b & 0xffffffffUL, b1 = b >> 32;
	uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffUL) + (p10 & 0xffffffffUL);
	lo = (mid << 32) | (p00 & 0xffffffffUL);
	hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

uint64_t mapMix(uint64_t x, uint64_t s) {
	uint64_t hi, lo;
	mul128(x ^ 0xa0761d6478bd642fUL, s ^ 0xe7037ed1a0b428dbUL, hi, lo);
	mul128(hi ^ lo ^ s, 0x8ebc6af09c88c6e3UL, hi, lo);
	return hi ^ lo;
}

uint64_t mapHome(uint64_t h, uint64_t nb) {
	uint64_t hi, lo;
	mul128(h, nb, hi, lo);
	return hi;
}

// MAXKW bounds a key the kernels hold in registers: 64 bytes (a record
// fits one line).
#define MAXKW 16

// mapHashKey hashes the key words kw as the Map's built-in hash does for
// keys of 4, 8 and 16 bytes (hmode); hmode 0 means the CPU hashed it.
uint64_t mapHashKey(uint kw[MAXKW], uint hmode, uint64_t seed) {
	if (hmode == 4u) {
		return mapMix(uint64_t(kw[0]), seed);
	}
	uint64_t w0 = uint64_t(kw[0]) | (uint64_t(kw[1]) << 32);
	if (hmode == 8u) {
		return mapMix(w0, seed);
	}
	uint64_t w1 = uint64_t(kw[2]) | (uint64_t(kw[3]) << 32);
	return mapMix(w0 ^ mapMix(w1, seed), seed);
}

// mapCtl reads the control byte at address a.
uint mapCtl(uint64_t a) {
	return (ld(a & ~uint64_t(3)) >> (uint(a & 3u) * 8u)) & 0xffu;
}

bool mapKeyEq(uint64_t ra, uint kw[MAXKW], uint ks) {
	for (uint w = 0u; w < ks / 4u; w++) {
		if (ld(ra + w * 4u) != kw[w]) {
			return false;
		}
	}
	return true;
}

// mapKeyEqAt compares kb bytes of the record at ra with the key image at
// ka (both word-aligned); bytes past kb in the last word do not count.
bool mapKeyEqAt(uint64_t ra, uint64_t ka, uint kb) {
	uint full = kb / 4u;
	for (uint w = 0u; w < full; w++) {
		if (ld(ra + w * 4u) != ld(ka + w * 4u)) {
			return false;
		}
	}
	uint rem = kb & 3u;
	if (rem != 0u) {
		uint mask = (1u << (rem * 8u)) - 1u;
		return ((ld(ra + full * 4u) ^ ld(ka + full * 4u)) & mask) == 0u;
	}
	return true;
}

// mapBucketBytes is the distance between buckets: one line of pp slots,
// or one record of whole lines (pp 1: its stride rounded up to a line).
uint64_t mapBucketBytes(uint pp, uint stride) {
	return pp == 1u ? uint64_t((stride + 63u) & ~63u) : 64;
}

// mapFind looks up the key whose first kb bytes are at ka (hash h); it
// returns its location bucket<<3|slot and sets rec to its record's
// address, or returns ~0.
uint64_t mapFind(uint64_t segs, uint shift, uint64_t nb, uint64_t nbAll, uint pp, uint stride, uint kb,
		uint64_t h, uint64_t ka, out uint64_t rec) {
	uint fp = uint(h & 0x7fUL);
	uint64_t mask = (uint64_t(1) << shift) - 1;
	uint64_t bb = mapBucketBytes(pp, stride);
	for (uint64_t b = mapHome(h, nb); b < nbAll; b++) {
		uint64_t si = b >> shift, j = b & mask;
		uint64_t slots = ld64(segs + si * 16) + j * bb;
		uint64_t ca = ld64(segs + si * 16 + 8) + j * pp;
		bool stop = false;
		for (uint i = 0u; i < pp; i++) {
			uint c = mapCtl(ca + i);
			if (c == fp && mapKeyEqAt(slots + i * stride, ka, kb)) {
				rec = slots + i * stride;
				return (b << 3) | uint64_t(i);
			}
			if (c == 0x80u) {
				stop = true;
			}
		}
		if (stop) {
			break;
		}
	}
	rec = 0;
	return ~uint64_t(0);
}
