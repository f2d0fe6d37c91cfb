package collections

// String keys. A BTree[string, V] (K of kind string) is a thin shell over
// an inner BTree[btSKey, V] whose keys are fixed-size records, so that a
// leaf entry keeps a fixed size and every path of the tree (leaves, host
// index, extents, scans, the leaf tier, BulkLoad, snapshots) works
// unchanged:
//
//	btSKey{pre: the first 8 bytes, big-endian, zero-padded; h: strarena.Handle}
//
// A key of at most 8 bytes is whole in pre and its length in h (offset 0):
// it takes no arena space. A longer key's bytes live in a strarena.Arena in
// device memory (the leaves' tier), h locating them. A tree of 10^7 keys
// thus holds no Go strings: 16 bytes a key in its leaf, plus the arena.
//
// Order. For NewBTreeOrdered the order is bytewise (Go's <): records with
// different prefixes compare as their prefixes (zero padding sorts a
// prefix of a string before it), equal prefixes with one key of at most 8
// bytes compare by length, and only two longer keys with equal prefixes
// read the arena, from byte 8 on. With a less function (NewBTree) the
// prefix says nothing about the order: both keys are materialized as Go
// strings for each call of less, which costs an allocation per stored key
// compared; prefer NewBTreeOrdered.
//
// Search keys are never put in the arena (readers may run at once and the
// arena is a writer's structure). A reader's key longer than 8 bytes takes
// a slot of a small table (btProbes) and its record names the slot with a
// handle that no stored string can have (btSKProbe). A writer runs alone:
// its key is in btSK.wS, named by btSKWriter (Delete) or by the handle it
// was just stored under (ReplaceOrInsert: wH), so its comparisons read the
// Go string, not the arena.
//
// Freeing. A key's bytes are freed when its entry is deleted, by Clear and
// by Close; an overwrite keeps the stored key (the tree's key-identity
// rule) and frees the copy made for the call. The host index holds copies
// of leaf keys as separators, which may outlive the entry (a B+tree does
// not update a separator when its key is deleted). A deleted key's handle
// therefore waits in an orphan list; a sweep, run when the list has grown
// by max(btSKSweepMin, Len/64) or the tree is empty, frees the orphans no
// separator holds. A
// handle no separator holds at a sweep is held by none later: separators
// are only ever copied from leaves or from other separators.
//
// Hot tier: the entry tier is for integer keys only; the leaf tier works
// as for any key. GetBatch looks keys up on the CPU, on all cores.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/collections/internal/strarena"
	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/vmem"
)

// btSKey is a string key's record in a leaf or the host index.
type btSKey struct {
	pre uint64          // first 8 bytes, big-endian, zero-padded
	h   strarena.Handle // arena handle; length only (<= 8 bytes); or a probe
}

const (
	btSKInline = 8 // keys up to this length live in pre alone

	// btSKProbe marks a search key that is not stored: every offset bit
	// set and a length of at least 2^27. A stored string at the arena's
	// last 16-byte unit is at most 16 bytes long, so no handle has it.
	btSKProbe  = ^strarena.Handle(strarena.MaxLen) | (strarena.MaxLen+1)/2
	btSKSlots  = (strarena.MaxLen+1)/2 - 1 // the probe's slot bits
	btSKWriter = btSKProbe | btSKSlots     // the writer's key, in btSK.wS
	btSKNoSlot = ^uint32(0)
)

// btSKSweepMin is how many orphans gather before a sweep at least (tests
// lower it).
var btSKSweepMin = 1024

// btSK holds what a string-keyed tree adds to its inner tree.
type btSK[K, V any] struct {
	in    *BTree[btSKey, V]
	arena *strarena.Arena
	user  func(a, b string) bool // nil: bytewise order
	pr    btProbes

	// Writer context (writers run alone): the key of the call in
	// progress and the handle it is stored under, zero when none.
	wH strarena.Handle
	wS string

	orphans []strarena.Handle // deleted keys a separator may still hold
	sweepAt int               // len(orphans) that starts a sweep
}

// btStrKey reports whether K is a string type.
func btStrKey[K any]() bool { return isStringType(reflect.TypeFor[K]()) }

// btKStr reads a key of a string type as a string: K's kind is String, so
// it has a string's layout.
func btKStr[K any](k K) string { return *(*string)(unsafe.Pointer(&k)) }

// btStrK is btKStr's inverse.
func btStrK[K any](s string) K { return *(*K)(unsafe.Pointer(&s)) }

// btPrefix packs s's first 8 bytes big-endian, zero-padded, so that
// prefixes compare as the strings do where they differ.
func btPrefix(s string) uint64 {
	if len(s) >= 8 {
		// The string has 8 bytes at StringData; they are only read.
		return binary.BigEndian.Uint64(unsafe.Slice(unsafe.StringData(s), 8))
	}
	var p uint64
	for i := 0; i < len(s); i++ {
		p |= uint64(s[i]) << (56 - 8*i)
	}
	return p
}

