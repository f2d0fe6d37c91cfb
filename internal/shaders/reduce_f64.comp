#version 460
// reduce_f64 sums floats in float64 (kind 2: float32 values, 3: float64):
// each workgroup of a dispatch adds up its share of n values, each
// invocation in a loop and then the workgroup as a tree, and stores one
// float64 partial in out[slot + workgroup]; the CPU adds the partials.
// Float32 values are widened before they are added, so their sum does not
// lose the low bits of each value once it grows past 2^24 times them. A
// module of its own because it needs the shaderFloat64 feature.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(push_constant) uniform P {
	uint64_t src;
	uint64_t dst;
	uint n;
	uint kind;
	uint slot;
} p;

layout(buffer_reference, std430, buffer_reference_align = 8) buffer F64 { double v; };

shared double sumD[WG];

void main() {
	double s = 0.0;
	if (p.kind == 2u) {
		for (uint i = GID; i < p.n; i += GSTRIDE) {
			s += double(uintBitsToFloat(ld(p.src + uint64_t(i) * 4)));
		}
	} else {
		for (uint i = GID; i < p.n; i += GSTRIDE) {
			s += F64(p.src + uint64_t(i) * 8).v;
		}
	}
	sumD[TID] = s;
	barrier();
	for (uint h = WG / 2u; h > 0u; h >>= 1) {
		if (TID < h) {
			sumD[TID] += sumD[TID + h];
		}
		barrier();
	}
	if (TID == 0u) {
		F64(p.dst + uint64_t(p.slot + gl_WorkGroupID.x) * 8).v = sumD[0];
	}
}
