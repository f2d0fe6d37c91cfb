#version 460
// reduce sums numbers: each workgroup of a dispatch adds up its share of
// n values and stores one partial in the 64-bit slot out[slot +
// workgroup]; a last one-workgroup dispatch (kinds 6 and 7) adds the
// partials into out[0]. Integer sums wrap, like Go's +, so they are exact
// whatever the order; float sums depend on the order (a tree here, not a
// loop). 64-bit floats are in reduce_f64, which needs shaderFloat64.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(push_constant) uniform P {
	uint64_t src;
	uint64_t dst;
	uint n;    // values (kinds 0-5) or partials (kinds 6, 7)
	uint kind; // 0 32-bit ints, 1 64-bit ints, 2 float32, 4 8-bit ints, 5 16-bit ints; 6, 7: add u64 / f32 partials
	uint slot;
} p;

shared uint64_t sumI[WG];
shared float sumF[WG];

uint64_t reduceI(uint64_t v) {
	sumI[TID] = v;
	barrier();
	for (uint h = WG / 2u; h > 0u; h >>= 1) {
		if (TID < h) {
			sumI[TID] += sumI[TID + h];
		}
		barrier();
	}
	return sumI[0];
}

float reduceF(float v) {
	sumF[TID] = v;
	barrier();
	for (uint h = WG / 2u; h > 0u; h >>= 1) {
		if (TID < h) {
			sumF[TID] += sumF[TID + h];
		}
		barrier();
	}
	return sumF[0];
}

void main() {
	uint64_t at = p.dst + uint64_t(p.slot + gl_WorkGroupID.x) * 8;
	if (p.kind == 2u || p.kind == 7u) {
		float s = 0.0;
		uint step = p.kind == 7u ? 8u : 4u;
		for (uint i = GID; i < p.n; i += GSTRIDE) {
			s += uintBitsToFloat(ld(p.src + uint64_t(i) * step));
		}
		s = reduceF(s);
		if (TID == 0u) {
			st(at, floatBitsToUint(s));
			st(at + 4, 0u);
		}
		return;
	}
	uint64_t s = 0;
	if (p.kind == 0u) {
		for (uint i = GID; i < p.n; i += GSTRIDE) {
			s += ld(p.src + uint64_t(i) * 4);
		}
	} else if (p.kind == 1u || p.kind == 6u) {
		for (uint i = GID; i < p.n; i += GSTRIDE) {
			s += ld64(p.src + uint64_t(i) * 8);
		}
	} else {
		// 8- or 16-bit values, a word at a time; the last word may be ragged.
		uint per = p.kind == 4u ? 4u : 2u;
		uint bits = 32u / per;
		uint mask = (1u << bits) - 1u;
		uint words = (p.n + per - 1u) / per;
		for (uint w = GID; w < words; w += GSTRIDE) {
			uint v = ld(p.src + uint64_t(w) * 4);
			for (uint e = 0u; e < per && w * per + e < p.n; e++) {
				s += (v >> (e * bits)) & mask;
			}
		}
	}
	s = reduceI(s);
	if (TID == 0u) {
		Dword(at).v = s;
	}
}
