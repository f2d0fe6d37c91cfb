package tlsf

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// ---- the model -------------------------------------------------------------

// ival is a half-open byte range [off, off+size).
type ival struct{ off, size uint64 }

func (v ival) end() uint64 { return v.off + v.size }

// modelRegion tracks a region's free space as sorted, coalesced intervals:
// the plainest structure that says what an allocator may and must do.
type modelRegion struct {
	size uint64
	free []ival
	live int
}

// take removes [off, off+size) from the free space; it must lie entirely
// inside one free interval, or the allocator handed out used space.
func (r *modelRegion) take(off, size uint64) error {
	if off+size > r.size || off+size < off {
		return fmt.Errorf("[%#x+%#x) outside region of %#x", off, size, r.size)
	}
	i, _ := slices.BinarySearchFunc(r.free, off, func(v ival, off uint64) int {
		switch {
		case v.end() <= off:
			return -1
		case v.off > off:
			return 1
		}
		return 0
	})
	if i == len(r.free) || r.free[i].off > off || r.free[i].end() < off+size {
		return fmt.Errorf("[%#x+%#x) overlaps used space", off, size)
	}
	v := r.free[i]
	var repl []ival
	if off > v.off {
		repl = append(repl, ival{v.off, off - v.off})
	}
	if off+size < v.end() {
		repl = append(repl, ival{off + size, v.end() - off - size})
	}
	r.free = slices.Replace(r.free, i, i+1, repl...)
	r.live++
	return nil
}

// give returns [off, off+size) to the free space, merging with neighbours.
func (r *modelRegion) give(off, size uint64) {
	i, _ := slices.BinarySearchFunc(r.free, off, func(v ival, off uint64) int {
		if v.off < off {
			return -1
		}
		if v.off > off {
			return 1
		}
		return 0
	})
	v := ival{off, size}
	lo, hi := i, i
	if i > 0 && r.free[i-1].end() == off {
		lo--
		v.off = r.free[i-1].off
		v.size += r.free[i-1].size
	}
	if i < len(r.free) && r.free[i].off == off+size {
		v.size += r.free[i].size
		hi++
	}
	r.free = slices.Replace(r.free, lo, hi, v)
	r.live--
}

func (r *modelRegion) largest() uint64 {
	var m uint64
	for _, v := range r.free {
		m = max(m, v.size)
	}
	return m
}

type liveAlloc struct {
	region    uint32
	off, size uint64
}

// harness runs every operation on an Allocator and on the model side by
// side and fails at the first disagreement.
type harness struct {
	t       testing.TB
	a       *Allocator
	regions map[uint32]*modelRegion
	live    map[Handle]liveAlloc
	handles []Handle // live handles, for picking one at random
	dead    []Handle // freed handles, which must stay refused
	used    uint64   // model totals of live allocations
	fails   int
	checkEv int // run Check every checkEv operations (1: always)
	ops     int
}

func newHarness(t testing.TB) *harness {
	return &harness{
		t:       t,
		a:       New(),
		regions: map[uint32]*modelRegion{},
		live:    map[Handle]liveAlloc{},
		checkEv: 1,
	}
}

// classBound is the size from which TLSF guarantees success: n rounded up
// to a multiple of 2^(floor(log2 n) - 5) granules, computed here without
// the package's class tables.
func classBound(n uint64) uint64 {
	u := n / Granule
	if u < 2*slCount {
		return n
	}
	step := uint64(1) << (bits.Len64(u) - 1 - slLog)
	return (u + step - 1) / step * step * Granule
}

func normAlign(align uint64) uint64 {
	switch {
	case align <= Granule:
		return Granule
	case align > MaxRegionSize:
		return MaxRegionSize
	}
	return 1 << (bits.Len64(align - 1))
}

func (h *harness) addRegion(size uint64) uint32 {
	id := h.a.AddRegion(size)
	if _, dup := h.regions[id]; dup {
		h.t.Fatalf("AddRegion returned live id %d", id)
	}
	h.regions[id] = &modelRegion{size: size, free: []ival{{0, size}}}
	h.verify("AddRegion")
	return id
}

