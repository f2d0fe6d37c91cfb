package tlsf

import (
	"fmt"

	"github.com/govram/govram/internal/buildconst"
)

// checkInvariants runs Check after each mutation in builds with the
// invariants tag and panics on the first broken invariant, so a test fails
// at the operation that broke it. Without the tag it compiles to nothing.
func (a *Allocator) checkInvariants() {
	if !buildconst.Invariants {
		return
	}
	if err := a.Check(); err != nil {
		panic("tlsf: invariant broken: " + err.Error())
	}
}

// Check walks every structure and returns an error describing the first
// broken invariant, or nil. It costs O(blocks + classes) and allocates one
// bit per node; it is meant for tests and the invariants build tag.
func (a *Allocator) Check() error {
	if len(a.nodes) == 0 {
		if a.nRegions != 0 || a.freeBlocks != 0 || a.allocs != 0 || a.flBitmap != 0 {
			return fmt.Errorf("no nodes but counters or bitmap non-zero")
		}
		return nil
	}
	if s := a.nodes[nilNode].state(); s != stateUnused {
		return fmt.Errorf("sentinel node has state %d", s)
	}
	seen := make([]bool, len(a.nodes)) // reached from a region's physical list
	var c checkCounts
	for id := range a.regions {
		if err := a.checkRegion(id, seen, &c); err != nil {
			return err
		}
	}
	regions, allocs, freeBlocks, capacity, used := c.regions, c.allocs, c.freeBlocks, c.capacity, c.used
	if regions != a.nRegions || capacity != a.capacity {
		return fmt.Errorf("regions %d capacity %#x, counters say %d %#x", regions, capacity, a.nRegions, a.capacity)
	}
	if used != a.used || allocs != a.allocs {
		return fmt.Errorf("used %#x in %d allocations, counters say %#x %d", used, allocs, a.used, a.allocs)
	}
	if freeBlocks != a.freeBlocks {
		return fmt.Errorf("%d free blocks, counter says %d", freeBlocks, a.freeBlocks)
	}
	if ids := len(a.regions) - regions; ids != len(a.freeRegions) {
		return fmt.Errorf("%d removed region ids, %d on the reuse stack", ids, len(a.freeRegions))
	}
	for _, id := range a.freeRegions {
		if uint64(id) >= uint64(len(a.regions)) || a.regions[id].live {
			return fmt.Errorf("region id %d on the reuse stack is live or out of range", id)
		}
	}

	if err := a.checkClasses(seen, freeBlocks); err != nil {
		return err
	}
	return a.checkPool(seen, allocs, freeBlocks)
}

// checkCounts is what Check's walk of the regions counts.
type checkCounts struct {
	regions, allocs, freeBlocks int
	capacity, used              uint64
}

// checkRegion walks region id's physical list: the blocks tile the region
// without gap or overlap, no two free blocks are adjacent, and every node
// is reached once (seen).
func (a *Allocator) checkRegion(id int, seen []bool, c *checkCounts) error {
	r := &a.regions[id]
	if !r.live {
		if r.head != nilNode || r.size != 0 {
			return fmt.Errorf("removed region %d keeps head %d size %d", id, r.head, r.size)
		}
		return nil
	}
	c.regions++
	c.capacity += r.size
	var off uint64
	prev := uint32(nilNode)
	prevFree := false
	for i := r.head; i != nilNode; i = a.nodes[i].nextPhys {
		if uint64(i) >= uint64(len(a.nodes)) {
			return fmt.Errorf("region %d: link to node %d out of range", id, i)
		}
		if seen[i] {
			return fmt.Errorf("region %d: node %d reached twice", id, i)
		}
		seen[i] = true
		n := &a.nodes[i]
		switch {
		case n.region != uint32(id):
			return fmt.Errorf("region %d: node %d says region %d", id, i, n.region)
		case n.prevPhys != prev:
			return fmt.Errorf("region %d: node %d prevPhys %d, want %d", id, i, n.prevPhys, prev)
		case n.off() != off:
			return fmt.Errorf("region %d: node %d at %#x, want %#x (gap or overlap)", id, i, n.off(), off)
		case n.size == 0 || n.size%Granule != 0:
			return fmt.Errorf("region %d: node %d has size %#x", id, i, n.size)
		case n.size > r.size-off:
			return fmt.Errorf("region %d: node %d [%#x+%#x) runs past the end %#x", id, i, n.off(), n.size, r.size)
		}
		switch n.state() {
		case stateFree:
			if prevFree {
				return fmt.Errorf("region %d: free nodes %d and %d are adjacent", id, prev, i)
			}
			c.freeBlocks++
		case stateUsed:
			c.used += n.size
			c.allocs++
		default:
			return fmt.Errorf("region %d: node %d in physical list has state %d", id, i, n.state())
		}
		if n.gen == 0 {
			return fmt.Errorf("node %d has generation 0", i)
		}
		prevFree = n.state() == stateFree
		off += n.size
		prev = i
	}
	if off != r.size {
		return fmt.Errorf("region %d: blocks cover %#x of %#x bytes", id, off, r.size)
	}
	return nil
}

