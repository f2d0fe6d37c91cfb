package collections_test

import (
	"errors"
	"fmt"
	"math"

	"github.com/govram/govram/collections"
	"github.com/govram/govram/vmem"
)

func ExampleBTree() {
	dev, err := vmem.Open(vmem.Options{}) // a GPU if there is one, else host memory
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	t, err := collections.NewBTreeOrdered[uint64, float64](dev)
	if err != nil {
		panic(err)
	}
	defer t.Close()

	// Sorted input loads at memory speed; single entries go in one by one.
	if err := t.BulkLoad([]uint64{10, 20, 30, 40}, []float64{1.0, 2.0, 3.0, 4.0}); err != nil {
		panic(err)
	}
	t.ReplaceOrInsert(25, 2.5)
	old, replaced, _ := t.ReplaceOrInsert(30, 3.3)
	fmt.Println("replaced 30:", old, replaced)

	v, ok := t.Get(25)
	fmt.Println("get 25:", v, ok)

	for k, v := range t.Range(20, 40) {
		fmt.Println("range", k, v)
	}
	for k, v := range t.Backward() {
		fmt.Println("backward", k, v)
		if k <= 30 {
			break
		}
	}
	k, _, _ := t.Min()
	fmt.Println("min", k, "len", t.Len())
	// Output:
	// replaced 30: 3 true
	// get 25: 2.5 true
	// range 20 2
	// range 25 2.5
	// range 30 3.3
	// backward 40 4
	// backward 30 3.3
	// min 10 len 5
}

func ExampleNewBTree() {
	dev, err := vmem.Open(vmem.Options{}) // the output is the same on every backend
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	// Any key type without pointers, ordered by a less function: here a
	// (user, time) pair, so one user's events are adjacent and in order.
	type key struct {
		User uint32
		Time int64
	}
	less := func(a, b key) bool {
		if a.User != b.User {
			return a.User < b.User
		}
		return a.Time < b.Time
	}
	t, err := collections.NewBTree[key, float32](dev, less)
	if err != nil {
		panic(err)
	}
	defer t.Close()
	t.ReplaceOrInsert(key{2, 100}, 1.5)
	t.ReplaceOrInsert(key{1, 300}, 2.5)
	t.ReplaceOrInsert(key{1, 200}, 3.5)
	t.ReplaceOrInsert(key{3, 50}, 4.5)
	// User 1's events: from (1, min) up to but excluding (2, min).
	for k, v := range t.Range(key{1, math.MinInt64}, key{2, math.MinInt64}) {
		fmt.Println(k, v)
	}
	// Output:
	// {1 200} 3.5
	// {1 300} 2.5
}

func ExampleNewBTreeOrdered() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	// String values are stored in device memory too; keys here are ints.
	t, err := collections.NewBTreeOrdered[int, string](dev)
	if err != nil {
		panic(err)
	}
	defer t.Close()
	for i, s := range []string{"zero", "one", "two", "three"} {
		if _, _, err := t.ReplaceOrInsert(i, s); err != nil {
			panic(err)
		}
	}
	v, ok := t.Get(2)
	fmt.Println(v, ok, t.Has(9))
	old, deleted, _ := t.Delete(0)
	fmt.Println(old, deleted, t.Len())
	// Output:
	// two true false
	// zero true 3
}

func ExampleBTree_BulkLoad() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	t, err := collections.NewBTreeOrdered[uint64, uint64](dev)
	if err != nil {
		panic(err)
	}
	defer t.Close()
	keys := make([]uint64, 100_000)
	vals := make([]uint64, len(keys))
	for i := range keys {
		keys[i], vals[i] = uint64(i)*10, uint64(i)
	}
	// Sorted input fills whole leaves, written sequentially.
	if err := t.BulkLoad(keys, vals); err != nil {
		panic(err)
	}
	err = t.BulkLoad([]uint64{5}, []uint64{0}) // not above the maximum
	fmt.Println(t.Len(), errors.Is(err, collections.ErrUnsorted))
	st := t.Stats()
	fmt.Printf("leaves %.0f%% full\n", st.Fill*100)
	// Output:
	// 100000 true
	// leaves 100% full
}

func ExampleBTree_Range() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	t, err := collections.NewBTreeOrdered[uint32, uint32](dev)
	if err != nil {
		panic(err)
	}
	defer t.Close()
	for k := range uint32(100) {
		t.ReplaceOrInsert(k*k, k)
	}
	// Squares in [50, 150), as an iterator: leaves arrive in bulk.
	for k, v := range t.Range(50, 150) {
		fmt.Println(k, v)
	}
	if err := t.Err(); err != nil {
		panic(err)
	}
	// Output:
	// 64 8
	// 81 9
	// 100 10
	// 121 11
	// 144 12
}

func ExampleBTree_All() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	t, err := collections.NewBTreeOrdered[int16, float64](dev)
	if err != nil {
		panic(err)
	}
	defer t.Close()
	t.ReplaceOrInsert(3, 0.3)
	t.ReplaceOrInsert(-1, -0.1)
	t.ReplaceOrInsert(2, 0.2)
	for k, v := range t.All() {
		fmt.Println("all", k, v)
	}
	for k := range t.Backward() {
		fmt.Println("backward", k)
	}
	// Output:
	// all -1 -0.1
	// all 2 0.2
	// all 3 0.3
	// backward 3
	// backward 2
	// backward -1
}

func ExampleBTree_Ascend() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	t, err := collections.NewBTreeOrdered[uint32, string](dev)
	if err != nil {
		panic(err)
	}
	defer t.Close()
	for i, s := range []string{"a", "b", "c", "d", "e"} {
		t.ReplaceOrInsert(uint32(10*i), s)
	}
	// The entries from 15 on (google/btree's AscendGreaterOrEqual); 15
	// itself is absent.
	for k, v := range t.Ascend(15) {
		fmt.Println("ascend", k, v)
	}
	// google/btree's AscendLessThan(30): All, breaking at the first key
	// >= 30 (a callback's false return is a break).
	for k, v := range t.All() {
		if k >= 30 {
			break
		}
		fmt.Println("less than 30", k, v)
	}
	// Output:
	// ascend 20 c
	// ascend 30 d
	// ascend 40 e
	// less than 30 0 a
	// less than 30 10 b
	// less than 30 20 c
}

func ExampleBTree_Descend() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	t, err := collections.NewBTreeOrdered[uint32, string](dev)
	if err != nil {
		panic(err)
	}
	defer t.Close()
	for i, s := range []string{"a", "b", "c", "d", "e"} {
		t.ReplaceOrInsert(uint32(10*i), s)
	}
	// The entries up to 30, descending (google/btree's
	// DescendLessOrEqual).
	for k, v := range t.Descend(30) {
		fmt.Println("descend", k, v)
	}
	// google/btree's DescendRange(30, 10): Descend(30), breaking at the
	// first key <= 10.
	for k := range t.Descend(30) {
		if k <= 10 {
			break
		}
		fmt.Println("range", k)
	}
	// Output:
	// descend 30 d
	// descend 20 c
	// descend 10 b
	// descend 0 a
	// range 30
	// range 20
}
