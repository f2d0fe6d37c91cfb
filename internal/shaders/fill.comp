#version 460
// fill replicates a pattern over a range: the first period 16-byte units
// at dst already hold it (written by the same command buffer), and unit i
// of the rest becomes unit i % period. The pattern is one whole number of
// record groups that is also a whole number of 16-byte units.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(push_constant) uniform P {
	uint64_t dst;
	uint n;      // 16-byte units in the range, the pattern included
	uint period; // 16-byte units in the pattern
} p;

void main() {
	for (uint i = GID + p.period; i < p.n; i += GSTRIDE) {
		Vec4(p.dst + uint64_t(i) * 16).v = Vec4(p.dst + uint64_t(i % p.period) * 16).v;
	}
}
