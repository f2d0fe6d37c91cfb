package main

// The map suite: collections.Map against Go's map, the naive path (an
// open-addressing table in mapped memory) and, for string keys,
// VictoriaMetrics/fastcache, the off-heap cache Go programs use today.

import (
	"time"

	"github.com/VictoriaMetrics/fastcache"

	"github.com/govram/govram/collections"
)

// delBatch is how many deletes run before the deleted keys are put back
// (untimed), so the map keeps its size.
const delBatch = 4096

func mapSuite() *suite {
	return &suite{
		Name: "map",
		Dist: true,
		About: "collections.Map against Go's map (the baseline), the naive path (an open-addressing table " +
			"in one mapped block, plain loads and stores) and, for string keys, fastcache (off-heap, " +
			"[]byte keys and values). map: uint64 keys and values; map-string: 21-byte string keys, " +
			"32-byte string values. Containers are sized for the entries up front (WithCapacity, make(map, n)).",
		Ops: []opDoc{
			{"build", "insert the entries one by one into the empty container (measured once, per entry)"},
			{"get-hit", "look up a present key, random order (govram/batch: GetBatch of 4096 keys; govram/g<n>: Get from n goroutines at once, aggregate time per key)"},
			{"get-miss", "look up an absent key"},
			{"put", "overwrite the value of a present key (govram/batch: PutBatch of 4096 keys)"},
			{"delete", "delete a present key (batches of 4096, put back untimed)"},
			{"batch-64, batch-4096, batch-1e6", "govram/g<n>: GetBatch calls of that many present keys from n goroutines at once (-goroutines), each with its own keys; one operation is one key, Mkeys/s the rate of all goroutines together"},
		},
		Groups: func(e *env, n int) []*group {
			return []*group{
				{Suite: "map", Name: "map", Size: n, Baselines: []string{"go map"}, HitRate: e.cfg.distSet,
					Impls: []*impl{mapGovram(e, n), mapNaive(e, n), mapGo(e, n)}},
				{Suite: "map", Name: "map-string", Size: n, Baselines: []string{"go map", "fastcache"}, HitRate: e.cfg.distSet,
					Impls: []*impl{smapGovram(e, n), smapGo(e, n), smapFastcache(e, n)}},
			}
		},
	}
}

var mapOps = []string{"build", "get-hit", "get-miss", "put", "delete"}

// mapDistOps are the operations run under every -dist distribution.
var mapDistOps = []string{"get-hit", "put"}

// govramMapOps adds the batch variants: GetBatch and PutBatch of mapBatch
// keys, reported as the implementation "govram/batch".
var govramMapOps = []string{"build", "get-hit", "get-hit#batch", "get-miss", "put", "put#batch", "delete"}

// mapBatch is the keys one GetBatch or PutBatch call takes.
const mapBatch = 4096

// manyOps adds the batch cases of a govram map: probes are read in runs of
// mapBatch (or what is left of b.N).
func manyOps[K comparable, V any](fx *fixture, m *collections.Map[K, V], hit []K, vals []V) {
	plen := len(hit)
	fx.add("get-hit#batch", func(b *B) error {
		out := make([]V, mapBatch)
		ok := make([]bool, mapBatch)
		found := 0
		for i := 0; i < b.N; {
			k := i & (plen - 1)
			c := min(mapBatch, b.N-i, plen-k)
			if err := m.GetBatch(hit[k:k+c], out[:c], ok[:c]); err != nil {
				return err
			}
			for _, f := range ok[:c] {
				if f {
					found++
				}
			}
			i += c
		}
		return checkHits(b.N-found, b.N)
	})
	fx.add("put#batch", func(b *B) error {
		for i := 0; i < b.N; {
			k := i & (plen - 1)
			c := min(mapBatch, b.N-i, plen-k)
			if err := m.PutBatch(hit[k:k+c], vals[k:k+c]); err != nil {
				return err
			}
			i += c
		}
		return nil
	})
}

// u64Probes holds a map suite's probe keys.
type u64Probes struct {
	hit, miss []uint64
	del       []uint64
}

