package snapfmt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"runtime"
	"sync"
	"unsafe"
)

// Sizes and limits of the format.
const (
	Magic           = "GOVRAM\x00S"
	TrailerMagic    = "GOVRAM\x00E"
	Version         = 1
	HeaderSize      = 64
	FrameHeaderSize = 8
	TrailerSize     = 32
	// MaxBlockSize bounds a block, and so every buffer a reader allocates
	// for one: 64 MiB.
	MaxBlockSize = 64 << 20
	// DefaultBlockSize is the block of streamed containers (Map, BTree,
	// Ring): big enough that the 8-byte frame and the CRC call cost
	// nothing, small enough to sit in a CPU's cache while it is checked.
	DefaultBlockSize = 4 << 20
)

// Kind is the container a snapshot holds.
type Kind uint8

// Container kinds.
const (
	KindSlice Kind = 1
	KindMap   Kind = 2
	KindBTree Kind = 3
	KindRing  Kind = 4
)

func (k Kind) String() string {
	switch k {
	case KindSlice:
		return "Slice"
	case KindMap:
		return "Map"
	case KindBTree:
		return "BTree"
	case KindRing:
		return "Ring"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Errors. Containers wrap them with Wrap so that their callers match the
// vmem sentinels.
var (
	ErrCorrupt      = errors.New("snapfmt: corrupt snapshot")
	ErrTypeMismatch = errors.New("snapfmt: snapshot holds another type")
)

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// wrapped is an error that matches both a snapfmt sentinel (through its
// chain) and the caller's sentinel for the same condition.
type wrapped struct {
	err  error
	kind error
}

func (e *wrapped) Error() string        { return e.err.Error() }
func (e *wrapped) Unwrap() error        { return e.err }
func (e *wrapped) Is(target error) bool { return target == e.kind }

// Wrap makes err also match corrupt when it is a corruption error of this
// package, and mismatch when it is a type mismatch. Other errors (those of
// the underlying reader or writer, device errors) come back unchanged.
func Wrap(err, corrupt, mismatch error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrCorrupt):
		return &wrapped{err, corrupt}
	case errors.Is(err, ErrTypeMismatch):
		return &wrapped{err, mismatch}
	}
	return err
}

// Header is the decoded header of a snapshot.
type Header struct {
	Kind        Kind
	BlockSize   uint32
	Fingerprint uint64
	Count       uint64
	Aux         [3]uint64
}

// Encode returns the header's 64 bytes, checksum included.
func (h *Header) Encode() [HeaderSize]byte {
	var b [HeaderSize]byte
	copy(b[:8], Magic)
	le := binary.LittleEndian
	le.PutUint16(b[8:], Version)
	b[10] = byte(h.Kind)
	le.PutUint32(b[12:], h.BlockSize)
	le.PutUint64(b[16:], h.Fingerprint)
	le.PutUint64(b[24:], h.Count)
	for i, a := range h.Aux {
		le.PutUint64(b[32+8*i:], a)
	}
	le.PutUint32(b[60:], Sum(b[:60]))
	return b
}

// DecodeHeader checks and decodes a header: magic, checksum, version,
// flags and block size. It says nothing about the types.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, corruptf("header of %d bytes, want %d", len(b), HeaderSize)
	}
	if string(b[:8]) != Magic {
		return Header{}, corruptf("not a govram snapshot (magic %q)", b[:8])
	}
	le := binary.LittleEndian
	if got, want := le.Uint32(b[60:]), Sum(b[:60]); got != want {
		return Header{}, corruptf("header checksum %08x, computed %08x", got, want)
	}
	if v := le.Uint16(b[8:]); v != Version {
		return Header{}, corruptf("format version %d, this library reads %d", v, Version)
	}
	if b[11] != 0 || le.Uint32(b[56:]) != 0 {
		return Header{}, corruptf("reserved header fields are set")
	}
	h := Header{
		Kind:        Kind(b[10]),
		BlockSize:   le.Uint32(b[12:]),
		Fingerprint: le.Uint64(b[16:]),
		Count:       le.Uint64(b[24:]),
	}
	for i := range h.Aux {
		h.Aux[i] = le.Uint64(b[32+8*i:])
	}
	if h.BlockSize == 0 || h.BlockSize > MaxBlockSize {
		return Header{}, corruptf("block size %d outside [1, %d]", h.BlockSize, MaxBlockSize)
	}
	return h, nil
}

// Fingerprint hashes the layout of types (kind, size, alignment, and for
// structs and arrays their fields and elements, recursively, with field
// names and offsets) together with the container kind and the machine's
// byte order. It is the same in every run and differs for types whose
// bytes mean different things.
func Fingerprint(kind Kind, types ...reflect.Type) uint64 {
	h := fnv.New64a()
	var one uint16 = 1
	order := "le"
	if *(*byte)(unsafe.Pointer(&one)) == 0 {
		order = "be"
	}
	fmt.Fprintf(h, "govram/%s/%s", kind, order)
	for _, t := range types {
		h.Write([]byte{'|'})
		describe(h, t, 0)
	}
	return h.Sum64()
}

// describe writes t's layout. depth bounds recursion through arrays of
// structs of arrays; pointer-free types are finite, but a bound costs
// nothing.
func describe(w interface{ Write([]byte) (int, error) }, t reflect.Type, depth int) {
	fmt.Fprintf(w, "%s:%d:%d", t.Kind(), t.Size(), t.Align())
	if depth > 64 {
		return
	}
	switch t.Kind() {
	case reflect.Array:
		fmt.Fprintf(w, "[%d]", t.Len())
		describe(w, t.Elem(), depth+1)
	case reflect.Struct:
		w.Write([]byte{'{'})
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			fmt.Fprintf(w, "%s@%d=", f.Name, f.Offset)
			describe(w, f.Type, depth+1)
			w.Write([]byte{';'})
		}
		w.Write([]byte{'}'})
	}
}

// parallelMin: blocks at least this long are checksummed in parts on
// several goroutines and the parts joined by Combine. One core computes
// CRC-32C more slowly than bulk transfers run (docs/physics.md).
const (
	parallelMin = 2 << 20
	partMin     = 1 << 20
)

// Checksum returns the CRC-32C of p, computed on several goroutines when p
// is large.
func Checksum(p []byte) uint32 {
	workers := min(runtime.GOMAXPROCS(0), 16, len(p)/partMin)
	if len(p) < parallelMin || workers <= 1 {
		return Sum(p)
	}
	part := (len(p) + workers - 1) / workers
	sums := make([]uint32, workers)
	var wg sync.WaitGroup
	for i := range workers {
		lo := min(i*part, len(p))
		hi := min(lo+part, len(p))
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[i] = Sum(p[lo:hi])
		}()
	}
	wg.Wait()
	crc := sums[0]
	for i := 1; i < workers; i++ {
		lo := min(i*part, len(p))
		hi := min(lo+part, len(p))
		crc = Combine(crc, sums[i], int64(hi-lo))
	}
	return crc
}
