package collections

import (
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/prefetch"
)

// The hot tier: copies of hot entries in host memory, in front of VRAM.
//
// A lookup whose key is not in host memory pays a PCIe round trip; the hot
// tier answers the keys that are asked for often without one. VRAM stays
// the authoritative copy: an entry of the tier is always clean, so
// eviction costs nothing, and every write updates or drops the tier's copy
// before it returns.
//
// Layout. The tier is an array of sets in anonymous host memory (off the
// Go heap); a key's set is chosen by its hash. A set is a 24-byte header
// and tierWays slots of one fixed size (a multiple of 8), packed one after
// the other: a set of uint64 pairs is 152 bytes, which rounded to lines
// would be 192, a fifth less of the budget holding entries; a hit reads
// the header's line and its slot's, often the same or the next:
//
//	off  0  seq    uint32  a sequence lock: odd while a writer changes the set
//	off  4  gen    uint32  the tier generation the set's contents belong to
//	off  8  ref    uint32  CLOCK reference bits, one per way
//	off 12  meta   uint32  valid bits (0-7), the CLOCK hand (8-15)
//	off 16  tags   [8]byte a byte of each way's hash, matched as one word
//	off 24  slots
//
// Readers take no lock and write nothing on a hit except, once, the
// entry's reference bit: they read the sequence, match the tags, copy the
// slot with word loads, and read the sequence again; a change means a
// writer was there and the lookup is retried. So hits from any number of
// goroutines scale. Writers (admission from a reader's miss, or the Map's
// own writes) take the sequence lock with a compare-and-swap; an admission
// that finds it taken is simply skipped.
//
// Admission and eviction. A miss counts the key in a count-min sketch of
// small counters behind a doorkeeper (TinyLFU): a key enters a full set
// only if it was missed clearly more often than the entry it would evict
// (tierBeats), so one pass over many keys
// (a scan, a burst of one-off lookups) does not flush the hot set. The
// victim is chosen by CLOCK inside the set: entries hit since the hand
// last passed are skipped and lose their bit. New entries start without
// the bit, so an entry that is never hit again leaves first.
//
// Invalidation of everything at once (Clear, a large batch write, a failed
// write-back) bumps the tier generation: sets of an older generation read
// as empty, without touching them.
const (
	tierWays  = 8
	tierHdr   = 24
	tierSpins = 64 // reads of a locked set before the lookup counts as a miss
)

// Default budget of a Map's tier when the option leaves it unset: a fiftieth
// of the table's device bytes, capped by a sixteenth of the machine's RAM.
// The tier is on by default only where the table is in device memory: on
// the host backend the table is in host memory already.
const (
	tierDefaultDiv = 50
	tierRAMDiv     = 16
	tierMinBytes   = 64 << 10
)

// CacheStats describes a container's hot tier.
type CacheStats struct {
	// Bytes is the host memory the tier holds (sets and sketch), Capacity
	// the entries it can hold, Entries those it holds now (counted when
	// Stats is called).
	Bytes    uint64
	Capacity int
	Entries  int
	// Hits and Misses count lookups answered by the tier and those that
	// went to the device. Hits is sampled (one hit in tierHitSample is
	// counted, as tierHitSample), so that hits from many goroutines do not
	// contend on a counter: it is exact to within a few percent.
	Hits, Misses uint64
	// Admissions counts entries copied into the tier, Evictions the
	// entries they displaced, Rejections the misses whose key was not
	// admitted (missed less often than the entry it would displace, or too
	// large for a slot).
	Admissions, Evictions, Rejections uint64
}

// tierHitSample: one hit in this many is counted (a variable: tests that
// check the counts of a few hits count every hit).
var tierHitSample uint32 = 16

// tierSketchPer is the sketch's bytes per tier entry (a fourth of them the
// doorkeeper's bits, the rest two 4-bit counters each). Against the sketch
// before it (one-byte counters, no doorkeeper, no margin, its size rounded
// down to a power of two: 2-4 bytes per entry), a Zipf 1.1 stream over
// 10^6 keys hit 81.9% of the time instead of 79.9% (85.6% to 86.6% over
// 10^7), the tier's entries as many: a static tier of the most frequent
// keys would hit 84.0% (88.1%). BenchmarkMapTierPolicy measures it.
const tierSketchPer = 4