func newU64Probes(n int) *u64Probes {
	p := &u64Probes{hit: make([]uint64, probeCount(n)), miss: make([]uint64, probeCount(n))}
	for i, j := range randomIdx(n, probeCount(n), 2) {
		p.hit[i] = key(j)
	}
	for i := range p.miss {
		p.miss[i] = key(n + i)
	}
	for _, j := range distinctIdx(n, min(delBatch, n/2), 3) {
		p.del = append(p.del, key(j))
	}
	return p
}

// u64Hits returns probeCount(n) present keys of a map of n drawn from d.
func u64Hits(n int, d keyDist) []uint64 {
	hit := make([]uint64, probeCount(n))
	for i, j := range drawIdx(n, probeCount(n), 2, d) {
		hit[i] = key(j)
	}
	return hit
}

// u64MapOps builds the map operations from get, put and del: get-hit and
// put under each of e's distributions, hits reading govram's hot tier
// counters (nil for the others).
func u64MapOps(e *env, fx *fixture, n int, get func(uint64) (uint64, bool), put func(k, v uint64) error, del func(uint64) bool, hits hitCounter) {
	p := newU64Probes(n)
	hitsOf := map[string][]uint64{}
	probes := func(d keyDist) []uint64 {
		if d.uniform() {
			return p.hit
		}
		if hitsOf[d.name] == nil {
			hitsOf[d.name] = u64Hits(n, d)
		}
		return hitsOf[d.name]
	}
	for _, d := range e.dists() {
		hit := probes(d)
		fx.add(d.op("get-hit"), func(b *B) error {
			var sum uint64
			missed := 0
			m := hits.mark()
			for i := range b.N {
				v, ok := get(hit[i&(len(hit)-1)])
				if !ok {
					missed++
				}
				sum += v
			}
			hits.report(b, m)
			sink += sum
			return checkHits(missed, b.N)
		})
	}
	fx.add("get-miss", func(b *B) error {
		found := 0
		for i := range b.N {
			if _, ok := get(p.miss[i&(len(p.miss)-1)]); ok {
				found++
			}
		}
		if found > 0 {
			return errorf("%d absent keys were found", found)
		}
		return nil
	})
	for _, d := range e.dists() {
		hit := probes(d)
		fx.add(d.op("put"), func(b *B) error {
			m := hits.mark()
			for i := range b.N {
				if err := put(hit[i&(len(hit)-1)], uint64(i)); err != nil {
					return err
				}
			}
			hits.report(b, m)
			return nil
		})
	}
	fx.add("delete", deleteOp(len(p.del), func(j int) bool { return del(p.del[j]) },
		func(j int) error { return put(p.del[j], uint64(j)) }))
}

// deleteOp deletes b.N keys in batches, putting each batch back untimed.
func deleteOp(batch int, del func(j int) bool, putBack func(j int) error) benchFunc {
	return func(b *B) error {
		refill := func(m int) error {
			for j := range m {
				if err := putBack(j); err != nil {
					return err
				}
			}
			return nil
		}
		j := 0
		for range b.N {
			if j == batch {
				b.StopTimer()
				if err := refill(j); err != nil {
					return err
				}
				j = 0
				b.StartTimer()
			}
			if !del(j) {
				return errorf("delete of a present key found nothing")
			}
			j++
		}
		b.StopTimer()
		return refill(j)
	}
}

func mapGovram(e *env, n int) *impl {
	return &impl{
		Name: "govram", Role: RoleGovram, Ops: append(distOps(govramMapOps, e.dists(), mapDistOps...), concOpNames(e)...),
		Need: func() (uint64, uint64) { return uint64(n) * 4, uint64(n) * 48 },
		Setup: func() (*fixture, error) {
			m, err := collections.NewMap[uint64, uint64](e.dev, e.mapOpts(n)...)
			if err != nil {
				return nil, err
			}
			built, took, note, err := e.build(n, func(i int) error { return m.Put(key(i), uint64(i)) },
				func(from, to int) error {
					ks, vs := make([]uint64, to-from), make([]uint64, to-from)
					for i := range ks {
						ks[i], vs[i] = key(from+i), uint64(from+i)
					}
					return m.PutBatch(ks, vs)
				})
			if err != nil {
				m.Close()
				return nil, err
			}
			fx := &fixture{built: built, buildTime: took, buildNote: note, entries: n, close: m.Close, mem: builtMem(e.dev)}
			u64MapOps(e, fx, n, m.Get, m.Put, func(k uint64) bool { _, ok, err := m.Delete(k); return ok && err == nil }, mapHits(e, m.Stats))
			p := newU64Probes(n)
			vals := make([]uint64, len(p.hit))
			for i := range vals {
				vals[i] = uint64(i)
			}
			manyOps(fx, m, p.hit, vals)
			concOps(e, fx, m, p.hit)
			return fx, nil
		},
	}
}

