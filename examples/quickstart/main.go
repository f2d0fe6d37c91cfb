// Quickstart opens the best device govram finds, says which backend it got,
// puts a million elements into each of a Slice, a Map and a BTree, and shows
// where the memory went: almost none of it on the Go heap.
//
//	go run ./examples/quickstart              # a GPU if there is one, else host memory
//	VMEM_BACKEND=vulkan go run ./examples/quickstart
//	go run ./examples/quickstart -n 10000000
//
// Without a GPU (or with only a software Vulkan driver) it runs on the host
// backend, off-heap system memory, and says why.
package main

import (
	"flag"
	"fmt"
	"github.com/govram/govram/internal/human"
	"io"
	"log"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"time"

	"github.com/govram/govram/collections"
	"github.com/govram/govram/vmem"
)

type config struct {
	backend vmem.Backend // auto, vulkan or host; VMEM_BACKEND overrides it
	n       int          // entries in each container
	dev     *vmem.Device // an open device to use instead of opening one (tests)
}

func main() {
	cfg := config{}
	backend := flag.String("backend", "auto", "auto, vulkan or host (VMEM_BACKEND overrides)")
	flag.IntVar(&cfg.n, "n", 1_000_000, "entries in each container")
	flag.Parse()
	cfg.backend = vmem.Backend(*backend) // Open refuses an unknown name
	if err := run(cfg, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(cfg config, w io.Writer) error {
	dev := cfg.dev
	if dev == nil {
		d, err := vmem.Open(vmem.Options{Backend: cfg.backend})
		if err != nil {
			return err
		}
		defer d.Close()
		dev = d
	}
	in := dev.Info()
	fmt.Fprintf(w, "device: %s (%s), backend %s\n", in.Name, in.Type, in.Backend)
	if in.Fallback != "" {
		fmt.Fprintf(w, "  no GPU used: %s\n", in.Fallback)
	}
	n := cfg.n

	// A Slice is a []T off the Go heap. Bulk calls (Append, CopyTo, Sort,
	// Sum) move whole runs; single Gets are for the odd element.
	start := time.Now()
	s, err := vmem.NewSlice[uint64](dev, 0, vmem.WithCapacity(n))
	if err != nil {
		return err
	}
	defer s.Close()
	vals := make([]uint64, n)
	for i := range vals {
		vals[i] = uint64(i) * 0x9E3779B97F4A7C15 >> 32 // scrambled, so the sort has work
	}
	if err := s.Append(vals...); err != nil {
		return err
	}
	if err := vmem.Sort(s); err != nil {
		return err
	}
	sum, err := vmem.Sum(s)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Slice[uint64]: %d elements appended and sorted in %v; smallest %d, largest %d, sum %d\n",
		s.Len(), time.Since(start).Round(time.Millisecond), s.Get(0), s.Get(s.Len()-1), sum)

	// A Map is a map[K]V whose entries, string bytes included, live in
	// device memory.
	start = time.Now()
	m, err := collections.NewMap[string, int](dev)
	if err != nil {
		return err
	}
	defer m.Close()
	for i := range n {
		if err := m.Put("user-"+strconv.Itoa(i), i); err != nil {
			return err
		}
	}
	v, ok := m.Get("user-" + strconv.Itoa(n/2))
	m.Delete("user-0")
	fmt.Fprintf(w, "Map[string]int: %d entries put in %v; Get(\"user-%d\") = %d, %v; after one Delete Len = %d\n",
		n, time.Since(start).Round(time.Millisecond), n/2, v, ok, m.Len())

	// A BTree is an ordered map: here a minute of time -> a temperature.
	start = time.Now()
	t, err := collections.NewBTreeOrdered[int64, float64](dev)
	if err != nil {
		return err
	}
	defer t.Close()
	minutes := make([]int64, n)
	temps := make([]float64, n)
	for i := range minutes {
		minutes[i] = int64(i)
		temps[i] = 15 + 10*math.Sin(float64(i)*2*math.Pi/(24*60)) // a daily cycle
	}
	if err := t.BulkLoad(minutes, temps); err != nil { // sorted input loads at memory speed
		return err
	}
	var hour float64
	var count int
	for _, c := range t.Range(360, 420) { // 06:00 to 07:00 on the first day
		hour += c
		count++
	}
	fmt.Fprintf(w, "BTree[int64]float64: %d entries loaded in %v; %d readings from minute 360 to 420, mean %.2f\n",
		t.Len(), time.Since(start).Round(time.Millisecond), count, hour/float64(max(count, 1)))

	// The memory: the Go heap holds only the containers' small headers.
	runtime.GC()
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(heap)
	fmt.Fprintf(w, "memory: Go heap %s live; off the heap (device Info): mapped %s, private %s, host tier %s\n",
		human.Bytes(heap[0].Value.Uint64()), human.Bytes(dev.Info().Tiers[vmem.Mapped].InUse),
		human.Bytes(dev.Info().Tiers[vmem.Private].InUse), human.Bytes(dev.Info().Tiers[vmem.Host].InUse))
	return nil
}
