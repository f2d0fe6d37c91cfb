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

func ExampleWithOverwrite() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	// Keep the newest three readings; older ones are dropped.
	r, err := collections.NewRing[float64](dev, 3, collections.WithOverwrite(true))
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

func ExampleNewRing() {
	dev, err := vmem.Open(vmem.Options{}) // the output is the same on every backend
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	type event struct {
		Time int64
		Code uint32
		_    uint32
	}
	r, err := collections.NewRing[event](dev, 1000)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	r.Push(event{Time: 1, Code: 200})
	r.Push(event{Time: 2, Code: 404})
	// Pushes are published to the consumer in groups; Flush publishes
	// what is pending, like a bufio.Writer's.
	if err := r.Flush(); err != nil {
		panic(err)
	}
	e, _ := r.Peek()
	fmt.Println(r.Len(), r.Stats().Cap, e.Code)

	_, err = collections.NewRing[[]byte](dev, 10) // no pointers in device memory
	fmt.Println(errors.Is(err, vmem.ErrPointerType))
	// Output:
	// 2 1000 200
	// true
}

func ExampleRing_PopBatch() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	r, err := collections.NewRing[uint32](dev, 1<<16)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	in := make([]uint32, 10_000)
	for i := range in {
		in[i] = uint32(i)
	}
	if _, err := r.PushBatch(in); err != nil { // whole lines, sequentially
		panic(err)
	}

	// PopBatch takes whole runs at a time (DMA on a GPU).
	dst := make([]uint32, 4096)
	var sum, count int
	for {
		n, err := r.PopBatch(dst)
		if err != nil {
			panic(err)
		}
		if n == 0 {
			break
		}
		count += n
		for _, v := range dst[:n] {
			sum += int(v)
		}
	}
	fmt.Println(count, sum, r.Len())
	// Output: 10000 49995000 0
}

func ExampleRing_All() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	r, err := collections.NewRing[int8](dev, 8)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	r.PushBatch([]int8{-3, -2, -1})
	r.Pop()
	// All reads without removing; 0 is the oldest.
	for i, v := range r.All() {
		fmt.Println(i, v)
	}
	if err := r.Err(); err != nil {
		panic(err)
	}
	fmt.Println("still", r.Len())
	// Output:
	// 0 -2
	// 1 -1
	// still 2
}