func mapNaive(e *env, n int) *impl {
	return &impl{
		Name: "naive", Role: RoleNaive, Ops: distOps(mapOps[1:], e.dists(), mapDistOps...), // built in host memory and copied: no build case
		Need: func() (uint64, uint64) { return uint64(n) * 64, uint64(n) * 64 },
		Setup: func() (*fixture, error) {
			m, err := newNaiveMap(e.dev, n, func(put func(k, v uint64)) {
				for i := range n {
					put(key(i), uint64(i))
				}
			})
			if err != nil {
				return nil, err
			}
			fx := &fixture{entries: n, close: func() error { return m.close(e.dev) }, mem: builtMem(e.dev)}
			u64MapOps(e, fx, n, m.get, func(k, v uint64) error { m.put(k, v); return nil }, m.del, nil)
			return fx, nil
		},
	}
}

func mapGo(e *env, n int) *impl {
	return &impl{
		Name: "go map", Role: RoleBaseline, Ops: distOps(mapOps, e.dists(), mapDistOps...),
		Need: func() (uint64, uint64) { return uint64(n) * 48, 0 },
		Setup: func() (*fixture, error) {
			start := time.Now()
			m := make(map[uint64]uint64, n)
			for i := range n {
				m[key(i)] = uint64(i)
			}
			fx := &fixture{built: n, buildTime: time.Since(start), entries: n, mem: builtMem(nil)}
			u64MapOps(e, fx, n,
				func(k uint64) (uint64, bool) { v, ok := m[k]; return v, ok },
				func(k, v uint64) error { m[k] = v; return nil },
				func(k uint64) bool {
					before := len(m)
					delete(m, k)
					return len(m) < before
				}, nil)
			return fx, nil
		},
	}
}

// strProbes holds the string probes, as strings and as the same bytes.
type strProbes struct {
	hit, miss   []string
	hitB, missB [][]byte
	hitI        []int
	del         []int
	delK        []string
	delB        [][]byte
}

func newStrProbes(n int) *strProbes {
	p := &strProbes{hitI: randomIdx(n, strProbeCount(n), 2)}
	for _, j := range p.hitI {
		p.hit = append(p.hit, strKey(j))
		p.hitB = append(p.hitB, []byte(strKey(j)))
	}
	for i := range strProbeCount(n) {
		p.miss = append(p.miss, strKey(n+i))
		p.missB = append(p.missB, []byte(strKey(n+i)))
	}
	p.del = distinctIdx(n, min(delBatch, n/2), 3)
	for _, j := range p.del {
		p.delK = append(p.delK, strKey(j))
		p.delB = append(p.delB, []byte(strKey(j)))
	}
	return p
}

var smapOps = mapOps

// strHitSet is string probes of present keys: their indices, the keys as
// strings and as bytes.
type strHitSet struct {
	idx  []int
	hit  []string
	hitB [][]byte
}

// hits returns the probes of present keys drawn from d: p's own for
// uniform, strProbeCount(n) new ones otherwise.
func (p *strProbes) hits(n int, d keyDist) strHitSet {
	if d.uniform() {
		return strHitSet{p.hitI, p.hit, p.hitB}
	}
	q := strHitSet{idx: drawIdx(n, strProbeCount(n), 2, d)}
	for _, j := range q.idx {
		q.hit = append(q.hit, strKey(j))
		q.hitB = append(q.hitB, []byte(strKey(j)))
	}
	return q
}

