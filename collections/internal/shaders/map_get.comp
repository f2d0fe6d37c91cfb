#version 460
// map_get answers a batch of Map lookups (Map.GetBatch): each invocation
// takes one key from the batch's device-local copy, hashes it (or reads
// the CPU's hash; hmode 1: string keys, as images the CPU made), probes
// the table (control bytes from their device
// copy, slots in VRAM), and writes each value (zero when absent) and a
// found byte per key beside the keys; one copy takes them to the host.
// With the top bit of valOff set it writes each key's location instead
// of its value (bucket<<3|slot, ~0 when absent), followed by the record's
// bytes from valOff (the rest of the bits) up to vs-8 of them: the slots
// that a batch of writes overwrites, and the string value fields it
// replaces (Map's recorded Puts with string keys).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "map.glsl"

layout(push_constant) uniform P {
	uint64_t keys;   // n keys, ks bytes apart
	uint64_t hashes; // n hashes (hmode 0); hmode 1: n uint32 image indices
	uint64_t segs;   // per segment: slots address, control bytes address
	uint64_t vals;   // n values, vs bytes apart
	uint64_t found;  // n bytes, rounded up to a word
	uint64_t seed;
	uint64_t nb;
	uint64_t nbAll;
	uint n;
	uint ks;
	uint vs;
	uint stride;
	uint valOff;
	uint pp;
	uint shift;
	uint hmode;
} p;

shared uint fsh[WG];

void main() {
	// One key per invocation, so that a warp's reads of keys and writes
	// of values are contiguous; the found bytes are packed into words in
	// shared memory. The loop bound is uniform per workgroup (barriers).
	for (uint base = gl_WorkGroupID.x * WG; base < p.n; base += GSTRIDE) {
		uint i = base + TID;
		uint f = 0u;
		if (i < p.n) {
			uint64_t ka = p.keys + uint64_t(i) * p.ks;
			uint64_t h;
			uint kb = p.ks;
			uint64_t loc = ~uint64_t(0);
			uint64_t rec;
			if (p.hmode == 0u) {
				h = ld64(p.hashes + uint64_t(i) * 8);
			} else if (p.hmode == 1u) {
				// A string key's image: its hash, then the key's field as a
				// record holds it inline (length, bytes). Only the length
				// and the bytes count; a key too long to be inline has
				// length ~0 and is left to the CPU. Invocation i takes the
				// i-th image in hash order (hashes holds that order), so
				// that neighbouring invocations probe neighbouring parts of
				// the table; answers stay in that order.
				ka = p.keys + uint64_t(ld(p.hashes + uint64_t(i) * 4)) * p.ks;
				h = ld64(ka);
				uint len = ld(ka + 8);
				kb = len <= p.ks - 12u ? 12u + len : 0u;
			} else {
				uint kw[MAXKW];
				for (uint w = 0u; w < min(4u, p.ks / 4u); w++) {
					kw[w] = ld(ka + w * 4u);
				}
				h = mapHashKey(kw, p.hmode, p.seed);
			}
			if (kb != 0u) {
				loc = mapFind(p.segs, p.shift, p.nb, p.nbAll, p.pp, p.stride, kb, h, ka, rec);
			}
			uint64_t dst = p.vals + uint64_t(i) * p.vs;
			if ((p.valOff & 0x80000000u) != 0u) {
				f = loc != ~uint64_t(0) ? 1u : 0u;
				st(dst, uint(loc));
				st(dst + 4u, uint(loc >> 32));
				uint vo = p.valOff & 0x7fffffffu;
				for (uint w = 0u; f != 0u && w < (p.vs - 8u) / 4u; w++) {
					st(dst + 8u + w * 4u, ld(rec + vo + w * 4u));
				}
			} else if (loc != ~uint64_t(0)) {
				f = 1u;
				for (uint w = 0u; w < p.vs / 4u; w++) {
					st(dst + w * 4u, ld(rec + p.valOff + w * 4u));
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
