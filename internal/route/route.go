// Package route splits batches of 8-byte keys by shard and puts the
// answers back in batch order, for the containers sharded over several
// devices. Count8 finds every key's shard (one byte a key) and counts each
// shard's keys; Place8 writes every key after the keys of its shard
// already written; Route8 does both in one pass into regions of bounded
// size; Gather8 walks the shard ids again and takes every answer from its
// shard's next slot.
//
// On amd64 with AVX-512 they handle eight keys a step (the hash in vector
// multiplies, a shard's keys picked out with a compress and written with
// one masked store, answers put back with masked loads and expands);
// elsewhere plain loops do the same. Both produce the same bytes; tests
// compare them.
package route

import (
	"fmt"
	"os"
	"unsafe"
)

// MaxShards bounds the shards: a key's shard is one byte.
const MaxShards = 255

// The vector loops take every shard in turn for each eight keys, so they
// pay for few shards only. BenchmarkScatterGather compares them with the
// plain loops: their lead shrinks as shards are added, counting still
// leading at 8 shards, placing and gathering only up to 4 (at 8 shards,
// before empty shards were skipped, placing and gathering ran slower than
// the plain loops).
const (
	countVectorShards = 8
	moveVectorShards  = 4
)

// Shard8 returns the shard, in [0, nd), of the 8-byte key k under seed: the
// high 32 bits of a 64-bit mix (SplitMix64's finalizer of k^seed) scaled
// to nd. Sequential, strided and random keys spread evenly under any seed
// (TestShard8Spread); the caller picks the seed at random.
func Shard8(k, seed uint64, nd int) int {
	z := k ^ seed
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return int((z >> 32) * uint64(nd) >> 32)
}

// vector reports whether the AVX-512 loops are in use; VMEM_ROUTE=go
// (or SetVector(false) in tests) turns them off.
var vector = hasVector && os.Getenv("VMEM_ROUTE") != "go"

// SetVector turns the vector loops on or off (where the CPU has them) and
// returns the previous setting; tests use it to compare the two.
func SetVector(on bool) bool {
	old := vector
	vector = on && hasVector
	return old
}

// HasVector reports whether this CPU runs the vector loops.
func HasVector() bool { return hasVector }

// Count8 finds the shard of every key: sid[i] = Shard8(keys[i], seed,
// len(cnt)), and cnt[d] grows by the number of keys of shard d. sid must
// be as long as keys; len(cnt) in 1..MaxShards.
func Count8(keys []uint64, sid []uint8, seed uint64, cnt []int) {
	nd := len(cnt)
	check(nd, nd, len(keys), len(sid))
	i := 0
	if vector && nd <= countVectorShards && len(keys) >= 8 {
		i = len(keys) &^ 7
		count8Vec(unsafe.SliceData(keys), i/8, unsafe.SliceData(sid), seed, nd, unsafe.SliceData(cnt))
	}
	for ; i < len(keys); i++ {
		d := Shard8(keys[i], seed, nd)
		sid[i] = uint8(d)
		cnt[d]++
	}
}

// Place8 writes every key into its shard's slots: for each i in order,
// with d = sid[i], keys[i] goes to the 8-byte slot cur[d] of dst[d], then
// cur[d] grows by one. Each dst[d] must hold every slot written; every
// sid[i] < len(dst), cur at least as long.
func Place8(keys []uint64, sid []uint8, dst []unsafe.Pointer, cur []int) {
	nd := len(dst)
	check(nd, len(cur), len(keys), len(sid))
	i := 0
	if vector && nd <= moveVectorShards && len(keys) >= 8 {
		i = len(keys) &^ 7
		place8Vec(unsafe.SliceData(keys), i/8, unsafe.SliceData(sid), nd, unsafe.SliceData(dst), unsafe.SliceData(cur))
	}
	for ; i < len(keys); i++ {
		d := sid[i]
		*(*uint64)(unsafe.Add(dst[d], cur[d]*8)) = keys[i]
		cur[d]++
	}
}

// Route8 is Count8 and Place8 in one pass, for shards with room for a
// bounded number of keys: for each i in order, with d = Shard8(keys[i],
// seed, len(dst)), it sets sid[i] = d and writes keys[i] at the 8-byte
// slot cur[d] of dst[d], then adds one to cur[d], never past limit[d]. It
// reports false if some shard's keys would pass its limit; sid, cur and
// the slots are then partly written and must be redone another way.
func Route8(keys []uint64, sid []uint8, seed uint64, dst []unsafe.Pointer, cur, limit []int) bool {
	nd := len(dst)
	check(nd, min(len(cur), len(limit)), len(keys), len(sid))
	i := 0
	if vector && nd <= moveVectorShards && len(keys) >= 8 {
		i = len(keys) &^ 7
		if !route8Vec(unsafe.SliceData(keys), i/8, unsafe.SliceData(sid), seed, nd, unsafe.SliceData(dst), unsafe.SliceData(cur), unsafe.SliceData(limit)) {
			return false
		}
	}
	for ; i < len(keys); i++ {
		k := keys[i]
		d := Shard8(k, seed, nd)
		if cur[d] >= limit[d] {
			return false
		}
		sid[i] = uint8(d)
		*(*uint64)(unsafe.Add(dst[d], cur[d]*8)) = k
		cur[d]++
	}
	return true
}

// Gather8 is Place8's inverse, for the answers: for each i in order, with
// d = sid[i], out[i] gets the 8-byte slot cur[d] of src[d] and, when fsrc
// is not nil, fout[i] the byte slot cur[d] of fsrc[d]; then cur[d] grows
// by one. out (and fout) must be as long as sid; every sid[i] < len(src).
func Gather8(sid []uint8, src []unsafe.Pointer, cur []int, out []uint64, fsrc []unsafe.Pointer, fout []bool) {
	nd := len(src)
	check(nd, len(cur), len(sid), len(out))
	if fsrc != nil && (len(fsrc) < nd || len(fout) < len(sid)) {
		panic(fmt.Sprintf("route: Gather8: %d found sources, %d found flags for %d shards, %d keys", len(fsrc), len(fout), nd, len(sid)))
	}
	i := 0
	if vector && nd <= moveVectorShards && len(sid) >= 8 {
		i = len(sid) &^ 7
		var fs *unsafe.Pointer
		var fo *bool
		if fsrc != nil {
			fs, fo = unsafe.SliceData(fsrc), unsafe.SliceData(fout)
		}
		gather8Vec(unsafe.SliceData(sid), i/8, nd, unsafe.SliceData(src), unsafe.SliceData(cur), unsafe.SliceData(out), fs, fo)
	}
	for ; i < len(sid); i++ {
		d := sid[i]
		c := cur[d]
		out[i] = *(*uint64)(unsafe.Add(src[d], c*8))
		if fsrc != nil {
			fout[i] = *(*bool)(unsafe.Add(fsrc[d], c))
		}
		cur[d] = c + 1
	}
}

func check(nd, ncur, n, m int) {
	if nd < 1 || nd > MaxShards || ncur < nd || m < n {
		panic(fmt.Sprintf("route: %d shards, %d cursors, %d keys, %d slots", nd, ncur, n, m))
	}
}
