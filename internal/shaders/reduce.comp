#version 460
// reduce sums integers exactly: each workgroup of a dispatch adds up its
// share of n values and stores one 128-bit two's-complement partial (low
// word, then high word) in out[slot + workgroup], 16 bytes a slot; the CPU
// adds the partials. 128 bits hold the sum of any count of 64-bit values,
// so nothing wraps, and the total is the same whatever the order. Floats
// are in reduce_f64.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(push_constant) uniform P {
	uint64_t src;
	uint64_t dst;
	uint n;
	uint kind; // bits 0-1: log2 of the value's bytes; bit 4: signed
	uint slot;
} p;

shared uint64_t sumLo[WG];
shared uint64_t sumHi[WG];

void main() {
	uint lg = p.kind & 3u;
	bool sgn = (p.kind & 16u) != 0u;
	uint64_t lo = uint64_t(0);
	uint64_t hi = uint64_t(0);
	if (lg == 3u) {
		for (uint i = GID; i < p.n; i += GSTRIDE) {
			uint64_t v = ld64(p.src + uint64_t(i) * 8);
			uint64_t t = lo + v;
			hi += (t < lo ? uint64_t(1) : uint64_t(0)) + ((sgn && int64_t(v) < int64_t(0)) ? ~uint64_t(0) : uint64_t(0));
			lo = t;
		}
	} else {
		// Values of at most 32 bits: an invocation adds fewer than 2^24 of
		// them (n < 2^32, at least one workgroup), so 64 bits cannot wrap.
		int64_t s = int64_t(0);
		if (lg == 2u) {
			for (uint i = GID; i < p.n; i += GSTRIDE) {
				uint v = ld(p.src + uint64_t(i) * 4);
				s += sgn ? int64_t(int(v)) : int64_t(v);
			}
		} else {
			// 8- or 16-bit values, a word at a time; the last word may be ragged.
			uint per = lg == 0u ? 4u : 2u;
			int bits = int(32u / per);
			uint words = (p.n + per - 1u) / per;
			for (uint w = GID; w < words; w += GSTRIDE) {
				uint v = ld(p.src + uint64_t(w) * 4);
				for (uint e = 0u; e < per && w * per + e < p.n; e++) {
					if (sgn) {
						s += int64_t(bitfieldExtract(int(v), int(e) * bits, bits));
					} else {
						s += int64_t(bitfieldExtract(v, int(e) * bits, bits));
					}
				}
			}
		}
		lo = uint64_t(s);
		hi = s < int64_t(0) ? ~uint64_t(0) : uint64_t(0);
	}
	sumLo[TID] = lo;
	sumHi[TID] = hi;
	barrier();
	for (uint h = WG / 2u; h > 0u; h >>= 1) {
		if (TID < h) {
			uint64_t a = sumLo[TID];
			uint64_t t = a + sumLo[TID + h];
			sumHi[TID] += sumHi[TID + h] + (t < a ? uint64_t(1) : uint64_t(0));
			sumLo[TID] = t;
		}
		barrier();
	}
	if (TID == 0u) {
		uint64_t at = p.dst + uint64_t(p.slot + gl_WorkGroupID.x) * 16;
		Dword(at).v = sumLo[0];
		Dword(at + 8).v = sumHi[0];
	}
}
