// Quickstart opens the best device govram finds, says which backend it got,
// and moves data through each memory tier.
//
//	go run ./examples/quickstart
//
// Without a GPU it runs on the host backend (off-heap system memory);
// VMEM_BACKEND=vulkan forces the GPU path.
package main

import (
	"bytes"
	"fmt"
	"log"
	"runtime"
	"time"

	"github.com/govram/govram/vmem"
)

func main() {
	dev, err := vmem.Open(vmem.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	fmt.Printf("govram quickstart\n%s", dev.Info())

	const size = 64 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	for _, tier := range []vmem.Tier{vmem.Mapped, vmem.Private, vmem.Host} {
		blk, err := dev.Alloc(tier, size, 0)
		if err != nil {
			log.Fatalf("alloc %s: %v", tier, err)
		}
		start := time.Now()
		if err := dev.Write(blk, 0, data); err != nil {
			log.Fatal(err)
		}
		wrote := time.Since(start)
		back := bytes.Repeat([]byte{1}, size) // touched, so page faults are not timed
		start = time.Now()
		if err := dev.Read(back, blk, 0); err != nil {
			log.Fatal(err)
		}
		read := time.Since(start)
		ok := bytes.Equal(back, data)
		fmt.Printf("%-8s wrote %s in %v (%.1f GB/s), read back in %v (%.1f GB/s), identical: %v\n",
			tier, vmem.Bytes(size), wrote.Round(time.Microsecond), float64(size)/wrote.Seconds()/1e9,
			read.Round(time.Microsecond), float64(size)/read.Seconds()/1e9, ok)
		if !ok {
			log.Fatal("data read back differs")
		}
		if err := dev.Free(blk); err != nil {
			log.Fatal(err)
		}
	}

	// Keep three blocks alive to show where memory lives.
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var held []vmem.Block
	for _, tier := range []vmem.Tier{vmem.Mapped, vmem.Private, vmem.Host} {
		b, err := dev.Alloc(tier, 256<<20, 0)
		if err != nil {
			log.Fatal(err)
		}
		held = append(held, b)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	in := dev.Info()
	fmt.Printf("holding 3 x 256 MiB: mapped in use %s, private %s, host %s; Go heap grew by %s\n",
		vmem.Bytes(in.Tiers[vmem.Mapped].InUse), vmem.Bytes(in.Tiers[vmem.Private].InUse),
		vmem.Bytes(in.Tiers[vmem.Host].InUse), vmem.Bytes(max(0, int64(after.HeapAlloc)-int64(before.HeapAlloc))))
	for _, b := range held {
		dev.Free(b)
	}
	fmt.Printf("backend used: %s\n", dev.Backend())
}
