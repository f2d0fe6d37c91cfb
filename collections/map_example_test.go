package collections_test

import (
	"errors"
	"fmt"
	"log"
	"slices"

	"github.com/govram/govram/collections"
	"github.com/govram/govram/vmem"
)

func ExampleMap() {
	dev, err := vmem.Open(vmem.Options{}) // a GPU if there is one, else host memory
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	ages, err := collections.NewMap[string, uint32](dev)
	if err != nil {
		log.Fatal(err)
	}
	defer ages.Close()

	ages.Put("ada", 36)
	ages.Put("grace", 85)
	ages.Put("ada", 37) // overwrites, as with a Go map
	ages.Delete("nobody")

	if age, ok := ages.Get("ada"); ok {
		fmt.Println("ada", age)
	}
	var names []string
	for name := range ages.All() { // one variable: the keys
		names = append(names, name)
	}
	slices.Sort(names)
	fmt.Println(names, ages.Len())
	// Output:
	// ada 37
	// [ada grace] 2
}

func ExampleMap_GetBatch() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	m, err := collections.NewMap[uint64, uint64](dev)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	keys := []uint64{1, 2, 3, 4}
	if err := m.PutBatch(keys[:3], []uint64{10, 20, 30}); err != nil {
		log.Fatal(err)
	}
	vals := make([]uint64, len(keys))
	found := make([]bool, len(keys))
	if err := m.GetBatch(keys, vals, found); err != nil {
		log.Fatal(err)
	}
	fmt.Println(vals, found)
	// Output: [10 20 30 0] [true true true false]
}

func ExampleNewMap() {
	dev, err := vmem.Open(vmem.Options{}) // the output is the same on every backend
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	// WithCapacity sizes the table so the first 1000 Puts do not grow it.
	type point struct{ X, Y int32 }
	m, err := collections.NewMap[point, float64](dev, collections.WithCapacity(1000))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	m.Put(point{1, 2}, 0.5)
	v, ok := m.Get(point{1, 2})
	fmt.Println(v, ok, m.Len())

	// Keys and values may not hold pointers (strings excepted).
	_, err = collections.NewMap[uint64, []byte](dev)
	fmt.Println(errors.Is(err, vmem.ErrPointerType))
	// Output:
	// 0.5 true 1
	// true
}

func ExampleMap_Put() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	m, err := collections.NewMap[string, string](dev)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	// Put fails only for a reason worth handling: ErrOutOfMemory (the map
	// unchanged), ErrDeviceLost or ErrClosed.
	if err := m.Put("lang", "Go"); err != nil {
		log.Fatal(err)
	}
	m.Put("lang", "Go 1.26") // overwrites
	fmt.Println(m.Get("lang"))
	fmt.Println(m.Get("os"))
	m.Close()
	fmt.Println(errors.Is(m.Put("x", "y"), vmem.ErrClosed))
	// Output:
	// Go 1.26 true
	//  false
	// true
}

func ExampleMap_Delete() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	m, err := collections.NewMap[uint32, uint32](dev)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	m.Put(1, 10)
	m.Put(2, 20)
	fmt.Println(m.Delete(1))
	fmt.Println(m.Delete(1))
	fmt.Println(m.Len())
	// Output:
	// 10 true <nil>
	// 0 false <nil>
	// 1
}

func ExampleMap_All() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	m, err := collections.NewMap[string, int](dev)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	for i, w := range []string{"alpha", "beta", "gamma", "delta"} {
		m.Put(w, i)
	}
	// All yields in hash order, as unpredictable as a Go map's; the body may
	// Put and Delete.
	sum := 0
	for k, v := range m.All() {
		if v%2 == 1 {
			m.Delete(k)
		}
		sum += v
	}
	if err := m.Err(); err != nil {
		log.Fatal(err)
	}
	var left []string
	for k := range m.All() {
		left = append(left, k)
	}
	slices.Sort(left)
	fmt.Println(sum, left)
	// Output: 6 [alpha gamma]
}

func ExampleMap_PutBatch() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	m, err := collections.NewMap[uint64, uint64](dev)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	// One batch: existing keys are found by all cores at once, and every
	// store is written in one sorted pass. A key given twice keeps its later
	// value.
	if err := m.PutBatch([]uint64{7, 8, 7}, []uint64{70, 80, 700}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Len())
	fmt.Println(m.Get(7))
	// Output:
	// 2
	// 700 true
}

func ExampleWithHasher() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	// Keys that are already well-spread ids need only a cheap hash; the map
	// mixes the result further.
	m, err := collections.NewMap[uint64, bool](dev,
		collections.WithHasher(func(k uint64) uint64 { return k }))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	for k := range uint64(100) {
		m.Put(k<<32, true)
	}
	_, ok := m.Get(42 << 32)
	fmt.Println(m.Len(), ok)
	// Output: 100 true
}
