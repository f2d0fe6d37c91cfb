package route

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// variants runs f with the vector loops on and off (on only where the CPU
// has them).
func variants(t *testing.T, f func(t *testing.T)) {
	for _, v := range []bool{false, true} {
		if v && !HasVector() {
			continue
		}
		t.Run(fmt.Sprintf("vector=%v", v), func(t *testing.T) {
			old := SetVector(v)
			defer SetVector(old)
			f(t)
		})
	}
}

// TestScatterGather: Count8 sets every key's shard id and counts them;
// Place8 puts every key in its shard's buffer after the slots already
// there, in batch order; Gather8 of those buffers gives the batch back,
// found bytes too. Buffers carry guard slots on both sides that must stay
// untouched.
func TestScatterGather(t *testing.T) {
	variants(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, nd := range []int{1, 2, 3, 4, 7, 8, 9, 16, 33, 255} {
			for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 64, 1000, 4099} {
				seed := r.Uint64()
				keys := make([]uint64, n)
				for i := range keys {
					keys[i] = r.Uint64()
					if i%5 == 0 {
						keys[i] = uint64(i) // small keys too
					}
				}
				const guard = 9
				start := make([]int, nd)
				bufs := make([][]uint64, nd)
				dst := make([]unsafe.Pointer, nd)
				cur := make([]int, nd)
				for d := range nd {
					start[d] = r.IntN(5)
					bufs[d] = make([]uint64, guard+start[d]+n+guard)
					for i := range bufs[d] {
						bufs[d][i] = 0xdead
					}
					dst[d] = unsafe.Pointer(&bufs[d][guard])
					cur[d] = start[d]
				}
				sid := make([]uint8, n)
				cnt := make([]int, nd)
				for d := range cnt {
					cnt[d] = 3 // counts add to what is there
				}
				Count8(keys, sid, seed, cnt)
				Place8(keys, sid, dst, cur)
				next := slices.Clone(start)
				for i, k := range keys {
					d := Shard8(k, seed, nd)
					if int(sid[i]) != d {
						t.Fatalf("nd %d n %d: key %d: sid %d, want %d", nd, n, i, sid[i], d)
					}
					if got := bufs[d][guard+next[d]]; got != k {
						t.Fatalf("nd %d n %d: key %d: shard %d slot %d holds %#x, want %#x", nd, n, i, d, next[d], got, k)
					}
					next[d]++
				}
				for d := range nd {
					if cnt[d] != 3+next[d]-start[d] {
						t.Fatalf("nd %d n %d: count %d = %d, want %d", nd, n, d, cnt[d]-3, next[d]-start[d])
					}
					if cur[d] != next[d] {
						t.Fatalf("nd %d n %d: cursor %d = %d, want %d", nd, n, d, cur[d], next[d])
					}
					for i, v := range bufs[d] {
						if (i < guard+start[d] || i >= guard+next[d]) && v != 0xdead {
							t.Fatalf("nd %d n %d: shard %d: slot %d outside the written run changed", nd, n, d, i-guard)
						}
					}
				}
				// Answers: the key plus one, found when the key is odd.
				fbufs := make([][]bool, nd)
				fsrc := make([]unsafe.Pointer, nd)
				for d := range nd {
					for i := guard + start[d]; i < guard+next[d]; i++ {
						bufs[d][i]++
					}
					fbufs[d] = make([]bool, len(bufs[d]))
					for i := range fbufs[d] {
						fbufs[d][i] = i >= guard && bufs[d][i]%2 == 0
					}
					fsrc[d] = unsafe.Pointer(&fbufs[d][guard])
				}
				for _, withFound := range []bool{false, true} {
					copy(cur, start)
					out := make([]uint64, n)
					var fout []bool
					var fs []unsafe.Pointer
					if withFound {
						fout, fs = make([]bool, n), fsrc
					}
					Gather8(sid, dst, cur, out, fs, fout)
					for i, k := range keys {
						if out[i] != k+1 {
							t.Fatalf("nd %d n %d found %v: answer %d = %#x, want %#x", nd, n, withFound, i, out[i], k+1)
						}
						if withFound && fout[i] != ((k+1)%2 == 0) {
							t.Fatalf("nd %d n %d: found %d = %v", nd, n, i, fout[i])
						}
					}
					if !slices.Equal(cur, next) {
						t.Fatalf("nd %d n %d: cursors after Gather8 %v, want %v", nd, n, cur, next)
					}
				}
			}
		}
	})
}

// TestShard8Spread: sequential keys, keys with only high bits set and
// random keys spread over the shards within six standard deviations.
func TestShard8Spread(t *testing.T) {
	const n = 1 << 16
	gens := map[string]func(i int) uint64{
		"sequential": func(i int) uint64 { return uint64(i) },
		"high":       func(i int) uint64 { return uint64(i) << 48 },
		"stride":     func(i int) uint64 { return uint64(i) * 4096 },
	}
	for name, g := range gens {
		for _, nd := range []int{2, 3, 8, 255} {
			cnt := make([]int, nd)
			for i := range n {
				d := Shard8(g(i), 12345, nd)
				if d < 0 || d >= nd {
					t.Fatalf("%s: shard %d of %d", name, d, nd)
				}
				cnt[d]++
			}
			mean := float64(n) / float64(nd)
			sd := math.Sqrt(mean)
			for d, c := range cnt {
				if math.Abs(float64(c)-mean) > 6*sd {
					t.Fatalf("%s over %d shards: shard %d got %d keys, mean %.0f", name, nd, d, c, mean)
				}
			}
		}
	}
}