// tierCore is the untyped part of a hot tier: memory, sets, sketch and
// counters. The typed slot codecs live with their container (map_tier.go).
type tierCore struct {
	owner    *owner // of mem
	mem      unsafe.Pointer
	size     uint64 // bytes mapped
	sets     uint64
	setBytes uintptr
	slot     uintptr
	gen      atomic.Uint32
	filled   atomic.Bool // an admission has evicted since the tier was last emptied
	sk       tierSketch
	cnt      unsafe.Pointer // tierStripes lines of counters (tierCounts)
}

// Counters. They are plain (not atomic) words in the tier's memory, in
// stripes of one line chosen by the key's set: a locked instruction on
// the lookup path makes the CPU wait for, and may make it issue again,
// a device load it had started early, which costs a second round trip.
// Increments from goroutines that meet on one stripe may be lost: the
// counts are exact for one goroutine, close for many.
const (
	tierStripes = 64
	cntHits     = iota - 1
	cntMisses
	cntAdmits
	cntEvicts
	cntRejects
	cntSketch       // the sketch's increments since it last aged (stripe 0)
	cntRecentHits   // hits, halved as they grow (see admitMask)
	cntRecentMisses // misses, the same
)

// count adds n to counter f of the stripe of spread hash s.
func (c *tierCore) count(s uint64, f int, n uint64) {
	*c.stripe(s, f) += n
}

// countMiss counts a miss and returns the stripe's count of misses.
func (c *tierCore) countMiss(s uint64) uint64 {
	p := c.stripe(s, cntMisses)
	*p++
	c.recent(s, cntRecentMisses, 1)
	return *p
}

// stripe returns counter f of the stripe of spread hash s.
func (c *tierCore) stripe(s uint64, f int) *uint64 {
	return (*uint64)(unsafe.Add(c.cnt, uintptr(s>>8&(tierStripes-1))*64+uintptr(f)*8))
}

// admitMask returns the mask of the misses of spread hash s's stripe
// that are offered to the tier (offered when the stripe's miss count &
// mask is 0): one in tierAdmitSample while the tier fills or while its
// hit rate shows a skew worth learning, tierAdmitSparse times fewer once
// the tier is full and fewer than one lookup in tierSkewHits of the
// stripe hits (uniform keys: the tier can do no better than its share of
// the keys, and offers only churn it). An offer reads a line of the
// sketch and may take a set's lock, which the next lookup's device load
// then waits behind; under uniform keys dense offers made a miss cost
// about twice as much (BenchmarkMapMissPath's dense rows against tier).
func (c *tierCore) admitMask(s uint64) uint32 {
	dense := tierAdmitSample - 1
	if tierAdmitSparse <= 1 || !c.filled.Load() {
		return dense
	}
	if h := *c.stripe(s, cntRecentHits); h*tierSkewHits < h+*c.stripe(s, cntRecentMisses) {
		return tierAdmitSample*tierAdmitSparse - 1
	}
	return dense
}

// tierAdmitSparse: how much sparser offers are while the tier's hits show
// no skew; tierSkewHits: the hit rate (one lookup in this many) from which
// they do.
var tierAdmitSparse uint32 = 32

const tierSkewHits = 8

// recent adds n to a recent count f (cntRecentHits, cntRecentMisses) of
// the stripe of spread hash s; both are halved as they grow, so that they
// follow the last few thousand lookups of the stripe.
func (c *tierCore) recent(s uint64, f int, n uint64) {
	h, m := c.stripe(s, cntRecentHits), c.stripe(s, cntRecentMisses)
	*c.stripe(s, f) += n
	if *h+*m >= 4096 {
		*h, *m = *h/2, *m/2
	}
}

// total sums counter f over the stripes.
func (c *tierCore) total(f int) uint64 {
	var t uint64
	for i := range tierStripes {
		t += atomic.LoadUint64((*uint64)(unsafe.Add(c.cnt, uintptr(i)*64+uintptr(f)*8)))
	}
	return t
}

// tierSpread remixes a container's hash so that the tier's set and tag use
// bits independent of those the table uses for home bucket and fingerprint.
func tierSpread(h uint64) uint64 {
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>32
}

