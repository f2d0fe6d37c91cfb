package vmem_test

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/lineio"
	"github.com/govram/govram/internal/prefetch"
	"github.com/govram/govram/vmem"
)

// BenchmarkLineLatency separates what one random read of mapped memory
// costs from what a container adds on top: the bare streaming loads
// (independent and dependent), a Gather of four lines, Slice.Get, and
// the plain load, over a small and a large window.
func BenchmarkLineLatency(b *testing.B) {
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		for _, nbytes := range latencyWindows() {
			n := nbytes / 64
			idx := randomIndices(n, 1<<20)
			addr, free := lineWindow(b, d, nbytes)
			name := sizeName(uint64(nbytes))
			lineLatencyLoads(b, name, idx, addr)
			lineLatencyGathers(b, name, idx, addr)
			free()
			s := touched(b, d, n)
			lineLatencySlice(b, name, idx, s)
			s.Close()
		}
	})
}

// lineWindow maps a window of nbytes of written mapped memory and returns
// the address of its line j, and a function that frees it. The window is
// made of blocks of at most 1 GiB (one allocation is limited;
// VMEM_LAT_BLOCK_MIB sets another power of two, to see whether the size
// of the driver's allocations changes a line's cost); an aligned run of
// up to 64 lines never crosses a block.
func lineWindow(b *testing.B, d *vmem.Device, nbytes int) (addr func(j int) unsafe.Pointer, free func()) {
	per := min(nbytes, latencyBlock())
	var raws []block.Block
	var bases []unsafe.Pointer
	for off := 0; off < nbytes; off += per {
		raw := touchedRaw(b, d, per)
		raws = append(raws, raw)
		bases = append(bases, raw.Ptr())
	}
	shift := uint(bitsLen(per) - 1)
	addr = func(j int) unsafe.Pointer {
		o := j * 64
		return unsafe.Add(bases[o>>shift], o&(per-1))
	}
	free = func() {
		for _, raw := range raws {
			kdev(d).Free(raw)
		}
	}
	return addr, free
}

// timeLineLoads loads b.N random lines of idx into line, one at a time.
func timeLineLoads(b *testing.B, line *[64]byte, idx []int, addr func(int) unsafe.Pointer) {
	var sum uint64
	for i := 0; i < b.N; i++ {
		lineio.Load(line, addr(idx[i&(len(idx)-1)]))
		sum += uint64(line[0])
	}
	sink = sum
}

// lineLatencyLoads times the streaming loads of random lines of the window
// at addr: whole lines (into any buffer, an aligned one, and by each kind of
// load), pairs of words, and words, independent and dependent.
func lineLatencyLoads(b *testing.B, name string, idx []int, addr func(int) unsafe.Pointer) {
	b.Run("load/"+name, func(b *testing.B) {
		var line [64]byte
		timeLineLoads(b, &line, idx, addr)
	})
	b.Run("load-aligned/"+name, func(b *testing.B) {
		// The same load into a 64-byte aligned buffer: a 64-byte
		// store that straddles two cache lines cannot forward to
		// the loads that read it back.
		buf := make([]byte, 128)
		off := int(-uintptr(unsafe.Pointer(&buf[0])) & 63)
		timeLineLoads(b, (*[64]byte)(buf[off:off+64]), idx, addr)
	})
	for _, kind := range lineio.Kinds() {
		b.Run("load-"+kind+"/"+name, func(b *testing.B) {
			old := lineio.Kind
			if err := lineio.SetKind(kind); err != nil {
				b.Skip(err)
			}
			defer lineio.SetKind(old)
			var line [64]byte
			timeLineLoads(b, &line, idx, addr)
		})
	}
	b.Run("pair/"+name, func(b *testing.B) {
		var sum uint64
		for i := 0; i < b.N; i++ {
			lo, hi := lineio.LoadPair(addr(idx[i&(len(idx)-1)]))
			sum += lo ^ hi
		}
		sink = sum
	})
	b.Run("word/"+name, func(b *testing.B) {
		var sum uint64
		for i := 0; i < b.N; i++ {
			sum += lineio.LoadWord(addr(idx[i&(len(idx)-1)]))
		}
		sink = sum
	})
	b.Run("word-dependent/"+name, func(b *testing.B) {
		// Each address depends on the previous load (the memory
		// holds 0x01 bytes, so w>>63 is 0): the latency of one
		// round trip, with nothing overlapping.
		var w uint64
		for i := 0; i < b.N; i++ {
			j := idx[i&(len(idx)-1)] ^ int(w>>63)
			w = lineio.LoadWord(addr(j))
		}
		sink = w
	})
	b.Run("word-dependent-prefetch/"+name, func(b *testing.B) {
		// As word-dependent, with a prefetch of the line two steps
		// ahead before each load. A prefetch of write-combining
		// memory brings no data, but its address is translated: if
		// the round trip grows with the window because of the CPU's
		// address translations (4 KiB pages), this row does not grow.
		var w uint64
		for i := 0; i < b.N; i++ {
			prefetch.Line(addr(idx[(i+2)&(len(idx)-1)]))
			j := idx[i&(len(idx)-1)] ^ int(w>>63)
			w = lineio.LoadWord(addr(j))
		}
		sink = w
	})
}