func (h *harness) removeRegion(id uint32) bool {
	r, ok := h.regions[id]
	want := ok && r.live == 0
	before := h.a.Stats()
	got := h.a.RemoveRegion(id)
	if got != want {
		h.t.Fatalf("RemoveRegion(%d) = %v, want %v", id, got, want)
	}
	if got {
		delete(h.regions, id)
	} else if after := h.a.Stats(); after != before {
		h.t.Fatalf("refused RemoveRegion changed stats: %+v -> %+v", before, after)
	}
	h.verify("RemoveRegion")
	return got
}

func (h *harness) alloc(size, align uint64) (Handle, bool) {
	before := h.a.Stats()
	hd, reg, off, ok := h.a.Alloc(size, align)
	rs := max(Granule, (size+Granule-1)&^(Granule-1))
	ea := normAlign(align)
	if !ok {
		h.fails++
		if after := h.a.Stats(); after != before {
			h.t.Fatalf("failed Alloc(%#x, %#x) changed stats: %+v -> %+v", size, align, before, after)
		}
		if size > MaxRegionSize {
			return 0, false
		}
		need := rs
		if ea > Granule {
			need += ea - Granule
		}
		bound := classBound(need)
		for id, r := range h.regions {
			if l := r.largest(); l >= bound {
				h.t.Fatalf("Alloc(%#x, %#x) failed, but region %d has a free block of %#x >= %#x",
					size, align, id, l, bound)
			}
		}
		h.verify("failed Alloc")
		return 0, false
	}
	r := h.regions[reg]
	switch {
	case r == nil:
		h.t.Fatalf("Alloc(%#x, %#x) returned region %d, which is not live", size, align, reg)
	case off%ea != 0:
		h.t.Fatalf("Alloc(%#x, %#x) returned offset %#x, not aligned to %#x", size, align, off, ea)
	case hd == 0:
		h.t.Fatalf("Alloc returned the zero Handle")
	}
	if _, dup := h.live[hd]; dup {
		h.t.Fatalf("Alloc returned live handle %#x again", hd)
	}
	if err := r.take(off, rs); err != nil {
		h.t.Fatalf("Alloc(%#x, %#x) -> region %d: %v", size, align, reg, err)
	}
	if s, ok := h.a.Size(hd); !ok || s != rs {
		h.t.Fatalf("Size = %#x, %v; want %#x", s, ok, rs)
	}
	if lr, lo, ls, ok := h.a.Lookup(hd); !ok || lr != reg || lo != off || ls != rs {
		h.t.Fatalf("Lookup = %d %#x %#x %v; want %d %#x %#x", lr, lo, ls, ok, reg, off, rs)
	}
	h.live[hd] = liveAlloc{reg, off, rs}
	h.used += rs
	h.handles = append(h.handles, hd)
	h.verify("Alloc")
	return hd, true
}

// free releases h.handles[i].
func (h *harness) free(i int) (region uint32, empty bool) {
	hd := h.handles[i]
	h.handles[i] = h.handles[len(h.handles)-1]
	h.handles = h.handles[:len(h.handles)-1]
	la := h.live[hd]
	delete(h.live, hd)
	h.used -= la.size
	size, reg, empty, ok := h.a.Free(hd)
	if !ok || size != la.size || reg != la.region {
		h.t.Fatalf("Free(%#x) = %#x %d %v %v, want %#x %d", hd, size, reg, empty, ok, la.size, la.region)
	}
	r := h.regions[reg]
	r.give(la.off, la.size)
	if want := len(r.free) == 1 && r.free[0].size == r.size; empty != want {
		h.t.Fatalf("Free: regionEmpty = %v, want %v", empty, want)
	}
	if len(h.dead) < 1024 {
		h.dead = append(h.dead, hd)
	} else {
		h.dead[rand.IntN(len(h.dead))] = hd
	}
	h.verify("Free")
	return reg, empty
}

// badFree frees a handle that must be refused.
func (h *harness) badFree(hd Handle) {
	if _, live := h.live[hd]; live {
		return
	}
	before := h.a.Stats()
	if _, _, _, ok := h.a.Free(hd); ok {
		h.t.Fatalf("Free(%#x) of a handle that is not live succeeded", hd)
	}
	if _, ok := h.a.Size(hd); ok {
		h.t.Fatalf("Size(%#x) of a handle that is not live succeeded", hd)
	}
	if after := h.a.Stats(); after != before {
		h.t.Fatalf("refused Free changed stats: %+v -> %+v", before, after)
	}
	h.verify("bad Free")
}

