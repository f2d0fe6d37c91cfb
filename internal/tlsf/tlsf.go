package tlsf

import "math/bits"

// Granule is the unit of every offset and size: one cache line, so that no
// two allocations ever share a line.
const Granule = 64

// MaxRegionSize is the largest region AddRegion accepts (4 PiB). It bounds
// the class tables; device memory chunks are far smaller.
const MaxRegionSize = 1 << maxRegionLog

const (
	granuleLog   = 6
	maxRegionLog = 52

	slLog   = 5
	slCount = 1 << slLog // second-level subdivisions per first level

	// flCount first levels cover every size up to MaxRegionSize: a size of
	// u granules, 2^l <= u < 2^(l+1), has first level l-slLog+1, and
	// u < 2*slCount is first level 0 or 1 (the linear classes).
	flCount = maxRegionLog - granuleLog - slLog + 2
)

// nilNode is the index of the sentinel node, which stands for "no node" in
// every link. Making it a real slot lets links to it be written without a
// branch (the writes land in the sentinel and are never read) and makes the
// zero Handle invalid.
const nilNode = 0

// Block states. The zero value is the state of the sentinel and of nodes in
// the recycling pool, which are never on any list a live region reaches.
const (
	stateUnused uint8 = iota
	stateFree
	stateUsed
)

// Handle names a live allocation. It packs the node index (low 32 bits)
// with the node's generation (high 32 bits), so that a handle outliving its
// allocation no longer matches. The zero Handle is never valid.
type Handle uint64

func makeHandle(idx, gen uint32) Handle { return Handle(uint64(gen)<<32 | uint64(idx)) }

func (h Handle) index() uint32 { return uint32(h) }
func (h Handle) gen() uint32   { return uint32(h >> 32) }

// node is one block. Nodes live in Allocator.nodes and refer to each other
// by index, so the slice holds no pointers for the collector to trace.
//
// Offsets are multiples of Granule, so the state rides in the low bits of
// the offset word: that keeps a node at 40 bytes instead of 48.
type node struct {
	offState uint64 // offset from the region's start | state
	size     uint64 // bytes, a multiple of Granule

	prevPhys, nextPhys uint32 // address-order neighbours in the region
	prevFree, nextFree uint32 // class list links; nextFree also links the pool

	region uint32
	gen    uint32 // changes on every free and every reuse of the slot
}

func (n *node) off() uint64       { return n.offState &^ (Granule - 1) }
func (n *node) state() uint8      { return uint8(n.offState & (Granule - 1)) }
func (n *node) setOff(off uint64) { n.offState = off | n.offState&(Granule-1) }
func (n *node) setState(s uint8)  { n.offState = n.offState&^(Granule-1) | uint64(s) }

type regionInfo struct {
	size uint64
	head uint32 // first block in address order; nilNode when removed
	live bool
}

// Allocator sub-allocates several regions (chunks). It is not safe for
// concurrent use. Create it with New; the zero value is also ready to use.
type Allocator struct {
	flBitmap uint64                   // bit fl set: slBitmap[fl] != 0
	slBitmap [flCount]uint32          // bit sl set: heads[fl][sl] != nilNode
	heads    [flCount][slCount]uint32 // first free block of each class

	nodes    []node // nodes[0] is the sentinel once anything was added
	freeNode uint32 // head of the pool of unused node slots

	regions     []regionInfo
	freeRegions []uint32 // ids of removed regions, for reuse

	nRegions   int
	capacity   uint64
	used       uint64
	allocs     int
	freeBlocks int
}

// New returns an empty Allocator with no regions.
func New() *Allocator {
	a := &Allocator{}
	a.nodes = make([]node, 1, 64)
	return a
}

// mapping returns the class of a block of u granules (u >= 1).
func mapping(u uint64) (fl, sl uint32) {
	if u < slCount {
		return 0, uint32(u)
	}
	l := uint32(bits.Len64(u)) - 1
	return l - slLog + 1, uint32(u>>(l-slLog)) - slCount
}

