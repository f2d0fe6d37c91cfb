// Workgroup-wide exclusive scans built on subgroup scans: each subgroup
// scans its values, one barrier publishes the subgroup totals, and every
// invocation adds those of the subgroups before its own (1 barrier where
// the shared-memory scan of scan.glsl takes 2*log2(WG)). The result is by
// local index, which needs subgroups of consecutive invocations
// (gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID == TID);
// every known device lays them out so, and sortScanInit checks it, falling
// back to a shared-memory scan otherwise. Any subgroup size works.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

shared uvec2 sortSums[WG];
shared uint sortNonLinear;
bool sortLinear;

// sortScanInit decides, for the whole workgroup, which scan runs; force
// picks the shared-memory one. Every invocation calls it once, first.
void sortScanInit(bool force) {
	if (TID == 0u) {
		sortNonLinear = force ? 1u : 0u;
	}
	barrier();
	if (gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID != TID) {
		atomicOr(sortNonLinear, 1u);
	}
	barrier();
	sortLinear = sortNonLinear == 0u;
}

// sortScan2 returns the exclusive prefix sum of v over the workgroup's
// invocations by local index and sets total to the sum of all. Every
// invocation calls it; between two calls the workgroup must pass a
// barrier (sortSums is reused).
uvec2 sortScan2(uvec2 v, out uvec2 total) {
	if (sortLinear) {
		uvec2 incl = subgroupInclusiveAdd(v);
		if (gl_SubgroupInvocationID == subgroupMax(gl_SubgroupInvocationID)) {
			sortSums[gl_SubgroupID] = incl;
		}
		barrier();
		uvec2 before = uvec2(0u);
		uvec2 all = uvec2(0u);
		for (uint j = 0u; j < gl_NumSubgroups; j++) {
			uvec2 s = sortSums[j];
			before += j < gl_SubgroupID ? s : uvec2(0u);
			all += s;
		}
		total = all;
		return before + incl - v;
	}
	sortSums[TID] = v;
	barrier();
	for (uint off = 1u; off < WG; off <<= 1) {
		uvec2 t = TID >= off ? sortSums[TID - off] : uvec2(0u);
		barrier();
		sortSums[TID] += t;
		barrier();
	}
	total = sortSums[WG - 1u];
	return sortSums[TID] - v;
}

// sortScan is sortScan2 of one word.
uint sortScan(uint v, out uint total) {
	uvec2 t;
	uint r = sortScan2(uvec2(v, 0u), t).x;
	total = t.x;
	return r;
}
