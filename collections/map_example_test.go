package collections_test

import (
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
	names := slices.Sorted(ages.Keys())
	fmt.Println(names, ages.Len())
	// Output:
	// ada 37
	// [ada grace] 2
}

func ExampleMap_GetMany() {
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
	if err := m.PutMany(keys[:3], []uint64{10, 20, 30}); err != nil {
		log.Fatal(err)
	}
	vals := make([]uint64, len(keys))
	found := make([]bool, len(keys))
	n := m.GetMany(keys, vals, found)
	fmt.Println(n, vals, found)
	// Output: 3 [10 20 30 0] [true true true false]
}