// searchClass returns the lowest class whose every block holds u granules:
// u rounded up to its class's upper boundary (a no-op for linear classes,
// which hold one size each). fl may be flCount or more for requests larger
// than any region.
func searchClass(u uint64) (fl, sl uint32) {
	if l := uint32(bits.Len64(u)) - 1; l > slLog {
		u += 1<<(l-slLog) - 1
	}
	return mapping(u)
}

func nextGen(g uint32) uint32 {
	g++
	if g == 0 { // zero is kept out so that Handle(0) never matches
		g = 1
	}
	return g
}

// newNode returns an unused slot, reusing the pool first. It may grow
// a.nodes, so callers must re-take pointers into the slice after calling it.
func (a *Allocator) newNode() uint32 {
	if i := a.freeNode; i != nilNode {
		a.freeNode = a.nodes[i].nextFree
		return i
	}
	if len(a.nodes) == 0 {
		a.nodes = append(a.nodes, node{}) // the sentinel
	}
	if uint64(len(a.nodes)) >= 1<<32-1 {
		panic("tlsf: more than 2^32-2 blocks")
	}
	a.nodes = append(a.nodes, node{gen: 1})
	return uint32(len(a.nodes) - 1)
}

// releaseNode returns slot i to the pool; bumping the generation makes any
// handle to it stale.
func (a *Allocator) releaseNode(i uint32) {
	n := &a.nodes[i]
	n.setState(stateUnused)
	n.gen = nextGen(n.gen)
	n.prevPhys, n.nextPhys, n.prevFree = nilNode, nilNode, nilNode
	n.nextFree = a.freeNode
	a.freeNode = i
}

func (a *Allocator) insertFree(i uint32) {
	n := &a.nodes[i]
	fl, sl := mapping(n.size >> granuleLog)
	h := a.heads[fl][sl]
	n.prevFree = nilNode
	n.nextFree = h
	a.nodes[h].prevFree = i // lands in the sentinel when the list was empty
	a.heads[fl][sl] = i
	a.slBitmap[fl] |= 1 << sl
	a.flBitmap |= 1 << fl
	a.freeBlocks++
}

func (a *Allocator) removeFree(i uint32) {
	n := &a.nodes[i]
	p, x := n.prevFree, n.nextFree
	if p != nilNode {
		a.nodes[p].nextFree = x
	} else {
		fl, sl := mapping(n.size >> granuleLog)
		a.heads[fl][sl] = x
		if x == nilNode {
			a.slBitmap[fl] &^= 1 << sl
			if a.slBitmap[fl] == 0 {
				a.flBitmap &^= 1 << fl
			}
		}
	}
	a.nodes[x].prevFree = p // lands in the sentinel at the tail
	n.prevFree, n.nextFree = nilNode, nilNode
	a.freeBlocks--
}

// findFree returns the head of the first non-empty class at or above
// (fl, sl), or nilNode.
func (a *Allocator) findFree(fl, sl uint32) uint32 {
	m := a.slBitmap[fl] & (^uint32(0) << sl)
	if m == 0 {
		f := a.flBitmap & (^uint64(0) << (fl + 1))
		if f == 0 {
			return nilNode
		}
		fl = uint32(bits.TrailingZeros64(f))
		m = a.slBitmap[fl]
	}
	return a.heads[fl][bits.TrailingZeros32(m)]
}

// AddRegion registers a region [0, size) and returns its id. size must be a
// non-zero multiple of Granule no larger than MaxRegionSize; anything else is
// a bug in the caller and panics. The id of a removed region may be reused.
func (a *Allocator) AddRegion(size uint64) (region uint32) {
	if size == 0 || size%Granule != 0 || size > MaxRegionSize {
		panic("tlsf: AddRegion: size must be a non-zero multiple of 64 up to MaxRegionSize")
	}
	if n := len(a.freeRegions); n > 0 {
		region = a.freeRegions[n-1]
		a.freeRegions = a.freeRegions[:n-1]
	} else {
		if uint64(len(a.regions)) >= 1<<32 {
			panic("tlsf: more than 2^32 regions")
		}
		region = uint32(len(a.regions))
		a.regions = append(a.regions, regionInfo{})
	}
	i := a.newNode()
	n := &a.nodes[i]
	*n = node{offState: uint64(stateFree), size: size, region: region, gen: n.gen}
	a.insertFree(i)
	a.regions[region] = regionInfo{size: size, head: i, live: true}
	a.nRegions++
	a.capacity += size
	a.checkInvariants()
	return region
}