// btNewSK makes a string-keyed tree; user nil orders bytewise.
func btNewSK[K, V any](dev *vmem.Device, lessK func(a, b K) bool, user func(a, b string) bool, opts []BTreeOption) (*BTree[K, V], error) {
	s := &btSK[K, V]{user: user, sweepAt: btSKSweepMin}
	less := func(a, b btSKey) bool { return s.cmp(a, b) < 0 }
	if user != nil {
		less = s.lessUser
	}
	in, err := btNew[btSKey, V](dev, less, btKGeneric, opts)
	if err != nil {
		return nil, err
	}
	cfg := btConfig{tier: vmem.Mapped}
	for _, o := range opts {
		if o != nil {
			o.applyBTree(&cfg)
		}
	}
	if s.arena, err = strarena.New(dev, strarena.Options{Tier: cfg.tier}); err != nil {
		in.Close()
		return nil, fmt.Errorf("collections: NewBTree: %w", err)
	}
	s.in = in
	t := &BTree[K, V]{dev: dev, less: lessK, sk: s}
	t.unreg = lcAtClose(dev, t, (*BTree[K, V]).Close)
	return t, nil
}

// closeSK is Close for a string-keyed tree.
func (t *BTree[K, V]) closeSK() error {
	if t.closed {
		return nil
	}
	t.closed = true
	if t.unreg != nil {
		t.unreg()
	}
	s := t.sk
	err := s.in.Close()
	if e := s.arena.Close(); err == nil {
		err = e
	}
	s.orphans = nil
	return err
}

// store makes the record of key k, putting its bytes in the arena when
// they do not fit in the prefix.
func (s *btSK[K, V]) store(k string) (btSKey, error) {
	r := btSKey{pre: btPrefix(k), h: strarena.Handle(len(k))}
	if len(k) <= btSKInline {
		return r, nil
	}
	h, err := s.arena.PutString(k)
	if err != nil {
		return r, err
	}
	r.h = h
	return r, nil
}

// stored reports whether r's bytes are in the arena.
func btSKStored(r btSKey) bool {
	return r.h.Len() > btSKInline && r.h&^btSKSlots != btSKProbe
}

// free gives back the bytes of a record that no leaf and no separator
// holds.
func (s *btSK[K, V]) free(r btSKey) {
	if btSKStored(r) {
		s.arena.Free(r.h)
	}
}

// probe makes a reader's search record for k; a key longer than 8 bytes
// takes a slot, which the caller gives back with s.pr.put.
func (s *btSK[K, V]) probe(k string) (btSKey, uint32) {
	r := btSKey{pre: btPrefix(k), h: strarena.Handle(len(k))}
	if len(k) <= btSKInline {
		return r, btSKNoSlot
	}
	i := s.pr.take(k)
	r.h = btSKProbe | strarena.Handle(i)
	return r, i
}

// wprobe is probe for a writer: no slot, the key goes to wS.
func (s *btSK[K, V]) wprobe(k string) btSKey {
	r := btSKey{pre: btPrefix(k), h: strarena.Handle(len(k))}
	if len(k) > btSKInline {
		r.h, s.wS = btSKWriter, k
	}
	return r
}

// text returns r's bytes as a Go string where they are at hand (a search
// key, the writer's key), else false.
func (s *btSK[K, V]) text(r btSKey) (string, bool) {
	if r.h&^btSKSlots == btSKProbe {
		if r.h == btSKWriter {
			return s.wS, true
		}
		return s.pr.get(uint32(r.h & btSKSlots)), true
	}
	if s.wH != 0 && r.h == s.wH {
		return s.wS, true
	}
	return "", false
}

// klen is the length of r's key.
func (s *btSK[K, V]) klen(r btSKey) int {
	if r.h&^btSKSlots == btSKProbe {
		t, _ := s.text(r)
		return len(t)
	}
	return r.h.Len()
}

// cmp orders two records bytewise: by prefix, by length when one key is
// whole in its prefix, else by the bytes after the prefix.
func (s *btSK[K, V]) cmp(a, b btSKey) int {
	if a.pre != b.pre {
		if a.pre < b.pre {
			return -1
		}
		return 1
	}
	la, lb := s.klen(a), s.klen(b)
	if la <= btSKInline || lb <= btSKInline {
		return cmp.Compare(la, lb)
	}
	sa, aok := s.text(a)
	sb, bok := s.text(b)
	switch {
	case aok && bok:
		return strings.Compare(sa, sb)
	case bok:
		c, err := s.arena.CompareString(a.h, sb)
		s.note(err)
		return c
	case aok:
		c, err := s.arena.CompareString(b.h, sa)
		s.note(err)
		return -c
	}
	return s.cmpStored(a.h, b.h)
}

// btSKChunk is how many bytes cmpStored reads of each key at a time.
const btSKChunk = 256