// lineLatencyGathers times gathers of random lines of the window at addr,
// pairs of lines followed by work, and the plain load.
func lineLatencyGathers(b *testing.B, name string, idx []int, addr func(int) unsafe.Pointer) {
	for _, g := range []int{4, 8, 16} {
		b.Run(fmt.Sprintf("gather%d/%s", g, name), func(b *testing.B) {
			gatherLatency(b, g, idx, addr)
		})
	}
	for _, work := range []int{0, 25, 50, 100, 200} {
		// Two lines per step, then work: a chain of about
		// 4*work instructions that does not wait for the lines.
		// Successive steps overlap only while a step fits in the
		// core's reorder window with the previous step's lines
		// still in flight: this shows how long a lookup may be.
		b.Run(fmt.Sprintf("pair-work%d/%s", work, name), func(b *testing.B) {
			var buf [128]byte
			var srcs [2]unsafe.Pointer
			var sum, x uint64
			for i := 0; i < b.N; i++ {
				j := idx[i&(len(idx)-1)]
				srcs[0], srcs[1] = addr(j), addr(j^1)
				lineio.Gather(buf[:], srcs[:])
				sum += uint64(buf[0])
				for k := range work {
					x = x*0x9E3779B97F4A7C15 + uint64(k)
				}
			}
			sink = sum + x
		})
	}
	b.Run("plain/"+name, func(b *testing.B) {
		var sum uint64
		for i := 0; i < b.N; i++ {
			sum += *(*uint64)(addr(idx[i&(len(idx)-1)]))
		}
		sink = sum
	})
}

// lineLatencySlice times Slice.Get of random elements of s, independent and
// dependent.
func lineLatencySlice(b *testing.B, name string, idx []int, s *vmem.Slice[e64]) {
	b.Run("slice-get/"+name, func(b *testing.B) {
		var sum uint64
		for i := 0; i < b.N; i++ {
			sum += s.Get(idx[i&(len(idx)-1)])[0]
		}
		sink = sum
	})
	b.Run("slice-get-dependent/"+name, func(b *testing.B) {
		var w uint64
		for i := 0; i < b.N; i++ {
			w = s.Get(idx[i&(len(idx)-1)] ^ int(w>>63))[0]
		}
		sink = w
	})
}

func gatherLatency(b *testing.B, g int, idx []int, addr func(int) unsafe.Pointer) {
	dst := make([]byte, g*64)
	srcs := make([]unsafe.Pointer, g)
	var sum uint64
	for i := 0; i < b.N; i += g {
		for k := range srcs {
			srcs[k] = addr(idx[(i+k)&(len(idx)-1)])
		}
		lineio.Gather(dst, srcs)
		sum += uint64(dst[0])
	}
	sink = sum
}

// latencyWindows are the window sizes probed: VMEM_LAT_MIB (a comma
// list of MiB), else 16 MiB and the Slice benchmarks' working set.
func latencyWindows() []int {
	v := os.Getenv("VMEM_LAT_MIB")
	if v == "" {
		return []int{16 << 20, benchBytes()}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		if m, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && m > 0 && m&(m-1) == 0 {
			out = append(out, m<<20)
		}
	}
	return out
}

// latencyBlock is the size of the blocks a window is made of.
func latencyBlock() int {
	if m, err := strconv.Atoi(os.Getenv("VMEM_LAT_BLOCK_MIB")); err == nil && m > 0 && m&(m-1) == 0 {
		return m << 20
	}
	return 1 << 30
}

func bitsLen(x int) int {
	n := 0
	for ; x > 0; x >>= 1 {
		n++
	}
	return n
}

// TestMappedPageSize logs the page size the kernel uses for mapped device
// memory (VMEM_PROBE=1): with 4 KiB pages every random line read in a
// large window also pays a page walk.
func TestMappedPageSize(t *testing.T) {
	if os.Getenv("VMEM_PROBE") != "1" {
		t.Skip("VMEM_PROBE=1 to run")
	}
	for _, be := range []vmem.Backend{vmem.BackendVulkan, vmem.BackendHost} {
		d, err := vmem.Open(vmem.Options{Backend: be})
		if err != nil {
			t.Logf("%v: %v", be, err)
			continue
		}
		for _, tier := range []vmem.Tier{vmem.Mapped, vmem.Host} {
			blk, err := kdev(d).Alloc(block.Tier(tier), 256<<20, 0)
			if err != nil {
				t.Logf("%v %v: %v", be, tier, err)
				continue
			}
			t.Logf("%v %v: %s", be, tier, smapsFor(uintptr(blk.Ptr())))
			kdev(d).Free(blk)
		}
		d.Close()
	}
}

func smapsFor(addr uintptr) string {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var in bool
	var out []string
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) > 0 && strings.Contains(fields[0], "-") {
			lo, hi, ok := strings.Cut(fields[0], "-")
			if ok {
				a, err1 := strconv.ParseUint(lo, 16, 64)
				z, err2 := strconv.ParseUint(hi, 16, 64)
				if err1 == nil && err2 == nil {
					if in {
						break
					}
					in = uint64(addr) >= a && uint64(addr) < z
					if in {
						out = append(out, line)
					}
					continue
				}
			}
		}
		if in && (strings.HasPrefix(line, "KernelPageSize") || strings.HasPrefix(line, "MMUPageSize") ||
			strings.HasPrefix(line, "AnonHugePages") || strings.HasPrefix(line, "VmFlags") || strings.HasPrefix(line, "Rss")) {
			out = append(out, line)
		}
	}
	return fmt.Sprint(out)
}