// tierFixedBytes is the part of a tier's memory that does not grow with its
// entries: the counters' stripes and the alignment of the sets and the
// sketch. It comes out of the budget too.
const tierFixedBytes = tierStripes*64 + 2*64

// newTierCore maps a tier of at most budget bytes with slots of slot bytes
// (a multiple of 8). It returns nil when the budget holds no useful tier
// or the memory cannot be mapped: the container then runs without one.
func newTierCore(o *owner, budget uint64, slot uintptr) *tierCore {
	setBytes := tierHdr + tierWays*slot
	// The sketch takes tierSketchPer counter bytes per entry; the sets the rest.
	per := uint64(setBytes) + tierWays*tierSketchPer
	if budget < per*2+tierFixedBytes {
		return nil
	}
	sets := (budget - tierFixedBytes) / per
	skBytes := tierSketchBytes(sets * tierWays)
	setsEnd := (sets*uint64(setBytes) + 63) &^ 63 // the sketch's blocks on lines
	size := setsEnd + skBytes + tierStripes*64
	mem, err := o.MapHost(size)
	if err != nil {
		return nil
	}
	c := &tierCore{
		owner:    o,
		mem:      mem,
		size:     size,
		sets:     sets,
		setBytes: setBytes,
		slot:     slot,
	}
	c.gen.Store(1) // zeroed sets have generation 0: empty
	c.sk.init(unsafe.Add(mem, setsEnd), skBytes, sets*tierWays)
	c.cnt = unsafe.Add(mem, setsEnd+skBytes)
	c.sk.adds = (*uint64)(unsafe.Add(c.cnt, cntSketch*8))
	return c
}

// free unmaps the tier's memory.
func (c *tierCore) free() {
	if c != nil && c.mem != nil {
		c.owner.UnmapHost(c.mem)
		c.mem = nil
	}
}

// set returns the header of the set of spread hash s.
func (c *tierCore) set(s uint64) unsafe.Pointer {
	i, _ := bits.Mul64(s, c.sets) // the high bits pick the set: any count works
	return unsafe.Add(c.mem, uintptr(i)*c.setBytes)
}

// slotAt returns way w's slot of the set at p.
func (c *tierCore) slotAt(p unsafe.Pointer, w int) unsafe.Pointer {
	return unsafe.Add(p, tierHdr+uintptr(w)*c.slot)
}

// tierTag is the tag byte of spread hash s.
func tierTag(s uint64) uint64 { return s & 0xff }

func tierSeq(p unsafe.Pointer) *uint32  { return (*uint32)(p) }
func tierGen(p unsafe.Pointer) *uint32  { return (*uint32)(unsafe.Add(p, 4)) }
func tierRef(p unsafe.Pointer) *uint32  { return (*uint32)(unsafe.Add(p, 8)) }
func tierMeta(p unsafe.Pointer) *uint32 { return (*uint32)(unsafe.Add(p, 12)) }
func tierTags(p unsafe.Pointer) *uint64 { return (*uint64)(unsafe.Add(p, 16)) }

// candidates returns the ways of the set at p (read under its sequence)
// whose tag is tag, as the high bit of each matching byte; 0 if the set
// belongs to an older generation.
func (c *tierCore) candidates(p unsafe.Pointer, tag uint64, gen uint32) uint64 {
	if atomic.LoadUint32(tierGen(p)) != gen {
		return 0
	}
	valid := uint64(atomic.LoadUint32(tierMeta(p)) & 0xff)
	m := mapMatch(atomic.LoadUint64(tierTags(p)), tag*mapLSB)
	return m & tierSpreadBits(valid)
}

// tierSpreadBits turns a mask of ways (bit w) into the high bit of byte w.
func tierSpreadBits(v uint64) uint64 {
	// Multiply-free spread of 8 bits to the top bit of 8 bytes.
	v = (v | v<<28) & 0x0000000f0000000f
	v = (v | v<<14) & 0x0003000300030003
	v = (v | v<<7) & 0x0101010101010101
	return v << 7
}

