#version 460
// sort_keys reads the sort keys of one segment's records into the key
// array, mapped so that unsigned order is the wanted order: signed keys
// flip the sign bit; floats flip the sign bit when positive and every bit
// when negative (IEEE 754 total order: -NaN < -Inf < ... < -0 < +0 < ...
// < +Inf < +NaN). With vals set it also writes each record's index. With
// bits set it ORs and ANDs all mapped keys into bits[0..1] and bits[2..3]
// (low word first): a digit on which OR and AND agree is the same in every
// key, and its pass can be skipped.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(push_constant) uniform P {
	uint64_t src;  // the segment
	uint64_t keys; // kw words per key
	uint64_t vals; // 0, or one word per key
	uint64_t bits; // 0, or 4 words: OR of the keys (lo, hi), AND (lo, hi)
	uint n;        // records in this segment
	uint first;    // index of the segment's first record in the slice
	uint perLine;
	uint group;
	uint stride;
	uint field;  // the key's byte offset in the record
	uint kbytes; // 1, 2, 4 or 8
	uint kind;   // 0 unsigned, 1 signed, 2 float
} p;

shared uint orLo, orHi, andLo, andHi;

void main() {
	if (TID == 0u) {
		orLo = 0u;
		orHi = 0u;
		andLo = 0xffffffffu;
		andHi = 0xffffffffu;
	}
	barrier();
	uint oLo = 0u, oHi = 0u, aLo = 0xffffffffu, aHi = 0xffffffffu;
	for (uint j = GID; j < p.n; j += GSTRIDE) {
		uint64_t a = p.src + recOff(j, p.perLine, p.group, p.stride) + p.field;
		uint g = p.first + j;
		uint lo, hi = 0u;
		if (p.kbytes == 8u && (a & 7) == 0) {
			uvec2 k = unpackUint2x32(ld64(a));
			lo = k.x;
			hi = k.y;
		} else if (p.kbytes == 8u) {
			lo = ld(a);
			hi = ld(a + 4);
		} else if (p.kbytes == 4u) {
			lo = ld(a);
		} else {
			uint w = ld(a & ~uint64_t(3));
			lo = (w >> (uint(a & 3) * 8u)) & (p.kbytes == 1u ? 0xffu : 0xffffu);
		}
		if (p.kind == 1u) {
			if (p.kbytes == 8u) {
				hi ^= 0x80000000u;
			} else {
				lo ^= 1u << (p.kbytes * 8u - 1u);
			}
		} else if (p.kind == 2u) {
			if (p.kbytes == 8u) {
				uint m = (hi >> 31) != 0u ? 0xffffffffu : 0u;
				lo ^= m;
				hi ^= m | 0x80000000u;
			} else {
				lo ^= (lo >> 31) != 0u ? 0xffffffffu : 0x80000000u;
			}
		}
		if (p.kbytes == 8u) {
			Dword(p.keys + uint64_t(g) * 8).v = packUint2x32(uvec2(lo, hi));
		} else {
			st(p.keys + uint64_t(g) * 4, lo);
		}
		if (p.vals != 0) {
			st(p.vals + uint64_t(g) * 4, g);
		}
		oLo |= lo;
		oHi |= hi;
		aLo &= lo;
		aHi &= hi;
	}
	if (p.bits == 0) {
		return;
	}
	atomicOr(orLo, oLo);
	atomicOr(orHi, oHi);
	atomicAnd(andLo, aLo);
	atomicAnd(andHi, aHi);
	barrier();
	if (TID == 0u) {
		atomicOr(Word(p.bits).v, orLo);
		atomicOr(Word(p.bits + 4).v, orHi);
		atomicAnd(Word(p.bits + 8).v, andLo);
		atomicAnd(Word(p.bits + 12).v, andHi);
	}
}
