#version 460
// bt_route finds each key's leaf for BTree.GetBatch on the GPU, from the
// device copy of the bottom of the host index (btree_route.go): per leaf
// in key order its lower bound (fence, as an unsigned 64-bit value: the
// sign bit of signed keys flipped), device address and entry count. Each
// invocation binary-searches the fences and writes the query bt_get reads
// (leaf address, the key's bits, entry count), so that no index walk runs
// on the CPU.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(push_constant) uniform P {
	uint64_t keys;   // n keys, ks bytes apart
	uint64_t q;      // n queries of 24 bytes (bt_get's)
	uint64_t fences; // nl fences, 8 bytes each
	uint64_t addrs;  // nl leaf addresses
	uint64_t cnts;   // nl entry counts, 4 bytes each
	uint n;
	uint ks;
	uint sgn;
	uint nl;
} p;

void main() {
	for (uint i = GID; i < p.n; i += GSTRIDE) {
		uint64_t ka = p.keys + uint64_t(i) * p.ks;
		uint w0 = ld(ka);
		uint w1 = p.ks == 8u ? ld(ka + 4) : 0u;
		uint64_t k;
		if (p.ks == 8u) {
			k = (uint64_t(w0) | (uint64_t(w1) << 32)) ^ (p.sgn != 0u ? 0x8000000000000000UL : 0UL);
		} else {
			k = uint64_t(w0 ^ (p.sgn != 0u ? 0x80000000u : 0u));
		}
		// The leaf is the last whose fence is <= k; the first leaf's
		// fence does not count (it takes every key below the second's).
		uint lo = 1u, hi = p.nl;
		while (lo < hi) {
			uint mid = (lo + hi) / 2u;
			if (ld64(p.fences + uint64_t(mid) * 8) <= k) {
				lo = mid + 1u;
			} else {
				hi = mid;
			}
		}
		uint j = lo - 1u;
		uint64_t qa = p.q + uint64_t(i) * 24;
		Dword(qa).v = ld64(p.addrs + uint64_t(j) * 8);
		st(qa + 8, w0);
		st(qa + 12, w1);
		st(qa + 16, ld(p.cnts + uint64_t(j) * 4));
	}
}