// touch sets way w's reference bit of the set at p if it is clear, and
// then also counts the hit (spread hash s) in the sketch: an entry's
// frequency counts its hits, once per pass of the CLOCK hand, as well as
// its misses. So an entry in use is not evicted for a key missed a few
// times, and a hit on an entry already marked writes nothing.
func (c *tierCore) touch(p unsafe.Pointer, w int, s uint64) {
	if atomic.LoadUint32(tierRef(p))&(1<<w) == 0 {
		atomic.OrUint32(tierRef(p), 1<<w)
		c.sk.increment(s)
	}
}

// countHit counts a hit, sampled (see CacheStats.Hits), so that hits from
// many goroutines do not write a shared counter each.
func (c *tierCore) countHit(s uint64) {
	if n := tierHitSample; rand.Uint32()%n == 0 {
		c.count(s, cntHits, uint64(n))
		c.recent(s, cntRecentHits, uint64(n))
	}
}

// lock takes the sequence lock of the set at p, or reports false if a
// writer holds it. A set of an older generation is emptied first.
func (c *tierCore) lock(p unsafe.Pointer) (uint32, bool) {
	s := atomic.LoadUint32(tierSeq(p))
	if s&1 != 0 || !atomic.CompareAndSwapUint32(tierSeq(p), s, s+1) {
		return 0, false
	}
	if g := c.gen.Load(); atomic.LoadUint32(tierGen(p)) != g {
		atomic.StoreUint32(tierMeta(p), 0)
		atomic.StoreUint32(tierRef(p), 0)
		atomic.StoreUint32(tierGen(p), g)
	}
	return s + 1, true
}

// lockWait takes the lock for a container's own write, which must not be
// skipped: only admissions can hold it, and they hold it briefly.
func (c *tierCore) lockWait(p unsafe.Pointer) uint32 {
	for {
		if s, ok := c.lock(p); ok {
			return s
		}
	}
}

func (c *tierCore) unlock(p unsafe.Pointer, s uint32) {
	atomic.StoreUint32(tierSeq(p), s+1)
}

// victim picks the way to replace in the locked set at p: a free way if
// there is one (evict false), else by CLOCK.
func (c *tierCore) victim(p unsafe.Pointer) (w int, evict bool) {
	meta := atomic.LoadUint32(tierMeta(p))
	if free := ^meta & 0xff; free != 0 {
		return bits.TrailingZeros32(free), false
	}
	if !c.filled.Load() {
		c.filled.Store(true)
	}
	hand := int(meta>>8) & (tierWays - 1)
	ref := atomic.LoadUint32(tierRef(p))
	w = hand
	for i := range tierWays {
		x := (hand + i) & (tierWays - 1)
		if ref&(1<<x) == 0 {
			w = x
			break
		}
		ref &^= 1 << x
	}
	atomic.StoreUint32(tierRef(p), ref)
	atomic.StoreUint32(tierMeta(p), meta&0xff|uint32((w+1)&(tierWays-1))<<8)
	return w, true
}

// prefetchOffer starts fetching the sketch lines that an offer of spread
// hash s will read: s's own, and vs's (the victim's) when full. A miss
// calls it before its device read, so those lines (host memory, each a
// cache miss of about 100 ns when the sketch is large) arrive during the
// round trip instead of after it.
func (c *tierCore) prefetchOffer(s, vs uint64, full bool) {
	b, _ := c.sk.block(s)
	prefetch.Line(b)
	if full {
		b, _ = c.sk.block(vs)
		prefetch.Line(b)
	}
}

// peekVictim returns, without the lock, the way victim would pick in a
// full set at p (full false if the set has a free way or is of an older
// generation). What it reads may be changing: it only decides whether to
// try.
func (c *tierCore) peekVictim(p unsafe.Pointer) (int, bool) {
	meta := atomic.LoadUint32(tierMeta(p))
	if meta&0xff != 0xff || atomic.LoadUint32(tierGen(p)) != c.gen.Load() {
		return 0, false
	}
	hand := int(meta>>8) & (tierWays - 1)
	ref := atomic.LoadUint32(tierRef(p))
	for i := range tierWays {
		if x := (hand + i) & (tierWays - 1); ref&(1<<x) == 0 {
			return x, true
		}
	}
	return hand, true
}