func (h *harness) verify(op string) {
	// Check first: Stats walks a class list and would spin on a cycle.
	if h.ops++; h.ops%h.checkEv == 0 {
		if err := h.a.Check(); err != nil {
			h.t.Fatalf("after %s: Check: %v", op, err)
		}
	}
	var want Stats
	for _, r := range h.regions {
		want.Regions++
		want.Capacity += r.size
		want.FreeBlocks += len(r.free)
		want.LargestFree = max(want.LargestFree, r.largest())
		for _, v := range r.free {
			want.Free += v.size
		}
	}
	want.Used, want.Allocations = h.used, len(h.live)
	if got := h.a.Stats(); got != want {
		h.t.Fatalf("after %s: Stats = %+v, model says %+v", op, got, want)
	}
}

// ---- tests -----------------------------------------------------------------

func TestClasses(t *testing.T) {
	lower := func(fl, sl uint32) uint64 {
		if fl == 0 {
			return uint64(sl)
		}
		return uint64(slCount+sl) << (fl - 1)
	}
	upper := func(fl, sl uint32) uint64 {
		if fl == 0 {
			return uint64(sl) + 1
		}
		return uint64(slCount+sl+1) << (fl - 1)
	}
	check := func(u uint64) {
		fl, sl := mapping(u)
		if fl >= flCount || sl >= slCount {
			t.Fatalf("mapping(%d) = (%d,%d) out of the tables", u, fl, sl)
		}
		if lo := lower(fl, sl); lo > u {
			t.Fatalf("mapping(%d) = (%d,%d), whose lower bound is %d", u, fl, sl, lo)
		}
		if hi := upper(fl, sl); hi <= u {
			t.Fatalf("mapping(%d) = (%d,%d), whose upper bound is %d", u, fl, sl, hi)
		}
		sf, ss := searchClass(u)
		b := lower(sf, ss)
		if want := classBound(u*Granule) / Granule; b != want {
			t.Fatalf("searchClass(%d) starts at %d, want %d", u, b, want)
		}
		if b < u || (u >= 2*slCount && b-u >= u/slCount) || (u < 2*slCount && b != u) {
			t.Fatalf("searchClass(%d) starts at %d: outside the waste bound", u, b)
		}
	}
	for u := uint64(1); u < 1<<16; u++ {
		check(u)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		check(1 + r.Uint64N(MaxRegionSize/Granule))
	}
	check(MaxRegionSize / Granule)
	for l := 1; l <= maxRegionLog-granuleLog; l++ {
		check(1<<l - 1)
		check(1 << l)
		check(1<<l + 1)
	}
}

func TestNodeSize(t *testing.T) {
	if s := unsafe.Sizeof(node{}); s != 40 {
		t.Fatalf("node is %d bytes, want 40", s)
	}
}

func TestZeroValue(t *testing.T) {
	var a Allocator
	if _, _, _, ok := a.Alloc(64, 0); ok {
		t.Fatal("Alloc on an empty allocator succeeded")
	}
	if _, _, _, ok := a.Free(0); ok {
		t.Fatal("Free(0) succeeded")
	}
	if a.RemoveRegion(0) {
		t.Fatal("RemoveRegion on an empty allocator succeeded")
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	r := a.AddRegion(4096)
	h, reg, off, ok := a.Alloc(100, 0)
	if !ok || reg != r || off != 0 {
		t.Fatalf("Alloc = %v %d %d %v", h, reg, off, ok)
	}
	if s, ok := a.Size(h); !ok || s != 128 {
		t.Fatalf("Size = %d %v, want 128", s, ok)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestAddRegionPanics(t *testing.T) {
	for _, size := range []uint64{0, 1, 63, 100, MaxRegionSize + Granule, ^uint64(0) &^ 63} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("AddRegion(%#x) did not panic", size)
				}
			}()
			New().AddRegion(size)
		}()
	}
}