// RemoveRegion forgets a region. It returns false and changes nothing if
// the id is not a live region or the region holds any allocation.
func (a *Allocator) RemoveRegion(id uint32) bool {
	if uint64(id) >= uint64(len(a.regions)) || !a.regions[id].live {
		return false
	}
	r := &a.regions[id]
	h := r.head
	if n := &a.nodes[h]; n.state() != stateFree || n.size != r.size {
		return false
	}
	a.removeFree(h)
	a.releaseNode(h)
	a.capacity -= r.size
	*r = regionInfo{}
	a.nRegions--
	a.freeRegions = append(a.freeRegions, id)
	a.checkInvariants()
	return true
}

// Alloc finds a free range of size bytes (rounded up to a multiple of
// Granule; 0 counts as one granule) whose offset is a multiple of align, in
// any region. align is rounded up to a power of two and to at least Granule.
// It runs in constant time. ok is false, and nothing changed, when no block
// was found; see the package comment for when that can happen.
func (a *Allocator) Alloc(size, align uint64) (h Handle, region uint32, off uint64, ok bool) {
	if size > MaxRegionSize || a.flBitmap == 0 {
		return 0, 0, 0, false
	}
	if size == 0 {
		size = Granule
	}
	size = (size + Granule - 1) &^ (Granule - 1)
	switch {
	case align <= Granule:
		align = Granule
	case align > MaxRegionSize:
		// Offsets are below MaxRegionSize, so only offset 0 is aligned
		// either way; clamping keeps the arithmetic below from overflowing.
		align = MaxRegionSize
	case align&(align-1) != 0:
		align = 1 << bits.Len64(align)
	}

	// The head of the request's own class is an O(1) near-exact fit; it
	// wins often when blocks of one size are freed and allocated again.
	fl, sl := mapping(size >> granuleLog)
	if i := a.heads[fl][sl]; i != nilNode {
		n := &a.nodes[i]
		if alignUp(n.off(), align)+size <= n.off()+n.size {
			return a.take(i, size, align)
		}
	}

	need := size
	if align > Granule {
		need += align - Granule // room to slide the start up to alignment
	}
	fl, sl = searchClass(need >> granuleLog)
	if fl >= flCount {
		return 0, 0, 0, false
	}
	i := a.findFree(fl, sl)
	if i == nilNode {
		return 0, 0, 0, false
	}
	return a.take(i, size, align)
}

func alignUp(x, align uint64) uint64 { return (x + align - 1) &^ (align - 1) }

// take allocates size bytes at the first align-aligned offset of free block
// i, which the caller has checked to be large enough, and returns the
// leading gap and the tail to the free lists.
func (a *Allocator) take(i uint32, size, align uint64) (Handle, uint32, uint64, bool) {
	a.removeFree(i)
	n := &a.nodes[i]
	if gap := alignUp(n.off(), align) - n.off(); gap > 0 {
		// The block before i is used (free blocks are never adjacent),
		// so the gap needs no merging.
		g := a.newNode()
		n = &a.nodes[i]
		gn := &a.nodes[g]
		*gn = node{offState: n.off() | uint64(stateFree), size: gap,
			prevPhys: n.prevPhys, nextPhys: i, region: n.region, gen: gn.gen}
		if n.prevPhys != nilNode {
			a.nodes[n.prevPhys].nextPhys = g
		} else {
			a.regions[n.region].head = g
		}
		n.prevPhys = g
		n.setOff(n.off() + gap)
		n.size -= gap
		a.insertFree(g)
	}
	if rest := n.size - size; rest > 0 {
		// Likewise the block after i is used or absent.
		t := a.newNode()
		n = &a.nodes[i]
		tn := &a.nodes[t]
		*tn = node{offState: (n.off() + size) | uint64(stateFree), size: rest,
			prevPhys: i, nextPhys: n.nextPhys, region: n.region, gen: tn.gen}
		a.nodes[n.nextPhys].prevPhys = t // lands in the sentinel at the end
		n.nextPhys = t
		n.size = size
		a.insertFree(t)
	}
	n.setState(stateUsed)
	a.used += size
	a.allocs++
	h := makeHandle(i, n.gen)
	reg, off := n.region, n.off()
	a.checkInvariants()
	return h, reg, off, true
}