// fill marks way w of the locked set at p as holding an entry with tag.
func (c *tierCore) fill(p unsafe.Pointer, w int, tag uint64) {
	tags := atomic.LoadUint64(tierTags(p))
	tags = tags&^(0xff<<(8*w)) | tag<<(8*w)
	atomic.StoreUint64(tierTags(p), tags)
	atomic.StoreUint32(tierRef(p), atomic.LoadUint32(tierRef(p))&^(1<<w))
	atomic.StoreUint32(tierMeta(p), atomic.LoadUint32(tierMeta(p))|1<<w)
}

// drop empties way w of the locked set at p.
func (c *tierCore) drop(p unsafe.Pointer, w int) {
	atomic.StoreUint32(tierMeta(p), atomic.LoadUint32(tierMeta(p))&^(1<<w))
}

// invalidateAll drops every entry at once.
func (c *tierCore) invalidateAll() {
	c.filled.Store(false)
	if c.gen.Add(1) == 0 {
		// The generation wrapped: a set last written 2^32 generations ago
		// would read as current. Empty every set for real.
		for i := uint64(0); i < c.sets; i++ {
			p := unsafe.Add(c.mem, uintptr(i)*c.setBytes)
			atomic.StoreUint32(tierGen(p), 0)
			atomic.StoreUint32(tierMeta(p), 0)
		}
		c.gen.Store(1)
	}
}

// entries counts the valid entries (for Stats; not synchronised with
// admissions running at the same time).
func (c *tierCore) entries() int {
	g := c.gen.Load()
	n := 0
	for i := uint64(0); i < c.sets; i++ {
		p := unsafe.Add(c.mem, uintptr(i)*c.setBytes)
		if atomic.LoadUint32(tierGen(p)) == g {
			n += bits.OnesCount32(atomic.LoadUint32(tierMeta(p)) & 0xff)
		}
	}
	return n
}

func (c *tierCore) stats() CacheStats {
	if c == nil {
		return CacheStats{}
	}
	return CacheStats{
		Bytes:      c.size,
		Capacity:   int(c.sets * tierWays),
		Entries:    c.entries(),
		Hits:       c.total(cntHits),
		Misses:     c.total(cntMisses),
		Admissions: c.total(cntAdmits),
		Evictions:  c.total(cntEvicts),
		Rejections: c.total(cntRejects),
	}
}

// tierLoad copies n bytes from a slot (padded to whole words) to dst with
// word loads that are ordered with the set's sequence reads on every
// architecture.
func tierLoad(dst, src unsafe.Pointer, n uintptr) {
	i := uintptr(0)
	for ; i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Add(dst, i)) = atomic.LoadUint64((*uint64)(unsafe.Add(src, i)))
	}
	if i < n {
		w := atomic.LoadUint64((*uint64)(unsafe.Add(src, i)))
		copy(unsafe.Slice((*byte)(unsafe.Add(dst, i)), n-i), (*[8]byte)(unsafe.Pointer(&w))[:])
	}
}

// tierBeats reports whether a candidate with sketch estimate est may evict
// an entry with estimate victim: only if it is used more often by more
// than tierAdmitMargin. The estimates near the tier's boundary differ by
// noise; without the margin, keys of about the same frequency displaced
// each other on every few misses (admissions cost a set's lock and a copy,
// and each displaced entry then misses again): with it a Zipf 1.1 stream
// over 10^6 keys made about half as many admissions and hit a little more
// often, at the cost of a little slower learning after the hot set moves.
func tierBeats(est, victim uint8) bool { return est > victim+tierAdmitMargin }

const tierAdmitMargin = 1

// tierSketch estimates how often keys were missed or hit lately: a
// count-min sketch of 4-bit counters behind a doorkeeper, a Bloom filter
// of the keys seen once (TinyLFU). The sketch is an array of 64-byte
// blocks, a key's state all in one: four of the block's 96 counters (two
// to a byte, bytes 0-47) and two of its 128 doorkeeper bits (bytes 48-63),
// so an update touches one line. A key's first occurrence since the last
// aging sets its doorkeeper bits only, so the many keys of a skewed stream
// that occur once do not raise the counters the hot keys share: the
// estimates near the tier's boundary, those admission compares, stay above
// the noise. After every tierAgeWindow updates per tier entry the counters
// are halved and the doorkeeper cleared, so the counts follow what is hot
// now. Updates from concurrent lookups are plain: a lost one only makes an
// estimate a little low.
type tierSketch struct {
	mem     unsafe.Pointer
	blocks  uint64
	adds    *uint64 // plain, in the tier's memory (see count)
	resetAt uint64
	aging   atomic.Bool
}

