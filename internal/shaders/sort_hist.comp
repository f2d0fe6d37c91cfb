#version 460
// sort_hist counts, for each tile of TILE keys, how many have each value
// of the 8-bit digit at shift, and stores the counts digit-major
// (hist[digit * tiles + tile]) so that one exclusive scan over hist gives
// every tile the place where its keys of each digit go.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_ballot : require
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
		// Every load first, so that all are in flight at once.
		uint digits[ITEMS];
		[[unroll]] for (uint k = 0u; k < ITEMS; k++) {
			// Striped: neighbouring invocations read neighbouring keys.
			uint i = t * TILE + k * WG + TID;
			uint d = 256u; // past the end: counted nowhere
			if (i < p.n) {
				uint64_t key = p.kw == 2u ? ld64(p.keys + uint64_t(i) * 8) : uint64_t(ld(p.keys + uint64_t(i) * 4));
				d = uint(key >> p.shift) & 0xffu;
			}
			digits[k] = d;
		}
		[[unroll]] for (uint k = 0u; k < ITEMS; k++) {
			uint d = digits[k];
			// A subgroup whose keys share the digit (a byte that few keys
			// vary in) adds once: same-address atomics would serialise.
			if (subgroupAllEqual(d)) {
				uint m = subgroupBallotBitCount(subgroupBallot(true));
				if (subgroupElect() && d < 256u) {
					atomicAdd(counts[d], m);
				}
			} else if (d < 256u) {
				atomicAdd(counts[d], 1u);
			}
		}
		barrier();
		st(p.hist + (uint64_t(TID) * p.tiles + t) * 4, counts[TID]);
		barrier();
	}
}
