// Package access is how the CPU touches a block of device memory. The rule
// is decided once, for the block, by vmem (Kind); a View carries it with the
// block's address and offers the reads, writes and compares every container
// needs, so that no container has its own enum or its own copy of the three
// ways memory is reached.
//
// The three ways follow from the hardware (docs/physics.md): cacheable
// memory takes plain loads and stores; mapped VRAM is uncached for loads and
// write-combining for stores, so it is read in whole lines with streaming
// loads and written with stores that are fenced before they count; VRAM the
// CPU does not map is reached by the device's copies (DMA) only.
//
// Hot paths that are specific to a container (a Map's probe of one line, a
// B-tree's leaf hint) switch on the Kind themselves; what is generic (move
// some bytes, compare some bytes) is here.
package access

import (
	"bytes"
	"unsafe"

	"github.com/govram/govram/internal/lineio"
)

// Kind says how the CPU reaches a block's bytes.
type Kind uint8

const (
	// Direct is cacheable memory (the host backend, pinned host memory):
	// plain loads and stores.
	Direct Kind = iota
	// WC is mapped VRAM: streaming whole-line loads, write-combined stores
	// followed by a fence.
	WC
	// DMA is VRAM the CPU does not map: the device's copies only.
	DMA
)

func (k Kind) String() string {
	switch k {
	case Direct:
		return "direct"
	case WC:
		return "write-combined"
	case DMA:
		return "dma"
	}
	return "invalid"
}

// KindOf is the one rule: memory without a CPU address is DMA-only; mapped
// VRAM is write-combining; everything else the CPU maps is cacheable.
func KindOf(mapped, vram bool) Kind {
	switch {
	case !mapped:
		return DMA
	case vram:
		return WC
	}
	return Direct
}

// Mover moves bytes of one block by the device's copies: what a View uses
// where the CPU cannot (DMA) or should not (long spans of mapped VRAM).
type Mover interface {
	ReadAt(dst []byte, off uint64) error
	WriteAt(off uint64, src []byte) error
}

// View is one block as the CPU reaches it. The zero View reaches nothing.
type View struct {
	// Base is the block's CPU address; nil for DMA.
	Base unsafe.Pointer
	// Kind is how Base is touched.
	Kind Kind
	mv   Mover
}

// New returns the view of a block at base (nil where the CPU does not map
// it) reached as k; mv moves its bytes by DMA.
func New(base unsafe.Pointer, k Kind, mv Mover) View {
	if base == nil {
		k = DMA
	}
	return View{Base: base, Kind: k, mv: mv}
}

// Plain returns v read and written with plain loads and stores even where
// it is mapped VRAM: the naive baseline the containers are measured
// against, never their own path.
func (v View) Plain() View {
	if v.Kind == WC {
		v.Kind = Direct
	}
	return v
}

// CPU reports whether the CPU reaches the block at all (Kind is not DMA).
func (v View) CPU() bool { return v.Kind != DMA }

// At is the CPU address of byte off (Kind must not be DMA).
func (v View) At(off uintptr) unsafe.Pointer { return unsafe.Add(v.Base, off) }

// Bytes is n bytes at off as a slice, for Direct views only: mapped VRAM
// must not be read through a Go slice (every plain load is a round trip).
func (v View) Bytes(off uintptr, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(v.Base, off)), n)
}

// StreamMax bounds what a View moves through the CPU's mapping of VRAM:
// longer spans go by DMA (after its fixed start cost it moves far more
// than one core's streaming loads: docs/physics.md).
const StreamMax = 64 << 10

// Read copies len(dst) bytes at off into dst.
func (v View) Read(dst []byte, off uint64) error {
	if len(dst) == 0 {
		return nil
	}
	switch {
	case v.Kind == Direct:
		copy(dst, v.Bytes(uintptr(off), len(dst)))
		return nil
	case v.Kind == WC && len(dst) <= StreamMax:
		readWC(dst, v.At(uintptr(off)))
		return nil
	}
	return v.mv.ReadAt(dst, off)
}