func TestExhaustion(t *testing.T) {
	h := newHarness(t)
	h.checkEv = 257
	const size = 256 << 10
	h.addRegion(size)
	for i := 0; ; i++ {
		if _, ok := h.alloc(64, 0); !ok {
			if i != size/64 {
				t.Fatalf("ran out after %d allocations, want %d", i, size/64)
			}
			break
		}
	}
	for _, s := range []uint64{1, 64, 65, 4096, size} {
		if _, ok := h.alloc(s, 0); ok {
			t.Fatalf("Alloc(%d) succeeded in a full region", s)
		}
	}
	if s := h.a.Stats(); s.Free != 0 || s.FreeBlocks != 0 || s.LargestFree != 0 {
		t.Fatalf("full region: %+v", s)
	}
	// Free every other block by offset: holes of 64 bytes, none adjacent.
	slices.SortFunc(h.handles, func(x, y Handle) int {
		return int(h.live[x].off>>6) - int(h.live[y].off>>6)
	})
	for i := len(h.handles) - 2; i >= 0; i -= 2 {
		h.free(i)
	}
	if s := h.a.Stats(); s.FreeBlocks != size/128 || s.LargestFree != 64 {
		t.Fatalf("checkerboard: %+v", s)
	}
	if _, ok := h.alloc(128, 0); ok {
		t.Fatal("Alloc(128) succeeded with only 64-byte holes")
	}
	for range size / 128 {
		if _, ok := h.alloc(64, 0); !ok {
			t.Fatal("Alloc(64) failed with 64-byte holes left")
		}
	}
	empties := 0
	for len(h.handles) > 0 {
		if _, empty := h.free(rand.IntN(len(h.handles))); empty {
			empties++
		}
	}
	if s := h.a.Stats(); empties != 1 || s.FreeBlocks != 1 || s.LargestFree != size {
		t.Fatalf("after freeing all: %d empty reports, %+v", empties, s)
	}
	if _, ok := h.alloc(size, 0); !ok {
		t.Fatal("whole-region Alloc failed after freeing all")
	}
}

func TestStaleHandles(t *testing.T) {
	h := newHarness(t)
	h.addRegion(1 << 20)
	h1, _ := h.alloc(1000, 0)
	h.alloc(1000, 0) // keeps h1's block from merging
	h.free(0)        // h1
	h.badFree(h1)    // double free
	h2, _ := h.alloc(1000, 0)
	if h2.index() != h1.index() {
		t.Logf("slot not reused (%d, %d); still testing", h1.index(), h2.index())
	}
	h.badFree(h1) // stale: same slot, newer generation
	if _, ok := h.a.Size(h2); !ok {
		t.Fatal("live handle refused after a stale Free")
	}
	for _, bad := range []Handle{
		0,
		1,
		makeHandle(0, 1),
		makeHandle(12345, 1),
		^Handle(0),
		h2 ^ 1<<32,
		h2 ^ 1<<63,
		makeHandle(uint32(len(h.a.nodes)), 1),
	} {
		h.badFree(bad)
	}
	// A free block's own slot and generation must not pass for an allocation.
	for i := range h.a.nodes {
		if h.a.nodes[i].state() == stateFree {
			h.badFree(makeHandle(uint32(i), h.a.nodes[i].gen))
		}
	}
	// Unused pool slots too.
	for i := h.a.freeNode; i != nilNode; i = h.a.nodes[i].nextFree {
		h.badFree(makeHandle(i, h.a.nodes[i].gen))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		h.badFree(Handle(r.Uint64()))
	}
	h.free(0)
	h.free(0)
	if s := h.a.Stats(); s.FreeBlocks != 1 || s.Allocations != 0 {
		t.Fatalf("after freeing all: %+v", s)
	}
}