const (
	tierAgeWindow = 10
	tierDoorOff   = 48 // the doorkeeper's words in a block
)

// tierSketchBytes is the memory a sketch of entries tier entries takes:
// the size init is given.
func tierSketchBytes(entries uint64) uint64 {
	return max((entries*tierSketchPer+63)&^63, 64)
}

func (s *tierSketch) init(mem unsafe.Pointer, bytes, entries uint64) {
	s.mem = mem
	s.blocks = max(bytes/64, 1)
	s.resetAt = max(tierAgeWindow*entries, 64)
}

// block returns h's block. The sketch remixes the tier's spread hash, so
// that its block and counters do not follow the set and the tag.
func (s *tierSketch) block(h uint64) (unsafe.Pointer, uint64) {
	h = bits.RotateLeft64(h*0x9e3779b97f4a7c15, 23)
	i, _ := bits.Mul64(h, s.blocks)
	return unsafe.Add(s.mem, uintptr(i)*64), h
}

// tierCounter returns the byte and shift of the i-th counter (of 4) of h
// in block b.
func tierCounter(b unsafe.Pointer, h uint64, i int) (*uint8, uint) {
	x := (h >> (8 * i) & 0xff) * 96 >> 8
	return (*uint8)(unsafe.Add(b, uintptr(x>>1))), uint(x&1) * 4
}

func tierMin(b unsafe.Pointer, h uint64) uint8 {
	e := uint8(15)
	for i := range 4 {
		p, sh := tierCounter(b, h, i)
		e = min(e, *p>>sh&15)
	}
	return e
}

// tierDoor returns h's doorkeeper word in block b and its bits there (one
// bit in each of the block's two words would do as well; two in one word
// keep the test to one load).
func tierDoor(b unsafe.Pointer, h uint64) (*uint64, uint64) {
	w := (*uint64)(unsafe.Add(b, tierDoorOff+uintptr(h>>32&1)*8))
	return w, 1<<(h>>33&63) | 1<<(h>>39&63)
}

// estimate is h's count: its counters' minimum, plus one if the doorkeeper
// has seen it since the last aging.
func (s *tierSketch) estimate(h uint64) uint8 {
	b, h := s.block(h)
	e := tierMin(b, h)
	if w, m := tierDoor(b, h); *w&m == m {
		e++
	}
	return e
}

// increment counts h once and returns its new estimate. The first time
// since the last aging it only enters the doorkeeper; after that its
// smallest counters grow (conservative update).
func (s *tierSketch) increment(h uint64) uint8 {
	b, h := s.block(h)
	e := tierMin(b, h)
	if w, m := tierDoor(b, h); *w&m != m {
		*w |= m
	} else if e < 15 {
		for i := range 4 {
			if p, sh := tierCounter(b, h, i); *p>>sh&15 == e {
				*p += 1 << sh
			}
		}
		e++
	}
	if *s.adds++; *s.adds >= s.resetAt && s.aging.CompareAndSwap(false, true) {
		s.age()
		*s.adds = 0
		s.aging.Store(false)
	}
	return e + 1
}

// age halves every counter and empties the doorkeeper.
func (s *tierSketch) age() {
	w := unsafe.Slice((*uint64)(s.mem), s.blocks*8)
	for i := 0; i < len(w); i += 8 {
		for j := range tierDoorOff / 8 {
			w[i+j] = w[i+j] >> 1 & 0x7777777777777777
		}
		for j := tierDoorOff / 8; j < 8; j++ {
			w[i+j] = 0
		}
	}
}

// add returns the field-wise sum of s and o: the stats of two tiers taken
// together (a sharded container's shards).
func (s CacheStats) add(o CacheStats) CacheStats {
	s.Bytes += o.Bytes
	s.Capacity += o.Capacity
	s.Entries += o.Entries
	s.Hits += o.Hits
	s.Misses += o.Misses
	s.Admissions += o.Admissions
	s.Evictions += o.Evictions
	s.Rejections += o.Rejections
	return s
}
