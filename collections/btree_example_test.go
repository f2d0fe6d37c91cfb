package collections_test

import (
	"fmt"

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

	t.AscendRange(20, 40, func(k uint64, v float64) bool {
		fmt.Println("range", k, v)
		return true
	})
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