func TestRemoveRegion(t *testing.T) {
	h := newHarness(t)
	r0 := h.addRegion(1 << 16)
	r1 := h.addRegion(1 << 17)
	for _, id := range []uint32{2, 100, ^uint32(0)} {
		h.removeRegion(id)
	}
	h.alloc(1<<17, 0) // only r1 fits it
	if h.live[h.handles[0]].region != r1 {
		t.Fatal("whole-region allocation went to the wrong region")
	}
	old := h.handles[0]
	if h.removeRegion(r1) {
		t.Fatal("removed a region with a live allocation")
	}
	if _, empty := h.free(0); !empty {
		t.Fatal("freeing the only allocation did not report the region empty")
	}
	if !h.removeRegion(r1) {
		t.Fatal("could not remove an empty region")
	}
	h.removeRegion(r1) // twice: refused
	h.badFree(old)
	if _, ok := h.alloc(1<<17, 0); ok {
		t.Fatal("Alloc used a removed region")
	}
	hd, _ := h.alloc(64, 0)
	if h.live[hd].region != r0 {
		t.Fatal("Alloc used a removed region")
	}
	r2 := h.addRegion(1 << 18)
	if r2 != r1 {
		t.Logf("region id %d not reused (got %d)", r1, r2)
	}
	h.badFree(old) // still stale in the reused region
	h.alloc(1<<18, 0)
	h.free(0)
	h.free(0)
	if !h.removeRegion(r0) || !h.removeRegion(r2) {
		t.Fatal("could not remove empty regions")
	}
	if s := h.a.Stats(); s != (Stats{}) {
		t.Fatalf("no regions left, Stats = %+v", s)
	}
}

