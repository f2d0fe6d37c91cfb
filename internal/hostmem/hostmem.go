// Package hostmem maps anonymous memory outside the Go heap. The garbage
// collector never scans or moves it, which is what lets govram hold hundreds
// of gigabytes of host-side state at no GC cost.
package hostmem

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// mapped counts the bytes Map has handed out and Unmap not yet taken back,
// in the whole process.
var mapped atomic.Uint64

// PageSize is the system page size.
var PageSize = uint64(syscall.Getpagesize())

// Map returns size bytes of zeroed, private, anonymous memory. size is
// rounded up to a page. Pages are committed by the kernel on first touch.
func Map(size uint64) (unsafe.Pointer, error) {
	size = (size + PageSize - 1) &^ (PageSize - 1)
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	mapped.Add(size)
	if size >= hugePage {
		// Transparent huge pages cut first-touch faults 512-fold; a hint only.
		_ = syscall.Madvise(b, madvHugepage)
	}
	return unsafe.Pointer(unsafe.SliceData(b)), nil
}

const (
	hugePage     = 2 << 20
	madvHugepage = 14 // MADV_HUGEPAGE
)

// Unmap releases memory returned by Map with the same size.
func Unmap(p unsafe.Pointer, size uint64) error {
	size = (size + PageSize - 1) &^ (PageSize - 1)
	if err := syscall.Munmap(unsafe.Slice((*byte)(p), size)); err != nil {
		return err
	}
	mapped.Add(-size)
	return nil
}

// Bytes views n bytes at p as a slice. p must point into memory from Map (or
// other memory outside the Go heap) that stays mapped while the slice is used.
func Bytes(p unsafe.Pointer, n uint64) []byte {
	return unsafe.Slice((*byte)(p), n)
}

// Add offsets p by off bytes; the result must stay inside p's mapping.
func Add(p unsafe.Pointer, off uint64) unsafe.Pointer {
	return unsafe.Add(p, uintptr(off))
}

// TotalRAM returns the machine's physical memory in bytes (0 if unknown).
func TotalRAM() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// Available returns how many more bytes of anonymous memory the machine can
// really back now: MemAvailable plus free swap, capped by the commit limit
// under strict overcommit (vm.overcommit_memory=2) and by the memory
// cgroup's limit where one is set. Mappings are made with MAP_NORESERVE, so
// the kernel hands out address space it cannot back, and a process that
// touches it is killed rather than told; callers check requests against
// this first. ok is false where the figures cannot be read (not Linux):
// callers then fall back to TotalRAM.
func Available() (n uint64, ok bool) {
	mi, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	f := meminfo(mi)
	avail, ok := f["MemAvailable"]
	if !ok {
		return 0, false
	}
	n = SatAdd(avail, f["SwapFree"])
	if mode, err := os.ReadFile("/proc/sys/vm/overcommit_memory"); err == nil && strings.TrimSpace(string(mode)) == "2" {
		limit, committed := f["CommitLimit"], f["Committed_AS"]
		n = min(n, limit-min(limit, committed))
	}
	if room, ok := cgroupRoom(); ok {
		n = min(n, room)
	}
	return n, true
}

// Room is Available less what Map has already handed out and the kernel
// does not back yet (pages not touched, which MemAvailable still counts):
// the bytes a new mapping can take without overcommitting what earlier
// ones were promised. The untouched share is estimated from the process's
// resident size, which also holds the Go heap, so Room errs generous.
func Room() (uint64, bool) {
	n, ok := Available()
	if !ok {
		return 0, false
	}
	m := mapped.Load()
	if st, err := os.ReadFile("/proc/self/statm"); err == nil {
		if fs := strings.Fields(string(st)); len(fs) > 1 {
			if pages, err := strconv.ParseUint(fs[1], 10, 64); err == nil {
				m -= min(m, SatMul(pages, PageSize))
			}
		}
	}
	return n - min(n, m), true
}

// meminfo parses /proc/meminfo into bytes by field name.
func meminfo(b []byte) map[string]uint64 {
	f := make(map[string]uint64)
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) == 0 {
			continue
		}
		v, err := strconv.ParseUint(fs[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fs) > 1 && fs[1] == "kB" {
			v = SatMul(v, 1024)
		}
		f[name] = v
	}
	return f
}

// cgroupRoom is the memory cgroup's limit less its usage (v2, then v1).
func cgroupRoom() (uint64, bool) {
	for _, p := range [][2]string{
		{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
		{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"},
	} {
		lb, err1 := os.ReadFile(p[0])
		ub, err2 := os.ReadFile(p[1])
		if err1 != nil || err2 != nil {
			continue
		}
		limit, err1 := strconv.ParseUint(strings.TrimSpace(string(lb)), 10, 64)
		used, err2 := strconv.ParseUint(strings.TrimSpace(string(ub)), 10, 64)
		if err1 != nil || err2 != nil || limit >= 1<<62 {
			continue // "max", or v1's stand-in for no limit
		}
		return limit - min(limit, used), true
	}
	return 0, false
}

// SatAdd and SatMul are size arithmetic that saturates instead of
// wrapping, so an absurd request stays absurd rather than becoming small.
func SatAdd(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}

func SatMul(a, b uint64) uint64 {
	if b != 0 && a > ^uint64(0)/b {
		return ^uint64(0)
	}
	return a * b
}
