#version 460
// sort_tile moves each tile's keys (and values) to their places for one
// 8-bit digit, as sort_scatter does, with its memory traffic coalesced and
// few barriers:
//   - the tile's keys are loaded striped (neighbouring invocations read
//     neighbouring keys, one 64-bit load each) into shared memory;
//   - the local sort moves one word per key, digit << 16 | position in the
//     tile, through four stable 2-bit splits, each one workgroup scan made
//     of subgroup scans (sort_scan.glsl: one barrier) and one exchange (two
//     barriers);
//   - the sorted tile is written striped: neighbouring invocations write
//     neighbouring places of a digit's run, each key one 64-bit store, the
//     key fetched from shared memory by its position.
// Run starts within the sorted tile are where the digit changes, so no
// counting or scan is needed for them. Stability: positions are taken in
// blocked order (invocation TID holds TID*ITEMS..), which every split
// keeps, and equal digits keep increasing positions.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "sort.glsl"
#include "sort_scan.glsl"

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
	uint flags; // bit 0: scan in shared memory only (tests the fallback)
} p;

// Shared arrays are padded (one slot every 16 keys, every 32 words) so
// that blocked reads, invocation i reading slot i*ITEMS+k, fall in
// distinct banks.
#define KPAD(e) ((e) + ((e) >> 4))
#define IPAD(e) ((e) + ((e) >> 5))

shared uint64_t tkeys[TILE + TILE / 16u];
shared uint titems[TILE + TILE / 32u];
shared uint dest[256];  // where each digit's run of the tile goes
shared uint delta[256]; // dest less the run's start in the sorted tile

void main() {
	sortScanInit((p.flags & 1u) != 0u);

	bool hasVals = p.vin != 0;
	for (uint t = gl_WorkGroupID.x; t < p.tiles; t += gl_NumWorkGroups.x) {
		uint base = t * TILE;
		uint cnt = min(TILE, p.n - base);
		// Each key's item, digit << 16 | position, goes to titems at its
		// position. Padding sorts after every key of the tile (digit 255,
		// the last positions) and is not written.
		uint64_t keys[ITEMS]; // every load first, so that all are in flight at once
		[[unroll]] for (uint k = 0u; k < ITEMS; k++) {
			uint q = k * WG + TID;
			if (q < cnt) {
				keys[k] = p.kw == 2u ? ld64(p.kin + uint64_t(base + q) * 8) : uint64_t(ld(p.kin + uint64_t(base + q) * 4));
			}
		}
		dest[TID] = ld(p.hist + (uint64_t(TID) * p.tiles + t) * 4);
		[[unroll]] for (uint k = 0u; k < ITEMS; k++) {
			uint q = k * WG + TID;
			uint d = 0xffu;
			if (q < cnt) {
				tkeys[KPAD(q)] = keys[k];
				d = uint(keys[k] >> p.shift) & 0xffu;
			}
			titems[IPAD(q)] = d << 16 | q;
		}
		barrier();
		uint item[ITEMS];
		[[unroll]] for (uint k = 0u; k < ITEMS; k++) {
			item[k] = titems[IPAD(TID * ITEMS + k)];
		}
		// No barrier is needed here before the first split writes titems:
		// its scan has one.
		[[unroll]] for (uint s = 16u; s < 24u; s += 2u) {
			// Four counters of 16 bits (a tile has at most 2048 keys).
			uvec2 c = uvec2(0u);
			[[unroll]] for (uint k = 0u; k < ITEMS; k++) {
				uint b = (item[k] >> s) & 3u;
				uint inc = 1u << ((b & 1u) << 4);
				c += b < 2u ? uvec2(inc, 0u) : uvec2(0u, inc);
			}
			uvec2 total;
			uvec2 before = sortScan2(c, total);
			uint t0 = total.x & 0xffffu, t1 = total.x >> 16, t2 = total.y & 0xffffu;
			uint next0 = before.x & 0xffffu;
			uint next1 = t0 + (before.x >> 16);
			uint next2 = t0 + t1 + (before.y & 0xffffu);
			uint next3 = t0 + t1 + t2 + (before.y >> 16);
			[[unroll]] for (uint k = 0u; k < ITEMS; k++) {
				uint b = (item[k] >> s) & 3u;
				uint pos;
				if (b == 0u) {
					pos = next0++;
				} else if (b == 1u) {
					pos = next1++;
				} else if (b == 2u) {
					pos = next2++;
				} else {
					pos = next3++;
				}
				titems[IPAD(pos)] = item[k];
			}
			barrier();
			if (s < 22u) {
				[[unroll]] for (uint k = 0u; k < ITEMS; k++) {
					item[k] = titems[IPAD(TID * ITEMS + k)];
				}
				barrier();
			}
		}

		// The tile is sorted by the digit in titems; a run starts where
		// the digit changes, and its key at q goes to dest[d] + q -
		// (the run's start), kept as one difference (modulo 2^32).
		[[unroll]] for (uint k = 0u; k < ITEMS; k++) {
			uint q = k * WG + TID;
			item[k] = titems[IPAD(q)];
			uint d = item[k] >> 16;
			if (q < cnt && (q == 0u || titems[IPAD(q - 1u)] >> 16 != d)) {
				delta[d] = dest[d] - q;
			}
		}
		barrier();
		[[unroll]] for (uint k = 0u; k < ITEMS; k++) {
			uint q = k * WG + TID;
			if (q < cnt) {
				uint d = item[k] >> 16;
				uint from = item[k] & 0xffffu;
				uint o = delta[d] + q;
				uint64_t key = tkeys[KPAD(from)];
				if (p.kw == 2u) {
					Dword(p.kout + uint64_t(o) * 8).v = key;
				} else {
					st(p.kout + uint64_t(o) * 4, uint(key));
				}
				if (hasVals) {
					st(p.vout + uint64_t(o) * 4, ld(p.vin + uint64_t(base + from) * 4));
				}
			}
		}
		barrier();
	}
}
