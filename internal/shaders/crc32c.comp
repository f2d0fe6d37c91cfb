#version 460
// crc32c computes the CRC-32C (Castagnoli, as hash/crc32 computes it:
// initial and final value all ones) of each chunk of a range in VRAM, one
// chunk per invocation, so that LoadSlice checks a block where DMA put it
// without the CPU reading it again; the CPU joins the chunks' checksums
// (snapfmt.CombineParts). Four 256-entry tables in shared memory take a
// 32-bit word a step (slicing by four); 16-byte loads.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(push_constant) uniform P {
	uint64_t src; // the range, 16-byte aligned
	uint64_t dst; // one uint per chunk
	uint n;       // bytes in the range, a multiple of 4
	uint chunk;   // bytes per chunk, a multiple of 16
	uint chunks;  // (n + chunk - 1) / chunk
} p;

shared uint tab[4][WG];

uint step(uint crc, uint w) {
	crc ^= w;
	return tab[3][crc & 0xffu] ^ tab[2][(crc >> 8) & 0xffu] ^ tab[1][(crc >> 16) & 0xffu] ^ tab[0][crc >> 24];
}

void main() {
	// tab[0][b] is the reflected polynomial's table for byte b; tab[k][b]
	// that of byte b followed by k zero bytes.
	uint c = TID;
	for (int k = 0; k < 8; k++) {
		c = (c & 1u) != 0u ? (c >> 1) ^ 0x82f63b78u : c >> 1;
	}
	tab[0][TID] = c;
	barrier();
	for (int k = 1; k < 4; k++) {
		c = tab[0][c & 0xffu] ^ (c >> 8);
		tab[k][TID] = c;
	}
	barrier();
	for (uint i = GID; i < p.chunks; i += GSTRIDE) {
		uint64_t a = p.src + uint64_t(i) * p.chunk;
		uint len = min(p.chunk, p.n - i * p.chunk);
		uint crc = 0xffffffffu;
		uint w = 0u;
		for (; w + 16u <= len; w += 16u) {
			uvec4 v = Vec4(a + w).v;
			crc = step(crc, v.x);
			crc = step(crc, v.y);
			crc = step(crc, v.z);
			crc = step(crc, v.w);
		}
		for (; w < len; w += 4u) {
			crc = step(crc, ld(a + w));
		}
		st(p.dst + uint64_t(i) * 4u, ~crc);
	}
}