// checkClasses checks the free lists of every size class against the
// bitmaps and against the free blocks the region walk saw (seen).
func (a *Allocator) checkClasses(seen []bool, freeBlocks int) error {
	listed := 0
	for fl := range flCount {
		if a.slBitmap[fl] == 0 && a.heads[fl] == [slCount]uint32{} {
			if a.flBitmap&(1<<fl) != 0 {
				return fmt.Errorf("first level %d: bitmap bit set, no second-level bits", fl)
			}
			continue // the common case, checked in one comparison
		}
		for sl := range slCount {
			head := a.heads[fl][sl]
			bit := a.slBitmap[fl]&(1<<sl) != 0
			if bit != (head != nilNode) {
				return fmt.Errorf("class (%d,%d): bitmap bit %v, head %d", fl, sl, bit, head)
			}
			prev := uint32(nilNode)
			for i := head; i != nilNode; i = a.nodes[i].nextFree {
				if uint64(i) >= uint64(len(a.nodes)) {
					return fmt.Errorf("class (%d,%d): link to node %d out of range", fl, sl, i)
				}
				n := &a.nodes[i]
				if !seen[i] || n.state() != stateFree {
					return fmt.Errorf("class (%d,%d): node %d is not a free block of a live region", fl, sl, i)
				}
				seen[i] = false // each free block is on one list, once
				listed++
				if n.prevFree != prev {
					return fmt.Errorf("class (%d,%d): node %d prevFree %d, want %d", fl, sl, i, n.prevFree, prev)
				}
				if f, s := mapping(n.size >> granuleLog); f != uint32(fl) || s != uint32(sl) {
					return fmt.Errorf("node %d of size %#x is in class (%d,%d), belongs in (%d,%d)", i, n.size, fl, sl, f, s)
				}
				prev = i
			}
		}
		if bit := a.flBitmap&(1<<fl) != 0; bit != (a.slBitmap[fl] != 0) {
			return fmt.Errorf("first level %d: bitmap bit %v, second-level bitmap %#x", fl, bit, a.slBitmap[fl])
		}
	}
	if a.flBitmap>>flCount != 0 {
		return fmt.Errorf("first-level bitmap %#x has bits past level %d", a.flBitmap, flCount-1)
	}
	if listed != freeBlocks {
		return fmt.Errorf("%d blocks on class lists, %d free blocks in regions", listed, freeBlocks)
	}
	return nil
}

// checkPool checks the pool of unused nodes: none in use, no cycle, and
// every node accounted for.
func (a *Allocator) checkPool(seen []bool, allocs, freeBlocks int) error {
	pooled := 0
	for i := a.freeNode; i != nilNode; i = a.nodes[i].nextFree {
		if uint64(i) >= uint64(len(a.nodes)) {
			return fmt.Errorf("node pool: link to node %d out of range", i)
		}
		if seen[i] || a.nodes[i].state() != stateUnused {
			return fmt.Errorf("node pool: node %d is in use", i)
		}
		pooled++
		if pooled > len(a.nodes) {
			return fmt.Errorf("node pool has a cycle")
		}
	}
	if want := len(a.nodes) - 1 - allocs - freeBlocks; pooled != want {
		return fmt.Errorf("node pool holds %d nodes, want %d", pooled, want)
	}
	return nil
}