func BenchmarkScatterGather(b *testing.B) {
	const n = 1 << 16
	r := rand.New(rand.NewPCG(3, 4))
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = r.Uint64()
	}
	for _, nd := range []int{2, 4, 8} {
		bufs := make([][]uint64, nd)
		fb := make([][]bool, nd)
		dst, fsrc := make([]unsafe.Pointer, nd), make([]unsafe.Pointer, nd)
		for d := range nd {
			bufs[d], fb[d] = make([]uint64, n), make([]bool, n)
			dst[d], fsrc[d] = unsafe.Pointer(&bufs[d][0]), unsafe.Pointer(&fb[d][0])
		}
		sid := make([]uint8, n)
		out := make([]uint64, n)
		fout := make([]bool, n)
		cur := make([]int, nd)
		for _, v := range []bool{false, true} {
			if v && !HasVector() {
				continue
			}
			old := SetVector(v)
			cnt := make([]int, nd)
			b.Run(fmt.Sprintf("count/nd=%d/vector=%v", nd, v), func(b *testing.B) {
				for b.Loop() {
					Count8(keys, sid, 7, cnt)
				}
				b.SetBytes(n * 8)
			})
			b.Run(fmt.Sprintf("place/nd=%d/vector=%v", nd, v), func(b *testing.B) {
				for b.Loop() {
					clear(cur)
					Place8(keys, sid, dst, cur)
				}
				b.SetBytes(n * 8)
			})
			b.Run(fmt.Sprintf("gather/nd=%d/vector=%v", nd, v), func(b *testing.B) {
				for b.Loop() {
					clear(cur)
					Gather8(sid, dst, cur, out, fsrc, fout)
				}
				b.SetBytes(n * 8)
			})
			SetVector(old)
		}
	}
}

// BenchmarkOneShard: a batch whose keys all go to one of two shards
// against keys spread over both; the vector loops skip a shard with none
// of a step's keys (masked memory operations with an empty mask are slow
// on some CPUs).
func BenchmarkOneShard(b *testing.B) {
	const n = 1 << 16
	for _, pat := range []string{"one", "spread"} {
		sid := make([]uint8, n)
		for i := range sid {
			sid[i] = 1
			if pat == "spread" {
				sid[i] = uint8(Shard8(uint64(i), 1, 2))
			}
		}
		bufs := [][]uint64{make([]uint64, n), make([]uint64, n)}
		fb := [][]bool{make([]bool, n), make([]bool, n)}
		dst := []unsafe.Pointer{unsafe.Pointer(&bufs[0][0]), unsafe.Pointer(&bufs[1][0])}
		fsrc := []unsafe.Pointer{unsafe.Pointer(&fb[0][0]), unsafe.Pointer(&fb[1][0])}
		cur := make([]int, 2)
		keys, out, fout := make([]uint64, n), make([]uint64, n), make([]bool, n)
		b.Run(pat+"/place", func(b *testing.B) {
			for b.Loop() {
				clear(cur)
				Place8(keys, sid, dst, cur)
			}
			b.SetBytes(n * 8)
		})
		b.Run(pat+"/gather", func(b *testing.B) {
			for b.Loop() {
				clear(cur)
				Gather8(sid, dst, cur, out, fsrc, fout)
			}
			b.SetBytes(n * 8)
		})
	}
}

// TestRoute8: with room enough Route8 writes what Count8 and Place8 do;
// with a limit some shard passes it reports false and writes no slot at
// or past any limit.
func TestRoute8(t *testing.T) {
	variants(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, nd := range []int{1, 2, 3, 4, 7} {
			for _, n := range []int{0, 5, 8, 64, 1001} {
				seed := r.Uint64()
				keys := make([]uint64, n)
				for i := range keys {
					keys[i] = r.Uint64()
				}
				want := make([][]uint64, nd)
				wantSid := make([]uint8, n)
				for i, k := range keys {
					d := Shard8(k, seed, nd)
					wantSid[i] = uint8(d)
					want[d] = append(want[d], k)
				}
				for _, room := range []int{n, n / 3} {
					bufs := make([][]uint64, nd)
					dst := make([]unsafe.Pointer, nd)
					cur, limit := make([]int, nd), make([]int, nd)
					for d := range nd {
						bufs[d] = make([]uint64, n+8)
						for i := range bufs[d] {
							bufs[d][i] = 0xdead
						}
						dst[d] = unsafe.Pointer(&bufs[d][0])
						cur[d], limit[d] = 2, 2+room
					}
					sid := make([]uint8, n)
					ok := Route8(keys, sid, seed, dst, cur, limit)
					fits := true
					for d := range nd {
						fits = fits && len(want[d]) <= room
					}
					if ok != fits {
						t.Fatalf("nd %d n %d room %d: Route8 %v, want %v", nd, n, room, ok, fits)
					}
					for d := range nd {
						for i, v := range bufs[d] {
							if (i < 2 || i >= limit[d]) && v != 0xdead {
								t.Fatalf("nd %d n %d room %d: shard %d slot %d outside its room written", nd, n, room, d, i)
							}
						}
						if !ok {
							continue
						}
						if !slices.Equal(bufs[d][2:cur[d]], want[d]) {
							t.Fatalf("nd %d n %d: shard %d holds %v, want %v", nd, n, d, bufs[d][2:cur[d]], want[d])
						}
					}
					if ok && !slices.Equal(sid, wantSid) {
						t.Fatalf("nd %d n %d: shard ids differ", nd, n)
					}
				}
			}
		}
	})
}
