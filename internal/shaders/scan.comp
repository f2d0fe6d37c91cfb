#version 460
// scan turns data[0..n) into its exclusive prefix sums in three phases,
// each a dispatch of its own: 0 sums each block of BLOCK words into
// part[block]; 1 (one workgroup) scans part in place; 2 scans each block
// and adds its part. The radix sort scans its digit-major histograms
// with it. Its workgroup scans are sort_scan.glsl's (subgroup scans, one
// barrier each, and one more before the next scan).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "sort_scan.glsl"

#define PER 8u
#define BLOCK (WG * PER)

layout(push_constant) uniform P {
	uint64_t data;
	uint64_t part;
	uint n; // words in data (phases 0, 2) or in part (phase 1)
	uint phase;
} p;

// scanRun exclusive-scans n words at base (each invocation PER
// consecutive ones), adds carry, and returns the run's total.
uint scanRun(uint64_t base, uint n, uint carry) {
	uint v[PER];
	uint sum = 0u;
	[[unroll]] for (uint k = 0u; k < PER; k++) {
		uint i = TID * PER + k;
		v[k] = i < n ? ld(base + uint64_t(i) * 4) : 0u;
		sum += v[k];
	}
	uint total;
	uint run = sortScan(sum, total) + carry;
	[[unroll]] for (uint k = 0u; k < PER; k++) {
		uint i = TID * PER + k;
		if (i < n) {
			st(base + uint64_t(i) * 4, run);
		}
		run += v[k];
	}
	barrier(); // before the next scan reuses sortSums
	return total;
}

void main() {
	sortScanInit(false);
	uint blocks = (p.n + BLOCK - 1u) / BLOCK;
	if (p.phase == 0u) {
		for (uint b = gl_WorkGroupID.x; b < blocks; b += gl_NumWorkGroups.x) {
			uint sum = 0u;
			[[unroll]] for (uint k = 0u; k < PER; k++) {
				uint i = b * BLOCK + k * WG + TID;
				sum += i < p.n ? ld(p.data + uint64_t(i) * 4) : 0u;
			}
			uint total;
			sortScan(sum, total);
			if (TID == 0u) {
				st(p.part + uint64_t(b) * 4, total);
			}
			barrier();
		}
	} else if (p.phase == 1u) {
		uint carry = 0u;
		for (uint b = 0u; b < blocks; b++) {
			carry += scanRun(p.part + uint64_t(b) * BLOCK * 4, min(BLOCK, p.n - b * BLOCK), carry);
		}
	} else {
		for (uint b = gl_WorkGroupID.x; b < blocks; b += gl_NumWorkGroups.x) {
			scanRun(p.data + uint64_t(b) * BLOCK * 4, min(BLOCK, p.n - b * BLOCK), ld(p.part + uint64_t(b) * 4));
		}
	}
}