// live returns the node of a live allocation, or nil.
func (a *Allocator) live(h Handle) *node {
	i := h.index()
	if i == nilNode || uint64(i) >= uint64(len(a.nodes)) {
		return nil
	}
	n := &a.nodes[i]
	if n.state() != stateUsed || n.gen != h.gen() {
		return nil
	}
	return n
}

// Free releases what Alloc returned and merges it with free neighbours.
// ok is false, and nothing changed, for a handle that is not live (already
// freed, from a removed region, or never issued). regionEmpty reports that
// the region is now a single free block, so it may be removed.
func (a *Allocator) Free(h Handle) (size uint64, region uint32, regionEmpty bool, ok bool) {
	n := a.live(h)
	if n == nil {
		return 0, 0, false, false
	}
	i := h.index()
	size, region = n.size, n.region
	a.used -= size
	a.allocs--
	n.setState(stateFree)
	n.gen = nextGen(n.gen)

	if p := n.prevPhys; p != nilNode && a.nodes[p].state() == stateFree {
		a.removeFree(p)
		pn := &a.nodes[p]
		pn.size += n.size
		pn.nextPhys = n.nextPhys
		a.nodes[n.nextPhys].prevPhys = p
		a.releaseNode(i)
		i, n = p, pn
	}
	if x := n.nextPhys; x != nilNode && a.nodes[x].state() == stateFree {
		a.removeFree(x)
		xn := &a.nodes[x]
		n.size += xn.size
		n.nextPhys = xn.nextPhys
		a.nodes[xn.nextPhys].prevPhys = i
		a.releaseNode(x)
	}
	a.insertFree(i)
	regionEmpty = n.size == a.regions[region].size
	a.checkInvariants()
	return size, region, regionEmpty, true
}

// Size returns the size of a live allocation (its request rounded up to a
// multiple of Granule).
func (a *Allocator) Size(h Handle) (uint64, bool) {
	n := a.live(h)
	if n == nil {
		return 0, false
	}
	return n.size, true
}

// Lookup returns where a live allocation lies.
func (a *Allocator) Lookup(h Handle) (region uint32, off, size uint64, ok bool) {
	n := a.live(h)
	if n == nil {
		return 0, 0, 0, false
	}
	return n.region, n.off(), n.size, true
}

// RegionSize returns the size of a live region.
func (a *Allocator) RegionSize(id uint32) (uint64, bool) {
	if uint64(id) >= uint64(len(a.regions)) || !a.regions[id].live {
		return 0, false
	}
	return a.regions[id].size, true
}

// Stats is a snapshot of an Allocator's counters, in bytes and counts.
type Stats struct {
	Regions     int
	Capacity    uint64 // sum of region sizes
	Used        uint64 // sum of live allocation sizes
	Free        uint64 // Capacity - Used
	LargestFree uint64 // largest free block
	Allocations int    // live allocations
	FreeBlocks  int
}

// Stats returns the allocator's counters. It costs a walk of one class list
// (the highest non-empty one) to find LargestFree exactly.
func (a *Allocator) Stats() Stats {
	s := Stats{
		Regions:     a.nRegions,
		Capacity:    a.capacity,
		Used:        a.used,
		Free:        a.capacity - a.used,
		Allocations: a.allocs,
		FreeBlocks:  a.freeBlocks,
	}
	if a.flBitmap != 0 {
		fl := 63 - bits.LeadingZeros64(a.flBitmap)
		sl := 31 - bits.LeadingZeros32(a.slBitmap[fl])
		for i := a.heads[fl][sl]; i != nilNode; i = a.nodes[i].nextFree {
			s.LargestFree = max(s.LargestFree, a.nodes[i].size)
		}
	}
	return s
}