func smapGovram(e *env, n int) *impl {
	return &impl{
		Name: "govram", Role: RoleGovram, Ops: distOps(govramMapOps, e.dists(), mapDistOps...),
		Need: func() (uint64, uint64) { return uint64(n) * 4, uint64(n) * 160 },
		Setup: func() (*fixture, error) {
			m, err := collections.NewMap[string, string](e.dev, e.mapOpts(n)...)
			if err != nil {
				return nil, err
			}
			var kb, vb []byte
			built, took, note, err := e.build(n, func(i int) error {
				kb, vb = appendStrKey(kb[:0], i), appendStrVal(vb[:0], i, 0)
				return m.Put(string(kb), string(vb))
			}, func(from, to int) error {
				ks, vs := make([]string, to-from), make([]string, to-from)
				for i := range ks {
					ks[i], vs[i] = strKey(from+i), strVal(from+i, 0)
				}
				return m.PutBatch(ks, vs)
			})
			if err != nil {
				m.Close()
				return nil, err
			}
			fx := &fixture{built: built, buildTime: took, buildNote: note, entries: n, close: m.Close, mem: builtMem(e.dev)}
			p := newStrProbes(n)
			vals := make([]string, strProbeCount(n))
			for i, j := range p.hitI {
				vals[i] = strVal(j, 1)
			}
			hits := mapHits(e, m.Stats)
			sets := make([]strHitSet, len(e.dists()))
			for i, d := range e.dists() {
				sets[i] = p.hits(n, d)
				q := sets[i]
				fx.add(d.op("get-hit"), func(b *B) error {
					missed, total := 0, 0
					mk := hits.mark()
					for i := range b.N {
						v, ok := m.Get(q.hit[i&(len(q.hit)-1)])
						if !ok {
							missed++
						}
						total += len(v)
					}
					hits.report(b, mk)
					sink += uint64(total)
					return checkHits(missed, b.N)
				})
			}
			fx.add("get-miss", func(b *B) error {
				for i := range b.N {
					if _, ok := m.Get(p.miss[i&(len(p.miss)-1)]); ok {
						return errorf("an absent key was found")
					}
				}
				return nil
			})
			for i, d := range e.dists() {
				q, qv := sets[i], strPutVals(d, sets[i], vals)
				fx.add(d.op("put"), func(b *B) error {
					mk := hits.mark()
					for i := range b.N {
						j := i & (len(q.hit) - 1)
						if err := m.Put(q.hit[j], qv[j]); err != nil {
							return err
						}
					}
					hits.report(b, mk)
					return nil
				})
			}
			fx.add("delete", deleteOp(len(p.del), func(j int) bool { _, ok, _ := m.Delete(p.delK[j]); return ok },
				func(j int) error { return m.Put(p.delK[j], strVal(p.del[j], 0)) }))
			manyOps(fx, m, p.hit, vals)
			return fx, nil
		},
	}
}

func smapGo(e *env, n int) *impl {
	return &impl{
		Name: "go map", Role: RoleBaseline, Ops: distOps(smapOps, e.dists(), mapDistOps...),
		Need: func() (uint64, uint64) { return uint64(n) * 160, 0 },
		Setup: func() (*fixture, error) {
			start := time.Now()
			m := make(map[string]string, n)
			var kb, vb []byte
			for i := range n {
				kb, vb = appendStrKey(kb[:0], i), appendStrVal(vb[:0], i, 0)
				m[string(kb)] = string(vb)
			}
			fx := &fixture{built: n, buildTime: time.Since(start), entries: n, mem: builtMem(nil)}
			p := newStrProbes(n)
			vals := make([]string, strProbeCount(n))
			for i, j := range p.hitI {
				vals[i] = strVal(j, 1)
			}
			sets := make([]strHitSet, len(e.dists()))
			for i, d := range e.dists() {
				sets[i] = p.hits(n, d)
				q := sets[i]
				fx.add(d.op("get-hit"), func(b *B) error {
					missed, total := 0, 0
					for i := range b.N {
						v, ok := m[q.hit[i&(len(q.hit)-1)]]
						if !ok {
							missed++
						}
						total += len(v)
					}
					sink += uint64(total)
					return checkHits(missed, b.N)
				})
			}
			fx.add("get-miss", func(b *B) error {
				for i := range b.N {
					if _, ok := m[p.miss[i&(len(p.miss)-1)]]; ok {
						return errorf("an absent key was found")
					}
				}
				return nil
			})
			for i, d := range e.dists() {
				q, qv := sets[i], strPutVals(d, sets[i], vals)
				fx.add(d.op("put"), func(b *B) error {
					for i := range b.N {
						j := i & (len(q.hit) - 1)
						m[q.hit[j]] = qv[j]
					}
					return nil
				})
			}
			fx.add("delete", deleteOp(len(p.del), func(j int) bool {
				before := len(m)
				delete(m, p.delK[j])
				return len(m) < before
			}, func(j int) error { m[p.delK[j]] = strVal(p.del[j], 0); return nil }))
			return fx, nil
		},
	}
}