func TestLargeRegions(t *testing.T) {
	h := newHarness(t)
	h.checkEv = 64
	big := h.addRegion(1 << 40)
	for _, s := range []uint64{1 << 39, 1 << 38, 3 << 30, 1 << 30} {
		if _, ok := h.alloc(s, 1<<30); !ok {
			t.Fatalf("Alloc(%#x) failed in a 1 TiB region", s)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		h.alloc(64+r.Uint64N(1<<24), 1<<r.UintN(21))
	}
	if _, ok := h.alloc(1<<40, 0); ok {
		t.Fatal("Alloc(1 TiB) succeeded in a partly used 1 TiB region")
	}
	for len(h.handles) > 0 {
		h.free(r.IntN(len(h.handles)))
	}
	if !h.removeRegion(big) {
		t.Fatal("could not remove the empty 1 TiB region")
	}

	// The largest region, and requests beyond it.
	h.addRegion(MaxRegionSize)
	h.alloc(MaxRegionSize+1, 0)
	h.alloc(^uint64(0), 0)
	h.alloc(64, ^uint64(0)) // an alignment beyond any offset: only 0 fits
	if h.live[h.handles[0]].off != 0 {
		t.Fatal("huge alignment did not give offset 0")
	}
	h.alloc(64, 1<<63) // offset 0 is taken: must fail
	h.alloc(MaxRegionSize/2, MaxRegionSize/2)
	h.alloc(MaxRegionSize/4, 0)
	for len(h.handles) > 0 {
		h.free(0)
	}
	h.alloc(MaxRegionSize, 0)
	if len(h.handles) != 1 {
		t.Fatal("whole MaxRegionSize allocation failed")
	}
}

func TestAlignment(t *testing.T) {
	for shift := 6; shift <= 20; shift++ {
		align := uint64(1) << shift
		t.Run(fmt.Sprint(align), func(t *testing.T) {
			h := newHarness(t)
			h.checkEv = 16
			h.addRegion(64 << 20)
			h.addRegion(3 << 20)
			r := rand.New(rand.NewPCG(uint64(shift), 7))
			h.alloc(64, 0) // misalign what follows
			for range 300 {
				if len(h.handles) > 0 && r.IntN(3) == 0 {
					h.free(r.IntN(len(h.handles)))
					continue
				}
				size := 1 + r.Uint64N(4*align)
				if r.IntN(2) == 0 {
					h.alloc(size, 0) // unaligned traffic between
				}
				h.alloc(size, align)
			}
			// Non-powers of two round up.
			if hd, ok := h.alloc(64, align+1); ok && h.live[hd].off%(2*align) != 0 {
				t.Fatalf("align %d not rounded up to %d", align+1, 2*align)
			}
			for len(h.handles) > 0 {
				h.free(r.IntN(len(h.handles)))
			}
			if s := h.a.Stats(); s.FreeBlocks != 2 {
				t.Fatalf("after freeing all: %+v", s)
			}
		})
	}
}

// ---- example and benchmarks -------------------------------------------------

func Example() {
	a := New()
	chunk := a.AddRegion(1 << 20) // e.g. one VkDeviceMemory of 1 MiB

	h, region, off, _ := a.Alloc(1000, 0) // rounded up to 1024
	fmt.Println(region == chunk, off)
	_, _, off, _ = a.Alloc(4096, 4096) // leaves a free gap at [1024, 4096)
	fmt.Println(off)

	size, _, empty, _ := a.Free(h)
	fmt.Println(size, empty)
	_, _, _, ok := a.Free(h) // double free is refused
	fmt.Println(ok)
	fmt.Printf("%+v\n", a.Stats())
	// Output:
	// true 0
	// 4096
	// 1024 false
	// false
	// {Regions:1 Capacity:1048576 Used:4096 Free:1044480 LargestFree:1040384 Allocations:1 FreeBlocks:2}
}

// TestCheckDetects breaks one invariant at a time and expects Check to say so.
func TestCheckDetects(t *testing.T) {
	build := func() *Allocator {
		a := New()
		a.AddRegion(1 << 20)
		a.AddRegion(1 << 16)
		r2 := a.AddRegion(1 << 12)
		a.RemoveRegion(r2)
		var hs []Handle
		for i := range 40 {
			h, _, _, _ := a.Alloc(uint64(64*(1+i%7)), 0)
			hs = append(hs, h)
		}
		for i := 0; i < len(hs); i += 3 {
			a.Free(hs[i])
		}
		if err := a.Check(); err != nil {
			t.Fatalf("healthy allocator: %v", err)
		}
		return a
	}
	// find returns the index of the first node in state s that is not a
	// region's first block.
	find := func(a *Allocator, s uint8) uint32 {
		for i := 1; i < len(a.nodes); i++ {
			if a.nodes[i].state() == s && a.nodes[i].prevPhys != nilNode {
				return uint32(i)
			}
		}
		t.Fatalf("no node in state %d", s)
		return 0
	}
	for name, corrupt := range map[string]func(a *Allocator){
		"used counter":    func(a *Allocator) { a.used += 64 },
		"alloc counter":   func(a *Allocator) { a.allocs-- },
		"free counter":    func(a *Allocator) { a.freeBlocks++ },
		"capacity":        func(a *Allocator) { a.capacity -= 64 },
		"fl bitmap":       func(a *Allocator) { a.flBitmap ^= 1 << 7 },
		"sl bitmap":       func(a *Allocator) { a.slBitmap[0] ^= 1 << 9 },
		"size":            func(a *Allocator) { a.nodes[find(a, stateUsed)].size += 64 },
		"offset":          func(a *Allocator) { n := &a.nodes[find(a, stateUsed)]; n.setOff(n.off() - 64) },
		"prevPhys":        func(a *Allocator) { a.nodes[find(a, stateUsed)].prevPhys = nilNode },
		"region of node":  func(a *Allocator) { a.nodes[find(a, stateUsed)].region ^= 1 },
		"free not listed": func(a *Allocator) { a.nodes[find(a, stateUsed)].setState(stateFree) },
		"used listed": func(a *Allocator) {
			i := find(a, stateFree)
			a.nodes[i].setState(stateUsed)
		},
		"adjacent free": func(a *Allocator) {
			// Free a block's used predecessor without merging; lists and
			// counters stay consistent, only adjacency breaks.
			p := a.nodes[find(a, stateFree)].prevPhys
			a.nodes[p].setState(stateFree)
			a.used -= a.nodes[p].size
			a.allocs--
			a.insertFree(p)
		},
		"wrong class": func(a *Allocator) {
			i := find(a, stateFree)
			a.removeFree(i)
			a.nodes[i].size += 1 << 16 // lengthen, then list by the old size
			a.insertFree(i)
			a.nodes[i].size -= 1 << 16
		},
		"pool": func(a *Allocator) {
			a.nodes = append(a.nodes, node{gen: 1}) // a slot on no list
		},
		"pool cycle": func(a *Allocator) {
			a.nodes = append(a.nodes, node{gen: 1})
			i := uint32(len(a.nodes) - 1)
			a.nodes[i].nextFree = i
			a.freeNode = i
		},
		"removed region": func(a *Allocator) { a.regions[2].size = 64 },
		"region reuse":   func(a *Allocator) { a.freeRegions = append(a.freeRegions, 0) },
		"sentinel":       func(a *Allocator) { a.nodes[0].setState(stateFree) },
		"generation":     func(a *Allocator) { a.nodes[find(a, stateUsed)].gen = 0 },
	} {
		a := build()
		corrupt(a)
		if err := a.Check(); err == nil {
			t.Errorf("%s: Check found nothing", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
