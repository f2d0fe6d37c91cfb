package collections

import (
	"testing"
	"unsafe"

	"github.com/govram/govram/vmem"
)

// How far from their home bucket the keys of a string-key map filled to
// its capacity sit. Its buckets hold one record each and are probed
// linearly at a load of 3/4, where a well-spread hash leaves a key 1.5
// buckets from home on average (Knuth: (1 + 1/(1-a))/2 probes for a hit);
// a bad hash or a wrong load factor shows here first. A Get that misses
// the tier walks these buckets from the home one: the histogram (go test
// -run TestMapStrDisplacement -v) says how many of them it meets. Placement
// depends on the hash and the table only, the same on every backend: the
// records are read in host memory.
func TestMapStrDisplacement(t *testing.T) {
	n := 1000000
	if testing.Short() {
		n = 200000
	}
	d, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = tierBenchURL(i)
	}
	m, err := NewMap[string, uint64](d, WithCapacity(n))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.putMany(keys, make([]uint64, n)); err != nil {
		t.Fatal(err)
	}
	m.Len()
	tb := m.t
	if m.r.p != 1 {
		t.Fatalf("string-key buckets hold %d records, want 1", m.r.p)
	}
	var hist [8]int // the last counts 7 and more
	sum := 0
	for _, k := range keys {
		h := m.hash(&k)
		home := mapHome(h, tb.nb)
		b := home
		for ; b < tb.nbAll; b++ {
			sg := &tb.segs[b>>tb.shift]
			if m.keyMatches(unsafe.Add(sg.Base, uintptr(b&tb.mask)*m.r.bucket), &k, h) {
				break
			}
		}
		if b == tb.nbAll {
			t.Fatalf("key %q not found from its home bucket on", k)
		}
		sum += int(b - home)
		hist[min(int(b-home), len(hist)-1)]++
	}
	mean := float64(sum) / float64(n)
	home := float64(hist[0]) / float64(n)
	t.Logf("%d keys, load %.3f: mean displacement %.2f buckets", n, float64(n)/float64(tb.nb), mean)
	for i, c := range hist {
		more := ""
		if i == len(hist)-1 {
			more = " or more"
		}
		t.Logf("  %d%s buckets from home: %.1f%%", i, more, 100*float64(c)/float64(n))
	}
	if mean > 2 || home < 0.55 {
		t.Fatalf("keys sit %.2f buckets from home on average, %.1f%% at home: want at most 2 and at least 55%%", mean, 100*home)
	}
}
