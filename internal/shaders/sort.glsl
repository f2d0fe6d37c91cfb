// The radix sort's tiles: each workgroup sorts TILE keys at a time, ITEMS
// per invocation. Keys are one word (keys of up to 32 bits, kw = 1) or two
// (64 bits, kw = 2: low word first), already mapped to unsigned order.
#define ITEMS 8u
#define TILE (WG * ITEMS)

// digit returns the 8-bit digit at bit shift of the key (lo, hi).
uint digitOf(uint lo, uint hi, uint shift) {
	return (shift >= 32u ? hi >> (shift - 32u) : lo >> shift) & 0xffu;
}
