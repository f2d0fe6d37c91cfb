package vmem_test

import (
	"fmt"
	"github.com/govram/govram/internal/human"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/vmem"
)

// snapBenchBytes is the Slice size of BenchmarkSliceSnapshot: 64 MiB, or
// VMEM_BENCH_SNAPSHOT_GIB gibibytes (fractions allowed).
func snapBenchBytes(b *testing.B) uint64 {
	v := os.Getenv("VMEM_BENCH_SNAPSHOT_GIB")
	if v == "" {
		return 64 << 20
	}
	gib, err := strconv.ParseFloat(v, 64)
	if err != nil || gib <= 0 {
		b.Fatalf("VMEM_BENCH_SNAPSHOT_GIB=%q: want a positive number", v)
	}
	return uint64(gib*(1<<30)) &^ 7
}

// pinnedBuf is a snapshot held in vmem.Host blocks (pinned memory on a
// GPU), read back without copies through Next, as a bytes.Buffer over one
// such block would be. Host blocks are at most the driver's largest
// allocation, so it spans several; a Next across two of them copies into
// scratch (once per GiB).
type pinnedBuf struct {
	d       *vmem.Device
	blks    []block.Block
	chunk   int
	w, r    int
	scratch []byte
}

func newPinnedBuf(d *vmem.Device) *pinnedBuf {
	return &pinnedBuf{d: d, chunk: int(min(1<<30, d.Info().Tiers[vmem.Host].MaxBlock))}
}

func (p *pinnedBuf) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i, off := p.w/p.chunk, p.w%p.chunk
		if i == len(p.blks) {
			blk, err := kdev(p.d).Alloc(block.Host, uint64(p.chunk), 0)
			if err != nil {
				return n - len(b), err
			}
			p.blks = append(p.blks, blk)
		}
		k := copy(p.blks[i].Bytes()[off:], b)
		b, p.w = b[k:], p.w+k
	}
	return n, nil
}

func (p *pinnedBuf) Next(n int) []byte {
	n = min(n, p.w-p.r)
	i, off := p.r/p.chunk, p.r%p.chunk
	p.r += n
	if off+n <= p.chunk {
		return p.blks[i].Bytes()[off : off+n]
	}
	p.scratch = append(p.scratch[:0], p.blks[i].Bytes()[off:]...)
	for rest := n - (p.chunk - off); rest > 0; {
		i++
		k := min(rest, p.chunk)
		p.scratch = append(p.scratch, p.blks[i].Bytes()[:k]...)
		rest -= k
	}
	return p.scratch
}

func (p *pinnedBuf) Read(b []byte) (int, error) {
	if p.r == p.w {
		return 0, io.EOF
	}
	return copy(b, p.Next(len(b))), nil
}

func (p *pinnedBuf) free() {
	for _, b := range p.blks {
		kdev(p.d).Free(b)
	}
}

// BenchmarkSliceSnapshot saves a Slice[uint64] to io.Discard and loads it
// back from a snapshot in pinned host memory (no copy by the reader), with
// throughput in GB/s of element bytes. The H200 target is 10 GB/s each way
// for 10 GiB (VMEM_BENCH_SNAPSHOT_GIB=10). alloc is NewSlice and Close of
// the same size: the part of a load spent allocating segments.
func BenchmarkSliceSnapshot(b *testing.B) {
	nbytes := snapBenchBytes(b)
	n := int(nbytes / 8)
	name := sizeName(nbytes)
	if nbytes%(1<<30) != 0 && nbytes > 1<<30 {
		name = fmt.Sprintf("%.2fGiB", float64(nbytes)/(1<<30))
	}
	benchEach(b, func(b *testing.B, d *vmem.Device) {
		s, err := vmem.NewSlice[uint64](d, n)
		if err != nil {
			b.Skipf("no room for %s: %v", human.Bytes(nbytes), err)
		}
		defer s.Close()
		if err := s.Fill(0x0123456789abcdef); err != nil {
			b.Fatal(err)
		}
		b.Run("save/"+name, func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			for b.Loop() {
				if err := s.Save(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(nbytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		// What a load cannot beat: allocating the Slice's segments, which
		// the device does one after another.
		b.Run("alloc/"+name, func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			for b.Loop() {
				l, err := vmem.NewSlice[uint64](d, n)
				if err != nil {
					b.Fatal(err)
				}
				l.Close()
			}
			b.ReportMetric(float64(nbytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		pb := newPinnedBuf(d)
		defer pb.free()
		if err := s.Save(pb); err != nil {
			b.Skipf("no pinned memory for the snapshot: %v", err)
		}
		b.Run("load/"+name, func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			// Timed: LoadSlice alone. Closing the loaded Slice (the driver
			// takes its memory back: 30 ms a GiB on an H200) is not a load.
			for i := 0; i < b.N; i++ {
				pb.r = 0
				l, err := vmem.LoadSlice[uint64](d, pb)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				l.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(nbytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	})
}
