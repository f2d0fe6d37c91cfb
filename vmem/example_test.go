package vmem_test

// These examples open the host backend (vmem.Options{Backend:
// vmem.BackendHost}) so that they run, and print the same, on every machine,
// with or without a GPU. A program passes vmem.Options{} to get a GPU when
// there is one; the calls and the results are the same.

import (
	"errors"
	"fmt"
	"github.com/govram/govram/internal/human"
	"log"

	"github.com/govram/govram/vmem"
)

func ExampleOpen() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	in := dev.Info() // fmt.Print(in) describes the device and its tiers
	fmt.Println("fell back:", in.Fallback != "")
	for _, t := range in.Tiers {
		fmt.Println(t.Tier, "available:", t.Available)
	}
	// Output:
	// fell back: false
	// mapped available: true
	// private available: true
	// host available: true
}

func ExampleInTier() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	// A Slice[byte] is raw memory. Private memory is reached only by
	// CopyFrom and CopyTo (DMA on a GPU).
	s, err := vmem.NewSlice[byte](dev, 1000, vmem.InTier(vmem.Private))
	if err != nil {
		log.Fatal(err)
	}
	if err := s.CopyFrom([]byte("hello, VRAM"), 10); err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, 11)
	if err := s.CopyTo(buf, 10); err != nil {
		log.Fatal(err)
	}
	st := dev.Info().Tiers[vmem.Private] // sizes are counted in whole 64-byte lines
	fmt.Printf("%s; %d block, %s in use\n", buf, st.Blocks, human.Bytes(st.InUse))

	err = s.CopyTo(buf, 995) // past the end
	fmt.Println(errors.Is(err, vmem.ErrRange))

	if err := s.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(errors.Is(s.CopyTo(buf, 0), vmem.ErrClosed), dev.Info().Tiers[vmem.Private].Blocks)
	// Output:
	// hello, VRAM; 1 block, 1.0 KiB in use
	// true
	// true 0
}

func ExampleNewSlice() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	type point struct{ X, Y float32 }
	s, err := vmem.NewSlice[point](dev, 3) // like make([]point, 3)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	s.Set(1, point{1.5, -2})
	if err := s.Append(point{3, 4}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Len(), s.Get(0), s.Get(1), s.Get(3))

	// Types with pointers cannot live where the garbage collector cannot see.
	_, err = vmem.NewSlice[struct{ Name string }](dev, 1)
	fmt.Println(errors.Is(err, vmem.ErrPointerType))
	// Output:
	// 4 {0 0} {1.5 -2} {3 4}
	// true
}

func ExampleSlice_CopyFrom() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	s, err := vmem.NewSlice[int64](dev, 8)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	// Bulk copies are the fast way in and out: whole lines or DMA on a GPU.
	if err := s.CopyFrom([]int64{10, 20, 30}, 2); err != nil {
		log.Fatal(err)
	}
	out := make([]int64, 5)
	if err := s.CopyTo(out, 1); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [0 10 20 30 0]
}

func ExampleSlice_All() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	s, err := vmem.NewSlice[uint16](dev, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(7, 8, 9); err != nil {
		log.Fatal(err)
	}
	for i, v := range s.All() { // read in bulk, not element by element
		fmt.Println(i, v)
	}
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 0 7
	// 1 8
	// 2 9
}

func ExampleSlice_Chunks() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	s, err := vmem.NewSlice[float64](dev, 1000)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Fill(0.5); err != nil {
		log.Fatal(err)
	}
	total := 0.0
	for _, run := range s.Chunks() { // each run is valid only inside the loop body
		for _, v := range run {
			total += v
		}
	}
	fmt.Println(total)
	// Output: 500
}

func ExampleSlice_SetBatch() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	s, err := vmem.NewSlice[uint32](dev, 100)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	// Many scattered stores at once: SetBatch writes them sorted by
	// address, whole lines at a time (several times faster on a GPU than
	// as many Sets).
	var idx []int
	var vals []uint32
	for i := 99; i >= 0; i -= 7 {
		idx = append(idx, i)
		vals = append(vals, uint32(i*i))
	}
	if err := s.SetBatch(idx, vals); err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Get(99), s.Get(92), s.Get(1), s.Get(0))
	// Output: 9801 8464 1 0
}

func ExampleSort() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	s, err := vmem.NewSlice[int32](dev, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(5, -1, 42, 0, 7); err != nil {
		log.Fatal(err)
	}
	if err := vmem.Sort(s); err != nil { // a radix sort on the GPU
		log.Fatal(err)
	}
	out := make([]int32, s.Len())
	if err := s.CopyTo(out, 0); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [-1 0 5 7 42]
}

func ExampleSortBy() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	type order struct {
		Time  int64
		Price float32
		Qty   uint32
	}
	s, err := vmem.NewSlice[order](dev, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(order{3, 9.5, 1}, order{1, 10, 2}, order{2, 9.5, 3}); err != nil {
		log.Fatal(err)
	}
	// key returns the address of the field to sort by; equal keys keep
	// their order.
	if err := vmem.SortBy(s, func(o *order) *float32 { return &o.Price }); err != nil {
		log.Fatal(err)
	}
	for _, o := range s.All() {
		fmt.Println(o)
	}
	// Output:
	// {3 9.5 1}
	// {2 9.5 3}
	// {1 10 2}
}

func ExampleSlice_GetBatch() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	s, err := vmem.NewSlice[uint64](dev, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(100, 101, 102, 103, 104, 105); err != nil {
		log.Fatal(err)
	}
	// Many scattered reads in one call: one kernel and one copy on a GPU.
	dst := make([]uint64, 3)
	if err := s.GetBatch([]int{5, 0, 3}, dst); err != nil {
		log.Fatal(err)
	}
	fmt.Println(dst)
	// Output: [105 100 103]
}

func ExampleSlice_Fill() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	type cell struct{ A, B uint8 }
	s, err := vmem.NewSlice[cell](dev, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Fill(cell{1, 2}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Get(0), s.Get(3))
	// Output: {1 2} {1 2}
}

func ExampleSum() {
	dev, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	s, err := vmem.NewSlice[uint8](dev, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(200, 100, 1); err != nil {
		log.Fatal(err)
	}
	_, err = vmem.Sum(s) // 301 does not fit in a uint8
	fmt.Println(errors.Is(err, vmem.ErrRange))
	total, err := vmem.SumAs[int](s)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(total)
	// Output:
	// true
	// 301
}

func ExampleBackend() {
	// A Backend is its name: a flag's value converts to it, and Open
	// refuses a name it does not know.
	_, err := vmem.Open(vmem.Options{Backend: vmem.Backend("cuda")})
	fmt.Println(err)
	// Output:
	// vmem: unknown backend "cuda" (want auto, vulkan or host): vmem: out of range
}
