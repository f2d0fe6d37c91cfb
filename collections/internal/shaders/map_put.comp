#version 460
// map_put applies a batch of Map stores (Map.PutBatch) in four phases,
// each a dispatch with a barrier after it:
//
//   0. clear the dedup table and the counters;
//   1. hash each key and enter it into the dedup table (open addressing on
//      the key's hash, slots claimed with atomicCompSwap); the largest
//      index of each distinct key wins (atomicMax): the last write of a key
//      wins, as with sequential Puts;
//   2. each winner probes the table: found (st 1, loc) or new (st 2,
//      counted); the CPU then grows the table if the new keys need room;
//   3. found keys get their value written; new keys claim the first free
//      control byte on their probe path with atomicCompSwap on its word of
//      the device copy of the control bytes, and write their record. The
//      CPU copies st/loc back and sets the same control bytes on the host.
//
// Scratch layout (scr), from n, ks and tsize: keys (n*ks, rounded to 16),
// hashes (8n), dedup slot (4n), state (4n), location (8n), counters (64
// bytes), dedup table (4*tsize), winners (4*tsize). kernel.go's twin is
// collections' mapPutLayout.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "map.glsl"

layout(buffer_reference, std430, buffer_reference_align = 4) buffer AWord { uint v; };

layout(push_constant) uniform P {
	uint64_t scr;   // scratch, laid out as above
	uint64_t vals;  // n values, vs bytes apart (a device-local copy)
	uint64_t segs;  // per segment: slots address, control bytes address
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
	uint phase;
	uint tsize;
} p;

uint64_t r16(uint64_t x) { return (x + 15) & ~uint64_t(15); }

void main() {
	uint64_t n = p.n;
	uint64_t kOff = p.scr;
	uint64_t hOff = kOff + r16(n * p.ks);
	uint64_t dOff = hOff + n * 8;
	uint64_t sOff = dOff + r16(n * 4);
	uint64_t lOff = sOff + r16(n * 4);
	uint64_t cOff = lOff + n * 8;
	uint64_t tOff = cOff + 64;
	uint64_t wOff = tOff + uint64_t(p.tsize) * 4;

	if (p.phase == 0u) {
		for (uint s = GID; s < p.tsize; s += GSTRIDE) {
			st(tOff + uint64_t(s) * 4, 0xffffffffu);
			st(wOff + uint64_t(s) * 4, 0u);
		}
		if (GID < 16u) {
			st(cOff + GID * 4u, 0u);
		}
		return;
	}
	for (uint i = GID; i < p.n; i += GSTRIDE) {
		uint kw[MAXKW];
		uint64_t ka = kOff + uint64_t(i) * p.ks;
		for (uint w = 0u; w < p.ks / 4u; w++) {
			kw[w] = ld(ka + w * 4u);
		}
		if (p.phase == 1u) {
			uint64_t h;
			if (p.hmode == 0u) {
				h = ld64(hOff + uint64_t(i) * 8);
			} else {
				h = mapHashKey(kw, p.hmode, p.seed);
				Dword(hOff + uint64_t(i) * 8).v = h;
			}
			uint mask = p.tsize - 1u;
			uint s = uint(h ^ (h >> 29)) & mask;
			for (;;) {
				uint prev = atomicCompSwap(AWord(tOff + uint64_t(s) * 4).v, 0xffffffffu, i);
				if (prev == 0xffffffffu || mapKeyEq(kOff + uint64_t(prev) * p.ks, kw, p.ks)) {
					atomicMax(AWord(wOff + uint64_t(s) * 4).v, i);
					st(dOff + uint64_t(i) * 4, s);
					break;
				}
				s = (s + 1u) & mask;
			}
			continue;
		}
		uint64_t h = ld64(hOff + uint64_t(i) * 8);
		if (p.phase == 2u) {
			uint s = ld(dOff + uint64_t(i) * 4);
			if (ld(wOff + uint64_t(s) * 4) != i) {
				st(sOff + uint64_t(i) * 4, 0u); // a later store of the same key wins
				continue;
			}
			uint64_t rec;
			uint64_t loc = mapFind(p.segs, p.shift, p.nb, p.nbAll, p.pp, p.stride, p.ks, h, ka, rec);
			if (loc != ~uint64_t(0)) {
				st(sOff + uint64_t(i) * 4, 1u);
				Dword(lOff + uint64_t(i) * 8).v = loc;
			} else {
				st(sOff + uint64_t(i) * 4, 2u);
				atomicAdd(AWord(cOff).v, 1u);
			}
			continue;
		}
		// Phase 3.
		uint state = ld(sOff + uint64_t(i) * 4);
		uint64_t va = p.vals + uint64_t(i) * p.vs;
		uint64_t mask = (uint64_t(1) << p.shift) - 1;
		if (state == 1u) {
			uint64_t loc = Dword(lOff + uint64_t(i) * 8).v;
			uint64_t b = loc >> 3;
			uint64_t rec = ld64(p.segs + (b >> p.shift) * 16) + (b & mask) * 64 + uint(loc & 7u) * p.stride;
			for (uint w = 0u; w < p.vs / 4u; w++) {
				st(rec + p.valOff + w * 4u, ld(va + w * 4u));
			}
			continue;
		}
		if (state != 2u) {
			continue;
		}
		uint fp = uint(h & 0x7fUL);
		uint64_t home = mapHome(h, p.nb);
		bool done = false;
		for (uint64_t b = home; b < p.nbAll && !done; b++) {
			uint64_t si = b >> p.shift, j = b & mask;
			uint64_t ca = ld64(p.segs + si * 16 + 8) + j * p.pp;
			for (uint e = 0u; e < p.pp && !done; e++) {
				uint64_t a = ca + e;
				uint64_t wa = a & ~uint64_t(3);
				uint sh = uint(a & 3u) * 8u;
				uint w = ld(wa);
				for (;;) {
					uint c = (w >> sh) & 0xffu;
					if ((c & 0x80u) == 0u) {
						break; // full
					}
					uint nw = (w & ~(0xffu << sh)) | (fp << sh);
					uint old = atomicCompSwap(AWord(wa).v, w, nw);
					if (old == w) {
						uint64_t rec = ld64(p.segs + si * 16) + j * 64 + e * p.stride;
						for (uint x = 0u; x < p.stride / 4u; x++) {
							uint o = x * 4u;
							uint v = 0u;
							if (o < p.ks) {
								v = kw[x];
							} else if (o >= p.valOff && o < p.valOff + p.vs) {
								v = ld(va + (o - p.valOff));
							}
							st(rec + o, v);
						}
						Dword(lOff + uint64_t(i) * 8).v = (b << 3) | uint64_t(e);
						st(sOff + uint64_t(i) * 4, 3u | (fp << 8) | (c == 0xfeu ? 1u << 16 : 0u));
						atomicMax(AWord(cOff + 4).v, uint(min(b - home, uint64_t(0xffffffffu))));
						done = true;
						break;
					}
					w = old;
				}
			}
		}
		if (!done) {
			st(sOff + uint64_t(i) * 4, 4u); // ran off the table's tail: the CPU stores it
		}
	}
}
