#version 460
// sort_hist counts, for each tile of TILE keys, how many have each value
// of the 8-bit digit at shift, and stores the counts digit-major
// (hist[digit * tiles + tile]) so that one exclusive scan over hist gives
// every tile the place where its keys of each digit go.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "sort.glsl"

layout(push_constant) uniform P {
	uint64_t keys;
	uint64_t hist;
	uint n;
	uint tiles;
	uint shift;
	uint kw;
} p;

shared uint counts[256];

void main() {
	for (uint t = gl_WorkGroupID.x; t < p.tiles; t += gl_NumWorkGroups.x) {
		counts[TID] = 0u;
		barrier();
		for (uint k = 0u; k < ITEMS; k++) {
			// Striped: neighbouring invocations read neighbouring keys.
			uint i = t * TILE + k * WG + TID;
			if (i < p.n) {
				uint d;
				if (p.kw == 2u) {
					uint64_t a = p.keys + uint64_t(i) * 8;
					d = digitOf(ld(a), ld(a + 4), p.shift);
				} else {
					d = digitOf(ld(p.keys + uint64_t(i) * 4), 0u, p.shift);
				}
				atomicAdd(counts[d], 1u);
			}
		}
		barrier();
		st(p.hist + (uint64_t(TID) * p.tiles + t) * 4, counts[TID]);
		barrier();
	}
}
