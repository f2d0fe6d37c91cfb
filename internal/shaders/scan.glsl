// Workgroup-wide scans over one value per invocation, in shared memory
// (Hillis-Steele: log2(WG) steps; no subgroup operations, so they run the
// same on every device whatever its subgroup size).
shared uvec2 scanMem[WG];

// scanExcl2 returns the exclusive prefix sum of v over the workgroup's
// invocations (by local index) and sets total to the sum of all. Every
// invocation of the workgroup must call it.
uvec2 scanExcl2(uvec2 v, out uvec2 total) {
	scanMem[TID] = v;
	barrier();
	for (uint off = 1u; off < WG; off <<= 1) {
		uvec2 t = TID >= off ? scanMem[TID - off] : uvec2(0u);
		barrier();
		scanMem[TID] += t;
		barrier();
	}
	total = scanMem[WG - 1u];
	uvec2 incl = scanMem[TID];
	barrier();
	return incl - v;
}

uint scanExcl(uint v, out uint total) {
	uvec2 t;
	uint r = scanExcl2(uvec2(v, 0u), t).x;
	total = t.x;
	return r;
}
