package vmem

// GetBatch: scattered reads of a Slice, collected on the GPU by a kernel and
// brought back by one copy per batch, the batches pipelined.

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/access"
	"github.com/govram/govram/internal/hostmem"
	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/internal/vk"
)

// GetBatch reads the elements at indices into dst (dst[k] = element
// indices[k]); len(dst) must equal len(indices). An index out of range
// gives ErrRange; dst's contents are then unspecified.
//
// On a GPU a kernel collects the elements into one contiguous buffer,
// which one copy brings back: one round trip per 16 MiB of elements, the
// batches pipelined so that the GPU gathers one while the CPU copies the
// last one out. Few indices into mapped segments are read with streaming
// loads instead (getMany). On the host backend it is a plain loop.
//
// GetBatch only reads: like Get, it may run concurrently with other readers.
func (s *Slice[T]) GetBatch(indices []int, dst []T) error {
	if s.sh != nil {
		return s.sh.GetBatch(indices, dst)
	}
	if err := s.usable(); err != nil {
		return err
	}
	if len(dst) != len(indices) {
		return fmt.Errorf("vmem: Slice.GetBatch: %d indices for %d elements of dst: %w", len(indices), len(dst), ErrRange)
	}
	if len(indices) == 0 || s.size == 0 {
		return s.kernGatherCPU(indices, dst)
	}
	if k := s.dev.kern(); k != nil {
		if len(indices) >= int(kernGatherMin.Load()) || !s.kernAllMapped() {
			err := s.kernGatherGPU(k, indices, dst)
			if !errors.Is(err, errKernUnavailable) {
				return err
			}
		}
	}
	return s.kernGatherCPU(indices, dst)
}

func (s *Slice[T]) kernAllMapped() bool {
	for _, sg := range s.segs {
		if sg.Kind == access.DMA {
			return false
		}
	}
	return true
}

func (s *Slice[T]) kernBadIndex(x int) error {
	return fmt.Errorf("vmem: Slice.GetBatch: index %d out of range [0:%d]: %w", x, s.n, ErrRange)
}

// kernGatherCPU reads element by element: plain loads on host memory,
// interleaved streaming loads on mapped VRAM (getMany), DMA on private
// VRAM. Indices are checked first, so dst is untouched on ErrRange.
func (s *Slice[T]) kernGatherCPU(indices []int, dst []T) error {
	for _, x := range indices {
		if uint(x) >= uint(s.n) {
			return s.kernBadIndex(x)
		}
	}
	if err := s.dev.enter(); err != nil {
		return err
	}
	if !s.kernAllMapped() {
		// Private segments are read by DMA, which enters the device itself.
		s.dev.exit()
	} else {
		// The device stays open while its memory is read directly.
		defer s.dev.exit()
	}
	if s.dev.vk != nil && s.kernAllMapped() {
		s.getMany(indices, dst)
		return nil
	}
	for k, x := range indices {
		sg := &s.segs[x>>s.shift]
		j := x & (1<<s.shift - 1)
		switch sg.Kind {
		case access.Direct:
			dst[k] = *(*T)(unsafe.Add(sg.Base, s.off(j)))
		case access.WC:
			dst[k] = loadWC[T](unsafe.Add(sg.Base, s.off(j)), s.size)
		default:
			if err := sg.Read(bytesOf(&dst[k]), uint64(s.off(j))); err != nil {
				return err
			}
		}
	}
	return nil
}

// kernGatherBatch bounds the bytes one gather submission brings back (16
// MiB; tests make it small). The batches are pipelined: while the GPU
// gathers one, the CPU copies the previous one out and computes the
// addresses of the next.
var kernGatherBatch atomic.Uint64

func init() { kernGatherBatch.Store(16 << 20) }

// kernGatherSlot is one stage of the gather pipeline: host scratch for the
// addresses and the elements brought back, VRAM scratch for the kernel's
// output, and the batch in flight.
type kernGatherSlot struct {
	host, dev *vk.Memory
	flight    *kernFlight
	out       []byte // where the batch's elements go, when the CPU copies them
}

