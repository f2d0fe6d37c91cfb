#version 460
// bt_get finishes a batch of BTree lookups (BTree.GetBatch): the CPU found
// each key's leaf in the host index; each invocation takes one query
// (leaf address, key, entry count), binary-searches the leaf's sorted key
// array in VRAM, and writes the value (zero when absent) and a found byte
// per key beside the queries (a device-local buffer). Keys are 4- or
// 8-byte integers, compared as unsigned after flipping the sign bit of
// signed ones.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(push_constant) uniform P {
	uint64_t q;     // n queries of 24 bytes: leaf address (0: none), key, count
	uint64_t vals;  // n values, vs bytes apart
	uint64_t found; // n bytes, rounded up to a word
	uint n;
	uint ks;
	uint vs;
	uint keyOff;
	uint valOff;
	uint perLine; // values: records per group (0: dense, vs apart)
	uint group;
	uint stride;
	uint sgn;     // keys are signed
} p;

uint64_t keyAt(uint64_t a) {
	if (p.ks == 8u) {
		return (uint64_t(ld(a)) | (uint64_t(ld(a + 4)) << 32)) ^ (p.sgn != 0u ? 0x8000000000000000UL : 0UL);
	}
	return uint64_t(ld(a) ^ (p.sgn != 0u ? 0x80000000u : 0u));
}

shared uint fsh[WG];

void main() {
	// One key per invocation, so that a warp's reads of keys and writes
	// of values are contiguous; the found bytes are packed into words in
	// shared memory. The loop bound is uniform per workgroup (barriers).
	for (uint base = gl_WorkGroupID.x * WG; base < p.n; base += GSTRIDE) {
		uint i = base + TID;
		uint f = 0u;
		if (i < p.n) {
			uint64_t qa = p.q + uint64_t(i) * 24;
			uint64_t leaf = ld64(qa);
			uint64_t k = keyAt(qa + 8);
			uint cnt = ld(qa + 16);
			uint64_t dst = p.vals + uint64_t(i) * p.vs;
			uint lo = 0u, hi = leaf == 0 ? 0u : cnt;
			uint64_t keys = leaf + p.keyOff;
			while (lo < hi) {
				uint mid = (lo + hi) / 2u;
				if (keyAt(keys + uint64_t(mid) * p.ks) < k) {
					lo = mid + 1u;
				} else {
					hi = mid;
				}
			}
			uint n = leaf == 0 ? 0u : cnt;
			if (lo < n && keyAt(keys + uint64_t(lo) * p.ks) == k) {
				f = 1u;
				uint64_t va = leaf + p.valOff + (p.perLine == 0u ? uint64_t(lo) * p.vs : recOff(lo, p.perLine, p.group, p.stride));
				for (uint w = 0u; w < p.vs / 4u; w++) {
					st(dst + w * 4u, ld(va + w * 4u));
				}
			} else {
				for (uint w = 0u; w < p.vs / 4u; w++) {
					st(dst + w * 4u, 0u);
				}
			}
		}
		fsh[TID] = f;
		barrier();
		if (TID < WG / 4u && base + TID * 4u < p.n) {
			uint x = TID * 4u;
			st(p.found + uint64_t(base + x), fsh[x] | (fsh[x + 1u] << 8) | (fsh[x + 2u] << 16) | (fsh[x + 3u] << 24));
		}
		barrier();
	}
}