// readWC reads len(dst) bytes at p (mapped VRAM) with whole-line streaming
// loads. The bytes land in dst by ordinary stores, not non-temporal ones:
// the reader uses them next, so they belong in its cache. Ragged ends go
// through a stack buffer (the lines around the range lie in the same
// block: blocks are whole lines).
func readWC(dst []byte, p unsafe.Pointer) {
	if uintptr(p)&(lineio.LineSize-1) == 0 && len(dst)&(lineio.LineSize-1) == 0 {
		lineio.LoadLines(dst, p)
		return
	}
	var buf [8 * lineio.LineSize]byte
	line := unsafe.Pointer(uintptr(p) &^ (lineio.LineSize - 1))
	skip := int(uintptr(p) & (lineio.LineSize - 1))
	for done := 0; done < len(dst); {
		nl := min(8, (skip+len(dst)-done+lineio.LineSize-1)/lineio.LineSize)
		lineio.LoadLines(buf[:nl*lineio.LineSize], line)
		done += copy(dst[done:], buf[skip:nl*lineio.LineSize])
		line = unsafe.Add(line, nl*lineio.LineSize)
		skip = 0
	}
}

// Write copies src to the block at off. Bytes next to the range are never
// rewritten, and a reader on another thread sees the bytes once Write
// returns (write-combined stores are fenced).
func (v View) Write(off uint64, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	switch {
	case v.Kind == Direct:
		copy(v.Bytes(uintptr(off), len(src)), src)
		return nil
	case v.Kind == WC && len(src) <= StreamMax:
		lineio.Copy(v.At(uintptr(off)), unsafe.Pointer(unsafe.SliceData(src)), uintptr(len(src)))
		return nil
	}
	return v.mv.WriteAt(off, src)
}

// Compare compares the len(b) bytes at off with b, as bytes.Compare does.
func (v View) Compare(off uint64, b []byte) (int, error) {
	switch v.Kind {
	case Direct:
		return bytes.Compare(v.Bytes(uintptr(off), len(b)), b), nil
	case WC:
		return compareWC(v.At(uintptr(off)), b), nil
	}
	return v.compareDMA(off, b)
}

// compareWC loads eight whole lines at a time into a stack buffer: whole-
// line streaming loads are the only fast way to read VRAM, and the lines
// around the range lie in the same block (blocks are whole lines).
func compareWC(p unsafe.Pointer, b []byte) int {
	var buf [8 * lineio.LineSize]byte
	line := unsafe.Pointer(uintptr(p) &^ (lineio.LineSize - 1))
	skip := int(uintptr(p) & (lineio.LineSize - 1))
	for done := 0; done < len(b); {
		nl := min(8, (skip+len(b)-done+lineio.LineSize-1)/lineio.LineSize)
		lineio.LoadLines(buf[:nl*lineio.LineSize], line)
		k := min(nl*lineio.LineSize-skip, len(b)-done)
		if c := bytes.Compare(buf[skip:skip+k], b[done:done+k]); c != 0 {
			return c
		}
		done += k
		line = unsafe.Add(line, nl*lineio.LineSize)
		skip = 0
	}
	return 0
}

// compareDMA compares through DMA reads, in pieces; kept out of line so
// that Compare's CPU cases stay small.
//
//go:noinline
func (v View) compareDMA(off uint64, b []byte) (int, error) {
	buf := make([]byte, min(len(b), StreamMax))
	for done := 0; done < len(b); {
		k := min(len(buf), len(b)-done)
		if err := v.mv.ReadAt(buf[:k], off+uint64(done)); err != nil {
			return 0, err
		}
		if c := bytes.Compare(buf[:k], b[done:done+k]); c != 0 {
			return c, nil
		}
		done += k
	}
	return 0, nil
}
