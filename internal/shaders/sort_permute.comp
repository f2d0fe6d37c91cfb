#version 460
// sort_permute writes one segment of a Slice sorted by a key field: output
// record j is record perm[first + j] of the copy taken before the sort
// (the segments' images, segBytes apart). Each invocation moves one word,
// so records need a size and layout in whole words.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(push_constant) uniform P {
	uint64_t src;      // the copy
	uint64_t perm;     // sorted record indices
	uint64_t dst;      // the segment
	uint64_t segBytes; // distance between segment images in the copy
	uint n;            // records in this segment
	uint first;        // index of the segment's first record in the slice
	uint words;        // words per record
	uint perLine;
	uint group;
	uint stride;
	uint shift; // a full segment holds 1<<shift records
} p;

void main() {
	uint items = p.n * p.words;
	uint mask = (1u << p.shift) - 1u;
	for (uint i = GID; i < items; i += GSTRIDE) {
		uint j = i / p.words;
		uint w = i - j * p.words;
		uint q = ld(p.perm + uint64_t(p.first + j) * 4);
		uint64_t from = p.src + uint64_t(q >> p.shift) * p.segBytes + recOff(q & mask, p.perLine, p.group, p.stride);
		uint64_t to = p.dst + recOff(j, p.perLine, p.group, p.stride);
		st(to + uint64_t(w) * 4, ld(from + uint64_t(w) * 4));
	}
}