// fastcacheBytes sizes a fastcache so nothing is evicted: it is a ring of
// 64 KiB chunks per bucket that overwrites its oldest entries when full,
// and every put appends. Four times the data leaves room for the puts the
// cases make; chunks are allocated (off-heap) only when first written.
func fastcacheBytes(n int) int {
	return 32<<20 + 4*n*(4+strKeyLen+strValLen)
}

func smapFastcache(e *env, n int) *impl {
	return &impl{
		Name: "fastcache", Role: RoleBaseline, Ops: distOps(smapOps, e.dists(), mapDistOps...),
		Need: func() (uint64, uint64) { return uint64(n) * 2 * (4 + strKeyLen + strValLen), 0 },
		Setup: func() (*fixture, error) {
			start := time.Now()
			c := fastcache.New(fastcacheBytes(n))
			var kb, vb []byte
			for i := range n {
				kb, vb = appendStrKey(kb[:0], i), appendStrVal(vb[:0], i, 0)
				c.Set(kb, vb)
			}
			fx := &fixture{built: n, buildTime: time.Since(start), entries: n,
				close: func() error { c.Reset(); return nil }, mem: builtMem(nil)}
			p := newStrProbes(n)
			vals := make([][]byte, strProbeCount(n))
			for i, j := range p.hitI {
				vals[i] = appendStrVal(nil, j, 1)
			}
			sets := make([]strHitSet, len(e.dists()))
			for i, d := range e.dists() {
				sets[i] = p.hits(n, d)
				q := sets[i]
				fx.add(d.op("get-hit"), func(b *B) error {
					var dst []byte
					missed, total := 0, 0
					for i := range b.N {
						var ok bool
						dst, ok = c.HasGet(dst[:0], q.hitB[i&(len(q.hitB)-1)])
						if !ok {
							missed++
						}
						total += len(dst)
					}
					sink += uint64(total)
					return checkHits(missed, b.N)
				})
			}
			fx.add("get-miss", func(b *B) error {
				var dst []byte
				for i := range b.N {
					var ok bool
					if dst, ok = c.HasGet(dst[:0], p.missB[i&(len(p.missB)-1)]); ok {
						return errorf("an absent key was found")
					}
				}
				return nil
			})
			for i, d := range e.dists() {
				q := sets[i]
				qv := vals
				if !d.uniform() {
					qv = make([][]byte, strProbeCount(n))
					for i, j := range q.idx {
						qv[i] = appendStrVal(nil, j, 1)
					}
				}
				fx.add(d.op("put"), func(b *B) error {
					for i := range b.N {
						j := i & (len(q.hit) - 1)
						c.Set(q.hitB[j], qv[j])
					}
					return nil
				})
			}
			fx.add("delete", deleteOp(len(p.del), func(j int) bool {
				// fastcache's Del reports nothing; deleting what is present
				// is all the case needs, so Has is not timed separately.
				c.Del(p.delB[j])
				return true
			}, func(j int) error { c.Set(p.delB[j], appendStrVal(nil, p.del[j], 0)); return nil }))
			return fx, nil
		},
	}
}

// strPutVals returns the values put overwrites q's keys with: vals (the
// uniform probes' own) for uniform, new ones otherwise.
func strPutVals(d keyDist, q strHitSet, vals []string) []string {
	if d.uniform() {
		return vals
	}
	out := make([]string, len(q.idx))
	for i, j := range q.idx {
		out[i] = strVal(j, 1)
	}
	return out
}

// mapOpts are the options of govram's maps of n entries: made for them
// (WithCapacity), with -host-cache's tier where it was set.
func (e *env) mapOpts(n int) []collections.MapOption {
	opts := []collections.MapOption{collections.WithCapacity(n)}
	if e.cfg.hostCacheSet {
		opts = append(opts, collections.WithHostCache(int(e.cfg.hostCache)))
	}
	return opts
}
