package collections_test

import (
	"errors"
	"fmt"

	"github.com/govram/govram/collections"
	"github.com/govram/govram/vmem"
)

func ExampleRing() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	r, err := collections.NewRing[uint64](dev, 4) // ErrorWhenFull by default
	if err != nil {
		panic(err)
	}
	defer r.Close()

	r.Push(1)
	n, err := r.PushBatch([]uint64{2, 3, 4, 5}) // only three fit
	fmt.Println(n, errors.Is(err, collections.ErrFull), r.Len())

	v, _ := r.Pop()
	fmt.Println("popped", v)

	dst := make([]uint64, 8)
	n, _ = r.PopBatch(dst)
	fmt.Println("popped", dst[:n])
	// Output:
	// 3 true 4
	// popped 1
	// popped [2 3 4]
}

func ExampleWithPolicy() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	// Keep the newest three readings; older ones are dropped.
	r, err := collections.NewRing[float64](dev, 3, collections.WithPolicy(collections.OverwriteOldest))
	if err != nil {
		panic(err)
	}
	defer r.Close()
	for _, x := range []float64{0.5, 1.5, 2.5, 3.5, 4.5} {
		r.Push(x)
	}
	for i, x := range r.All() {
		fmt.Println(i, x)
	}
	// Output:
	// 0 2.5
	// 1 3.5
	// 2 4.5
}
