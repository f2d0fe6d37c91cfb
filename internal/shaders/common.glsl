// Shared by every govram kernel. Kernels reach memory through 64-bit
// buffer device addresses passed in push constants, so one kernel works on
// any block of any chunk (and across segments) without descriptor sets,
// and is not bound by maxStorageBufferRange. Addresses are computed in
// 64 bits and dereferenced one word (or one 16-byte vector) at a time.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

// WG is every kernel's workgroup size: 256 invocations, which Vulkan
// devices that run govram's kernels support (vmem checks the limits).
#define WG 256
layout(local_size_x = WG) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Word { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Dword { uint64_t v; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Vec4 { uvec4 v; };

uint ld(uint64_t a) { return Word(a).v; }
void st(uint64_t a, uint v) { Word(a).v = v; }
uint64_t ld64(uint64_t a) { return Dword(a).v; }

// Grid-stride loops: a kernel is dispatched with at most 65535 workgroups
// and each invocation walks its share of the items.
#define TID gl_LocalInvocationID.x
#define GID gl_GlobalInvocationID.x
#define GSTRIDE (gl_NumWorkGroups.x * WG)

// recOff is the byte offset of record j in a segment laid out as vmem.Slice
// lays it out: groups of perLine records stride bytes apart, group bytes
// per group (perLine 1 and group = size for dense layouts).
uint64_t recOff(uint j, uint perLine, uint group, uint stride) {
	uint g = j / perLine;
	return uint64_t(g) * group + uint64_t(j - g * perLine) * stride;
}