func (s *Slice[T]) kernGatherGPU(k *kernState, indices []int, dst []T) (err error) {
	d := s.dev
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	// The kernels read s's segments until the last flight is waited for
	// (deferred below, and so run before this).
	defer runtime.KeepAlive(s)
	esize := uint64(s.size)
	g, st := uint64(s.group), uint64(s.stride)
	mode := uint32(2)
	switch {
	case esize%16 == 0 && g%16 == 0 && (s.perLine == 1 || st%16 == 0):
		mode = 0
	case esize%4 == 0 && g%4 == 0 && (s.perLine == 1 || st%4 == 0):
		mode = 1
	}
	segAddr := make([]uint64, len(s.segs))
	for i := range s.segs {
		segAddr[i] = kaddr(s.segs[i].blk, 0)
	}
	total := uint64(len(indices))
	per := max(kernGatherBatch.Load()/esize, 1)
	m0 := min(total, per)
	outBytes := roundUp(m0*esize, 16)
	addrBytes := roundUp(m0*8, 256)
	direct := kernGatherDirect.Load()

	var slots [2]kernGatherSlot
	nslots := 1
	if total > per {
		nslots = 2
	}
	defer func() {
		for i := range slots {
			sl := &slots[i]
			if sl.flight != nil {
				if werr := sl.flight.wait(); err == nil {
					err = werr
				}
			}
			d.kernPutScratch(kernScratchHost, sl.host)
			d.kernPutScratch(kernScratchDevice, sl.dev)
		}
	}()
	for i := 0; i < nslots; i++ {
		if slots[i].host, err = d.kernTakeScratch(kernScratchHost, addrBytes+outBytes); err != nil {
			return err
		}
		if !direct {
			if slots[i].dev, err = d.kernTakeScratch(kernScratchDevice, outBytes); err != nil {
				return err
			}
		}
	}
	// finish waits for a slot's batch and copies its elements out.
	finish := func(sl *kernGatherSlot) error {
		f := sl.flight
		sl.flight = nil
		if err := f.wait(); err != nil {
			return err
		}
		if sl.out != nil {
			memcpy(unsafe.Pointer(unsafe.SliceData(sl.out)), hostmem.Add(sl.host.Ptr, addrBytes), uint64(len(sl.out)))
		}
		return nil
	}
	var prev *kernGatherSlot
	for i, at := 0, uint64(0); at < total; i, at = i+1, at+per {
		sl := &slots[i%nslots]
		m := min(total-at, per)
		addrs := unsafe.Slice((*uint64)(sl.host.Ptr), m)
		if bad := s.kernGatherAddrs(indices[at:at+m], addrs, segAddr); bad >= 0 {
			return s.kernBadIndex(indices[at+uint64(bad)])
		}
		n := m * esize
		out := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst[at:]))), n)
		b := d.newKernBatch(k)
		p := kernGatherPush{addrs: sl.host.Addr, n: uint32(m), esize: uint32(esize), mode: mode}
		items := (n + 3) / 4
		switch mode {
		case 0:
			items = n / 16
		case 1:
			items = n / 4
		}
		sl.out = out
		if direct {
			p.dst = sl.host.Addr + addrBytes
			b.dispatch(kernGather, k.groups(items), bytesOf(&p))
		} else {
			p.dst = sl.dev.Addr
			b.dispatch(kernGather, k.groups(items), bytesOf(&p))
			b.barrier()
			if c, coff := d.vk.chunkOf(unsafe.Pointer(unsafe.SliceData(out)), n); c != nil {
				// dst is pinned memory of this device: the copy lands there.
				b.copy(c.Mem, coff, sl.dev, 0, n)
				sl.out = nil
			} else {
				b.copy(sl.host, addrBytes, sl.dev, 0, n)
			}
		}
		if sl.flight, err = d.kernSubmit(b); err != nil {
			return err
		}
		if prev != nil {
			if err := finish(prev); err != nil {
				return err
			}
		}
		prev = sl
	}
	return finish(prev)
}

// kernGatherAddrs writes the device address of each index's element into
// out, on several goroutines for large batches. It returns the position of
// an index out of range, or -1.
func (s *Slice[T]) kernGatherAddrs(idx []int, out []uint64, segAddr []uint64) int {
	bad := atomic.Int64{}
	bad.Store(-1)
	work := func(lo, hi int) {
		mask := 1<<s.shift - 1
		n := uint(s.n)
		for i := lo; i < hi; i++ {
			x := idx[i]
			if uint(x) >= n {
				bad.CompareAndSwap(-1, int64(i))
				return
			}
			out[i] = segAddr[x>>s.shift] + uint64(s.off(x&mask))
		}
	}
	const part = 1 << 16
	if len(idx) < 2*part {
		work(0, len(idx))
		return int(bad.Load())
	}
	step := max(part, (len(idx)+7)/8)
	par.Go((len(idx)+step-1)/step, func(p int) {
		work(p*step, min((p+1)*step, len(idx)))
	})
	runtime.KeepAlive(s)
	return int(bad.Load())
}
