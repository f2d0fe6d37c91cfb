#version 460
// sort_scatter moves each tile's keys (and values) to their places for one
// 8-bit digit. The tile is first sorted by the digit in shared memory,
// stably, by four 2-bit splits (each one workgroup scan of four packed
// counters); then the keys of each digit form one run, which goes to
// hist[digit * tiles + tile] (the scanned histogram) onwards. Stability of
// every pass is what makes the least-significant-digit sort correct.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "scan.glsl"
#include "sort.glsl"

layout(push_constant) uniform P {
	uint64_t kin;
	uint64_t kout;
	uint64_t vin;  // 0 when only keys move
	uint64_t vout;
	uint64_t hist; // scanned: where each tile's run of each digit starts
	uint n;
	uint tiles;
	uint shift;
	uint kw;
} p;

shared uint xchg[TILE];
shared uint runStart[256]; // in the sorted tile
shared uint dest[256];     // in the output

uint lo[ITEMS];
uint hi[ITEMS];
uint val[ITEMS];
uint pos[ITEMS];

// exchange puts x[k] at pos[k] of the tile and reads the tile back
// blocked: invocation i holds positions i*ITEMS .. i*ITEMS+ITEMS-1.
void exchangeLo() {
	for (uint k = 0u; k < ITEMS; k++) xchg[pos[k]] = lo[k];
	barrier();
	for (uint k = 0u; k < ITEMS; k++) lo[k] = xchg[TID * ITEMS + k];
	barrier();
}
void exchangeHi() {
	for (uint k = 0u; k < ITEMS; k++) xchg[pos[k]] = hi[k];
	barrier();
	for (uint k = 0u; k < ITEMS; k++) hi[k] = xchg[TID * ITEMS + k];
	barrier();
}
void exchangeVal() {
	for (uint k = 0u; k < ITEMS; k++) xchg[pos[k]] = val[k];
	barrier();
	for (uint k = 0u; k < ITEMS; k++) val[k] = xchg[TID * ITEMS + k];
	barrier();
}

void main() {
	bool hasVals = p.vin != 0;
	for (uint t = gl_WorkGroupID.x; t < p.tiles; t += gl_NumWorkGroups.x) {
		uint cnt = min(TILE, p.n - t * TILE);
		for (uint k = 0u; k < ITEMS; k++) {
			uint q = TID * ITEMS + k;
			uint i = t * TILE + q;
			if (q < cnt) {
				if (p.kw == 2u) {
					lo[k] = ld(p.kin + uint64_t(i) * 8);
					hi[k] = ld(p.kin + uint64_t(i) * 8 + 4);
				} else {
					lo[k] = ld(p.kin + uint64_t(i) * 4);
					hi[k] = 0u;
				}
				val[k] = hasVals ? ld(p.vin + uint64_t(i) * 4) : 0u;
			} else {
				// Padding sorts after every key of the tile and is not written.
				lo[k] = 0xffffffffu;
				hi[k] = 0xffffffffu;
				val[k] = 0u;
			}
		}
		for (uint s = 0u; s < 8u; s += 2u) {
			uint bit = p.shift + s;
			// Four counters of 16 bits (a tile has at most 2048 keys).
			uvec2 c = uvec2(0u);
			for (uint k = 0u; k < ITEMS; k++) {
				uint b = (bit >= 32u ? hi[k] >> (bit - 32u) : lo[k] >> bit) & 3u;
				c += uvec2(b == 0u ? 1u : b == 1u ? 0x10000u : 0u, b == 2u ? 1u : b == 3u ? 0x10000u : 0u);
			}
			uvec2 total;
			uvec2 before = scanExcl2(c, total);
			uint t0 = total.x & 0xffffu, t1 = total.x >> 16, t2 = total.y & 0xffffu;
			uint next0 = before.x & 0xffffu;
			uint next1 = t0 + (before.x >> 16);
			uint next2 = t0 + t1 + (before.y & 0xffffu);
			uint next3 = t0 + t1 + t2 + (before.y >> 16);
			for (uint k = 0u; k < ITEMS; k++) {
				uint b = (bit >= 32u ? hi[k] >> (bit - 32u) : lo[k] >> bit) & 3u;
				if (b == 0u) {
					pos[k] = next0++;
				} else if (b == 1u) {
					pos[k] = next1++;
				} else if (b == 2u) {
					pos[k] = next2++;
				} else {
					pos[k] = next3++;
				}
			}
			exchangeLo();
			if (p.kw == 2u) {
				exchangeHi();
			}
			if (hasVals) {
				exchangeVal();
			}
		}
		// The tile is sorted by the digit: find where each digit's run
		// starts, from the tile's own counts.
		runStart[TID] = 0u;
		barrier();
		for (uint k = 0u; k < ITEMS; k++) {
			if (TID * ITEMS + k < cnt) {
				atomicAdd(runStart[digitOf(lo[k], hi[k], p.shift)], 1u);
			}
		}
		barrier();
		uint mine = runStart[TID];
		uint total;
		uint start = scanExcl(mine, total);
		runStart[TID] = start;
		dest[TID] = ld(p.hist + (uint64_t(TID) * p.tiles + t) * 4);
		barrier();
		for (uint k = 0u; k < ITEMS; k++) {
			uint q = TID * ITEMS + k;
			if (q < cnt) {
				uint d = digitOf(lo[k], hi[k], p.shift);
				uint o = dest[d] + q - runStart[d];
				if (p.kw == 2u) {
					st(p.kout + uint64_t(o) * 8, lo[k]);
					st(p.kout + uint64_t(o) * 8 + 4, hi[k]);
				} else {
					st(p.kout + uint64_t(o) * 4, lo[k]);
				}
				if (hasVals) {
					st(p.vout + uint64_t(o) * 4, val[k]);
				}
			}
		}
		barrier();
	}
}