// cmpStored compares two stored keys whose first 8 bytes are equal.
func (s *btSK[K, V]) cmpStored(a, b strarena.Handle) int {
	var ba, bb [btSKChunk]byte
	la, lb := a.Len(), b.Len()
	for off := btSKInline; off < min(la, lb); off += btSKChunk {
		n := min(btSKChunk, la-off, lb-off)
		if err := s.arena.Read(ba[:n], a, off); err != nil {
			s.note(err)
			return 0
		}
		if err := s.arena.Read(bb[:n], b, off); err != nil {
			s.note(err)
			return 0
		}
		if c := bytes.Compare(ba[:n], bb[:n]); c != 0 {
			return c
		}
	}
	return cmp.Compare(la, lb)
}

// str returns r's key as a Go string.
func (s *btSK[K, V]) str(r btSKey) string {
	if t, ok := s.text(r); ok {
		return t
	}
	if n := r.h.Len(); n <= btSKInline {
		var b [btSKInline]byte
		binary.BigEndian.PutUint64(b[:], r.pre)
		return string(b[:n])
	}
	t, err := s.arena.String(r.h)
	s.note(err)
	return t
}

// key returns r's key as a K.
func (s *btSK[K, V]) key(r btSKey) K { return btStrK[K](s.str(r)) }

// lessUser is the inner tree's order for a less function: on the strings.
func (s *btSK[K, V]) lessUser(a, b btSKey) bool { return s.user(s.str(a), s.str(b)) }

// note keeps an arena read's error for Err (the device was lost).
func (s *btSK[K, V]) note(err error) {
	if err != nil {
		s.in.noteErr(err)
	}
}

// drop disposes of a deleted entry's key: its bytes join the orphans (a
// separator may hold them), swept when enough have gathered.
func (s *btSK[K, V]) drop(r btSKey) {
	if !btSKStored(r) {
		return
	}
	s.orphans = append(s.orphans, r.h)
	if len(s.orphans) >= s.sweepAt || s.in.n == 0 {
		s.sweep()
	}
}

// sweep frees the orphans that no separator of the host index holds.
func (s *btSK[K, V]) sweep() {
	x := &s.in.idx
	var refs []strarena.Handle
	if x.height > 0 {
		refs = btSKSeparators(x, x.root, x.height-1, nil)
	}
	slices.Sort(refs)
	keep := s.orphans[:0]
	for _, h := range s.orphans {
		if _, held := slices.BinarySearch(refs, h); held {
			keep = append(keep, h)
		} else {
			s.arena.Free(h)
		}
	}
	clear(s.orphans[len(keep):])
	s.orphans = keep
	s.sweepAt = len(keep) + max(btSKSweepMin, s.in.n/64)
}

// btSKSeparators appends the stored handles of the subtree of node id (at
// level) to out.
func btSKSeparators(x *btIndex[btSKey], id uint32, level int, out []strarena.Handle) []strarena.Handle {
	nd := x.nodes[id]
	for i := range int(nd.n) {
		if r := nd.keys[i]; btSKStored(r) {
			out = append(out, r.h)
		}
		if level > 0 {
			out = btSKSeparators(x, nd.kids[i], level-1, out)
		}
	}
	return out
}

// btProbes holds the search keys of readers in progress, by slot: chunks
// of btProbeChunk strings, added as more readers run at once and never
// moved, so a slot is read without a lock.
type btProbes struct {
	mu     sync.Mutex
	free   []uint32
	n      uint32
	chunks [btProbeChunks]atomic.Pointer[[btProbeChunk]string]
}

const (
	btProbeChunk  = 256
	btProbeChunks = 4096 // a million readers at once
)

func (p *btProbes) take(k string) uint32 {
	p.mu.Lock()
	var i uint32
	if n := len(p.free); n > 0 {
		i = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		i = p.n
		if i/btProbeChunk >= btProbeChunks {
			p.mu.Unlock()
			panic("collections: too many string-key searches at once")
		}
		if i%btProbeChunk == 0 {
			p.chunks[i/btProbeChunk].Store(new([btProbeChunk]string))
		}
		p.n++
	}
	p.mu.Unlock()
	p.chunks[i/btProbeChunk].Load()[i%btProbeChunk] = k
	return i
}

func (p *btProbes) get(i uint32) string { return p.chunks[i/btProbeChunk].Load()[i%btProbeChunk] }

// put gives slot i back (btSKNoSlot: none taken).
func (p *btProbes) put(i uint32) {
	if i == btSKNoSlot {
		return
	}
	p.chunks[i/btProbeChunk].Load()[i%btProbeChunk] = ""
	p.mu.Lock()
	p.free = append(p.free, i)
	p.mu.Unlock()
}

// save is Save's body for a string-keyed tree.
func (s *btSK[K, V]) save(w io.Writer, h snapfmt.Header) error {
	r := s.in.ascend("", nil, nil)
	defer r.stop() // a writer that panics leaves no window behind
	seq := func(yield func(K, V) bool) {
		r.seq(func(k btSKey, v V) bool { return yield(s.key(k), v) })
	}
	defer runtime.KeepAlive(s)
	return snapSaveEntries(w, h, s.in.Len(), seq, s.in.Err)
}
