#version 460
// gather copies n records of esize bytes, each from its own device address,
// into one dense array: the GPU side of Slice.Gather, and of any batch read
// whose addresses the host computes. Each invocation moves one 16-byte
// unit (mode 0: records and addresses are multiples of 16), one word
// (mode 1: multiples of 4), or assembles one output word from bytes
// (mode 2, any size: it loads the aligned words that hold them, so no two
// invocations ever write the same word).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(push_constant) uniform P {
	uint64_t addrs; // n uint64 source addresses
	uint64_t dst;   // n*esize bytes, rounded up to a word
	uint n;
	uint esize;
	uint mode;
} p;

void main() {
	if (p.mode == 0u) {
		uint q = p.esize / 16u;
		uint items = p.n * q;
		for (uint i = GID; i < items; i += GSTRIDE) {
			uint e = i / q;
			uint64_t src = ld64(p.addrs + uint64_t(e) * 8) + uint64_t(i - e * q) * 16;
			Vec4(p.dst + uint64_t(i) * 16).v = Vec4(src).v;
		}
	} else if (p.mode == 1u) {
		uint q = p.esize / 4u;
		uint items = p.n * q;
		for (uint i = GID; i < items; i += GSTRIDE) {
			uint e = i / q;
			uint64_t src = ld64(p.addrs + uint64_t(e) * 8) + uint64_t(i - e * q) * 4;
			st(p.dst + uint64_t(i) * 4, ld(src));
		}
	} else {
		uint total = p.n * p.esize;
		uint words = (total + 3u) / 4u;
		for (uint i = GID; i < words; i += GSTRIDE) {
			uint w = 0u;
			for (uint b = 0u; b < 4u; b++) {
				uint g = i * 4u + b;
				if (g >= total) {
					break;
				}
				uint e = g / p.esize;
				uint64_t src = ld64(p.addrs + uint64_t(e) * 8) + (g - e * p.esize);
				uint v = ld(src & ~uint64_t(3));
				w |= ((v >> (uint(src & 3) * 8u)) & 0xffu) << (b * 8u);
			}
			st(p.dst + uint64_t(i) * 4, w);
		}
	}
}
