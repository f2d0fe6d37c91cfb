#version 460
// sort_store writes sorted keys back into one segment of a Slice of plain
// numbers, undoing sort_keys' mapping. Records of 1 or 2 bytes share words,
// so then each invocation assembles one whole word (keeping the bytes past
// the end), and no two invocations write the same word.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(push_constant) uniform P {
	uint64_t keys;
	uint64_t dst;  // the segment
	uint n;        // records in this segment
	uint first;    // index of the segment's first record in the slice
	uint esize;    // 1, 2, 4 or 8
	uint kind;     // 0 unsigned, 1 signed, 2 float
} p;

uint unmap32(uint k) {
	if (p.kind == 1u) {
		return k ^ (1u << (p.esize * 8u - 1u));
	}
	if (p.kind == 2u) {
		return (k >> 31) != 0u ? k ^ 0x80000000u : ~k;
	}
	return k;
}

void main() {
	if (p.esize == 8u) {
		for (uint j = GID; j < p.n; j += GSTRIDE) {
			// One 64-bit load and store a key: both arrays are dense.
			uvec2 k = unpackUint2x32(ld64(p.keys + uint64_t(p.first + j) * 8));
			uint lo = k.x, hi = k.y;
			if (p.kind == 1u) {
				hi ^= 0x80000000u;
			} else if (p.kind == 2u) {
				if ((hi >> 31) != 0u) {
					hi ^= 0x80000000u;
				} else {
					hi = ~hi;
					lo = ~lo;
				}
			}
			Dword(p.dst + uint64_t(j) * 8).v = packUint2x32(uvec2(lo, hi));
		}
	} else if (p.esize == 4u) {
		for (uint j = GID; j < p.n; j += GSTRIDE) {
			st(p.dst + uint64_t(j) * 4, unmap32(ld(p.keys + uint64_t(p.first + j) * 4)));
		}
	} else {
		uint per = 4u / p.esize;
		uint bits = p.esize * 8u;
		uint mask = (1u << bits) - 1u;
		uint words = (p.n + per - 1u) / per;
		for (uint w = GID; w < words; w += GSTRIDE) {
			uint j0 = w * per;
			uint out_ = j0 + per <= p.n ? 0u : ld(p.dst + uint64_t(w) * 4);
			for (uint e = 0u; e < per && j0 + e < p.n; e++) {
				uint v = unmap32(ld(p.keys + uint64_t(p.first + j0 + e) * 4)) & mask;
				out_ = (out_ & ~(mask << (e * bits))) | (v << (e * bits));
			}
			st(p.dst + uint64_t(w) * 4, out_);
		}
	}
}
