package collections

// Impossible requests, panics in callers' functions, sticky errors,
// constructors on dead devices, forged counts, short writes and bad
// arguments (docs/reliability.md, "Impossible requests and misuse"), on
// every backend.

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/internal/snapfmt"
	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// TestMapStringLimitRoundTrip: strings over the limit are refused by every
// entry point, and a string at the limit survives Save and LoadMap.
func TestMapStringLimitRoundTrip(t *testing.T) {
	big := strings.Repeat("x", snapMaxString+24)
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, err := NewMap[string, string](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		for _, n := range []int{snapMaxString + 1, snapMaxString + 8, snapMaxString + 24} {
			if err := m.Put("k", big[:n]); !errors.Is(err, vmem.ErrTooLarge) {
				t.Errorf("Put of a %d-byte value: %v, want vmem.ErrTooLarge", n, err)
			}
			if err := m.Put(big[:n], "v"); !errors.Is(err, vmem.ErrTooLarge) {
				t.Errorf("Put of a %d-byte key: %v, want vmem.ErrTooLarge", n, err)
			}
			if err := m.putMany([]string{"a"}, []string{big[:n]}); !errors.Is(err, vmem.ErrTooLarge) {
				t.Errorf("PutMany of a %d-byte value: %v, want vmem.ErrTooLarge", n, err)
			}
		}
		if m.Len() != 0 {
			t.Fatalf("refused strings left %d entries", m.Len())
		}
		if testing.Short() {
			return
		}
		// At the limit: stored, saved, loaded back.
		if err := m.Put("k", big[:snapMaxString]); err != nil {
			t.Fatalf("Put of a value at the limit: %v", err)
		}
		if err := m.Put("small", "v"); err != nil {
			t.Fatal(err)
		}
		f, err := os.CreateTemp(t.TempDir(), "map")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := m.Save(f); err != nil {
			t.Fatalf("Save: %v", err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		m2, err := LoadMap[string, string](d, f)
		if err != nil {
			t.Fatalf("LoadMap of what Save wrote: %v", err)
		}
		defer m2.Close()
		if v, ok := m2.Get("k"); !ok || v != big[:snapMaxString] {
			t.Errorf("the value at the limit came back as %d bytes (found %v)", len(v), ok)
		}
		if v, _ := m2.Get("small"); v != "v" || m2.Len() != 2 {
			t.Errorf("loaded map: Len %d, small=%q", m2.Len(), v)
		}
	})
}

// TestImpossibleContainerSizes: containers refuse sizes no device holds,
// holding nothing afterwards.
func TestImpossibleContainerSizes(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		if r, err := NewRing[uint64](d, math.MaxInt); err == nil {
			r.Close()
			t.Error("NewRing of MaxInt elements: no error")
		}
		if r, err := NewRing[uint64](d, 1<<40); !errors.Is(err, vmem.ErrOutOfMemory) && !errors.Is(err, vmem.ErrTooLarge) {
			t.Errorf("NewRing of 2^40 elements: %v", err)
			if err == nil {
				r.Close()
			}
		}
		for tier := range vmem.Tier(3) {
			if st := d.Info().Tiers[tier]; st.Blocks != 0 {
				t.Errorf("%s tier: %d blocks held after the refusals", tier, st.Blocks)
			}
		}
	})
}

// holesBlocks is the device's live block count over every tier.
func holesBlocks(d *vmem.Device) int {
	n := 0
	for tier := range vmem.Tier(3) {
		n += d.Info().Tiers[tier].Blocks
	}
	return n
}

// panicWriter panics on its second Write: after the header, while the
// entries are read.
type panicWriter struct{ n int }

func (w *panicWriter) Write(p []byte) (int, error) {
	if w.n++; w.n == 2 {
		panic("writer panics")
	}
	return len(p), nil
}

// TestPanicInScanLeavesNoBlocks: a loop body, callback or writer that
// panics (and is recovered) leaves no block behind, for every scan of
// every container.
func TestPanicInScanLeavesNoBlocks(t *testing.T) {
	const rounds = 20
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		// Enough entries that Save writes blocks while it scans.
		const n = 100000
		tr, err := NewBTreeOrdered[uint64, uint64](d, btWithExtentLeaves(4))
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		m, err := NewMap[uint64, uint64](d)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		rg, err := NewRing[uint64](d, n)
		if err != nil {
			t.Fatal(err)
		}
		defer rg.Close()
		s, err := vmem.NewSlice[uint64](d, n)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		keys := make([]uint64, n)
		for i := range keys {
			keys[i] = uint64(i)
		}
		if err := tr.BulkLoad(keys, keys); err != nil {
			t.Fatal(err)
		}
		// Entries of 64 bytes: Save writes its first block (4 MiB) while
		// it still scans.
		wide, err := NewBTreeOrdered[uint64, [56]byte](d, btWithExtentLeaves(4))
		if err != nil {
			t.Fatal(err)
		}
		defer wide.Close()
		if err := wide.BulkLoad(keys, make([][56]byte, n)); err != nil {
			t.Fatal(err)
		}
		if err := m.putMany(keys, keys); err != nil {
			t.Fatal(err)
		}
		if _, err := rg.PushBatch(keys); err != nil {
			t.Fatal(err)
		}
		if err := s.CopyFrom(keys, 0); err != nil {
			t.Fatal(err)
		}
		// Each scan panics a little way in, once windows are in flight.
		bodies := map[string]func(){
			"BTree.All":      func() { holesPanicSeq(tr.All()) },
			"BTree.Backward": func() { holesPanicSeq(tr.Backward()) },
			"BTree.Range":    func() { holesPanicSeq(tr.Range(10, n-10)) },
			"BTree.Ascend":   func() { holesPanicSeq(tr.Ascend(10)) },
			"BTree.Descend":  func() { holesPanicSeq(tr.Descend(n - 10)) },
			"BTree.Save":     func() { wide.Save(&panicWriter{}) },
			"Map.All":        func() { holesPanicSeq(m.All()) },
			"Map.Save":       func() { m.Save(&panicWriter{}) },
			"Ring.All":       func() { holesPanicSeq(rg.All()) },
			"Ring.Save":      func() { rg.Save(&panicWriter{}) },
			"Slice.All":      func() { holesPanicSeq(s.All()) },
			"Slice.Save":     func() { s.Save(&panicWriter{}) },
		}
		recovered := func(f func()) (p bool) {
			defer func() { p = recover() != nil }()
			f()
			return false
		}
		for name, body := range bodies {
			// Once without a panic, so kept buffers count in the baseline.
			for range 2 {
				recovered(body)
			}
			before := holesBlocks(d)
			for range rounds {
				if !recovered(body) {
					t.Fatalf("%s: the body did not panic", name)
				}
			}
			// Sequences the compiler inlines cannot defer: a scan abandoned
			// by a panic returns its windows at the next collection.
			after := holesBlocks(d)
			for i := 0; after > before+btScanPool && i < 100; i++ {
				runtime.GC()
				time.Sleep(10 * time.Millisecond)
				after = holesBlocks(d)
			}
			if after > before+btScanPool {
				t.Errorf("%s: %d blocks after %d panics, %d before", name, after, rounds, before)
			}
		}
		// Every container still works.
		if v, ok := tr.Get(7); !ok || v != 7 {
			t.Errorf("BTree.Get after the panics: %v %v", v, ok)
		}
		if v, ok := m.Get(7); !ok || v != 7 {
			t.Errorf("Map.Get after the panics: %v %v", v, ok)
		}
		cnt := 0
		for range tr.All() {
			cnt++
		}
		if cnt != n {
			t.Errorf("BTree.All after the panics: %d entries", cnt)
		}
	})
}

// holesPanicSeq ranges over seq and panics at its 100th element.
func holesPanicSeq[K, V any](seq func(func(K, V) bool)) {
	i := 0
	for range seq {
		if i++; i == 100 {
			panic("loop body panics")
		}
	}
}

// TestStickyErrorOnRetry: after a device loss every Save reports
// vmem.ErrDeviceLost, the second and later ones included.
func TestStickyErrorOnRetry(t *testing.T) {
	for _, b := range vmemtest.Backends() {
		t.Run(string(b), func(t *testing.T) {
			d := relOpen(t, b)
			m, err := NewMap[uint64, uint64](d)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			tr, err := NewBTreeOrdered[uint64, uint64](d, WithBTreeTier(vmem.Private))
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			for i := range uint64(5000) {
				m.Put(i, i)
				tr.ReplaceOrInsert(i, i)
			}
			kdev(d).InjectFaults(kern.Faults{LoseDevice: true})
			for try := range 3 {
				if err := m.Save(io.Discard); !errors.Is(err, vmem.ErrDeviceLost) {
					t.Errorf("Map.Save #%d after the loss: %v", try+1, err)
				}
				if err := tr.Save(io.Discard); !errors.Is(err, vmem.ErrDeviceLost) {
					t.Errorf("BTree.Save #%d after the loss: %v", try+1, err)
				}
			}
		})
	}
}

// TestSnapSaveKeepsOldError: an error that stopped an iteration keeps its
// identity on every Save, even when it was already reported before.
func TestSnapSaveKeepsOldError(t *testing.T) {
	sticky := errors.New("sticky")
	var errf func() error = func() error { return sticky }
	empty := func(func(uint64, uint64) bool) {}
	h := snapfmt.Header{Kind: snapfmt.KindMap, Fingerprint: mapSnapFingerprint[uint64, uint64]()}
	for range 2 {
		if err := snapSaveEntries(io.Discard, h, 10, empty, errf); !errors.Is(err, sticky) {
			t.Fatalf("snapSaveEntries with entries missing and an old error: %v", err)
		}
	}
}

// TestConstructorsOnDeadDevice: every constructor and loader fails on a
// closed or lost device, and none leaves anything allocated.
func TestConstructorsOnDeadDevice(t *testing.T) {
	for _, b := range vmemtest.Backends() {
		for _, how := range []string{"closed", "lost"} {
			t.Run(string(b)+"/"+how, func(t *testing.T) {
				d := relOpen(t, b)
				want := vmem.ErrClosed
				if how == "lost" {
					kdev(d).InjectFaults(kern.Faults{LoseDevice: true})
					want = vmem.ErrDeviceLost
				} else {
					d.Close()
				}
				check := func(name string, err error) {
					t.Helper()
					if !errors.Is(err, want) {
						t.Errorf("%s on a %s device: %v, want %v", name, how, err, want)
					}
				}
				_, err := NewBTree[uint64, uint64](d, func(a, b uint64) bool { return a < b })
				check("NewBTree", err)
				_, err = NewBTreeOrdered[uint64, uint64](d)
				check("NewBTreeOrdered", err)
				_, err = NewMap[uint64, uint64](d)
				check("NewMap", err)
				_, err = NewRing[uint64](d, 16)
				check("NewRing", err)
				_, err = vmem.NewSlice[uint64](d, 16)
				check("NewSlice", err)
				empty := bytes.NewReader(nil)
				_, err = LoadMap[uint64, uint64](d, empty)
				check("LoadMap", err)
				_, err = LoadBTreeOrdered[uint64, uint64](d, empty)
				check("LoadBTreeOrdered", err)
				_, err = LoadRing[uint64](d, empty)
				check("LoadRing", err)
				_, err = vmem.LoadSlice[uint64](d, empty)
				check("LoadSlice", err)
			})
		}
	}
}

// TestForgedCountIsCheap: a snapshot that claims far more entries than its
// bytes can hold is refused having read no more than it holds, records of
// zero size included.
func TestForgedCountIsCheap(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		forged := snapForge(snapfmt.Header{Kind: snapfmt.KindMap,
			Fingerprint: mapSnapFingerprint[struct{}, struct{}](), Count: 2e8}, nil)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := LoadMap[struct{}, struct{}](d, bytes.NewReader(forged))
		runtime.ReadMemStats(&after)
		if !errors.Is(err, vmem.ErrCorrupt) {
			t.Errorf("LoadMap of a forged count: %v, want vmem.ErrCorrupt", err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
			t.Errorf("LoadMap of a %d-byte forgery allocated %d bytes of Go heap", len(forged), got)
		}
		// Distinct keys that repeat: refused at the first batch.
		body := make([]byte, 0, 8*4096)
		for range 4096 {
			body = append(body, 1, 0, 0, 0, 0, 0, 0, 0)
		}
		forged = snapForge(snapfmt.Header{Kind: snapfmt.KindMap,
			Fingerprint: mapSnapFingerprint[uint32, uint32](), Count: 1e8}, body)
		runtime.ReadMemStats(&before)
		_, err = LoadMap[uint32, uint32](d, bytes.NewReader(forged))
		runtime.ReadMemStats(&after)
		if !errors.Is(err, vmem.ErrCorrupt) {
			t.Errorf("LoadMap of repeated keys under a forged count: %v, want vmem.ErrCorrupt", err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
			t.Errorf("LoadMap of a %d-byte forgery allocated %d bytes of Go heap", len(forged), got)
		}
		if n := holesBlocks(d); n != 0 {
			t.Errorf("%d blocks held after the refusals", n)
		}
	})
}

// shortWriter takes half of every write and reports no error, breaking
// io.Writer's contract.
type shortWriter struct{ n int }

func (w *shortWriter) Write(p []byte) (int, error) {
	w.n += len(p) / 2
	return len(p) / 2, nil
}

func TestShortWriteDetected(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		m, _ := NewMap[uint64, string](d)
		defer m.Close()
		tr, _ := NewBTreeOrdered[uint64, uint64](d)
		defer tr.Close()
		rg, _ := NewRing[uint64](d, 64)
		defer rg.Close()
		s, _ := vmem.NewSlice[uint64](d, 64)
		defer s.Close()
		for i := range uint64(50) {
			m.Put(i, "value")
			tr.ReplaceOrInsert(i, i)
			rg.Push(i)
		}
		for name, save := range map[string]func(io.Writer) error{
			"Map": m.Save, "BTree": tr.Save, "Ring": rg.Save, "Slice": s.Save,
		} {
			if err := save(&shortWriter{}); !errors.Is(err, io.ErrShortWrite) {
				t.Errorf("%s.Save to a short writer: %v, want io.ErrShortWrite", name, err)
			}
		}
	})
}

// TestBadArgumentsCollections: nil arguments, out-of-range options and
// pointer types are errors naming the call, never panics.
func TestBadArgumentsCollections(t *testing.T) {
	if _, err := LoadMap[uint64, uint64](nil, bytes.NewReader(nil)); !errors.Is(err, vmem.ErrNoDevice) {
		t.Errorf("LoadMap(nil device): %v", err)
	}
	if _, err := LoadBTreeOrdered[uint64, uint64](nil, bytes.NewReader(nil)); !errors.Is(err, vmem.ErrNoDevice) {
		t.Errorf("LoadBTreeOrdered(nil device): %v", err)
	}
	if _, err := NewBTreeOrdered[uint64, uint64](nil); !errors.Is(err, vmem.ErrNoDevice) {
		t.Errorf("NewBTreeOrdered(nil device): %v", err)
	}
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		if _, err := LoadMap[uint64, uint64](d, nil); !errors.Is(err, vmem.ErrRange) {
			t.Errorf("LoadMap(nil reader): %v", err)
		}
		if _, err := LoadBTreeOrdered[uint64, uint64](d, nil); !errors.Is(err, vmem.ErrRange) {
			t.Errorf("LoadBTreeOrdered(nil reader): %v", err)
		}
		if _, err := LoadRing[uint64](d, nil); !errors.Is(err, vmem.ErrRange) {
			t.Errorf("LoadRing(nil reader): %v", err)
		}
		if _, err := LoadBTree[uint64, uint64](d, bytes.NewReader(nil), nil); !errors.Is(err, vmem.ErrRange) {
			t.Errorf("LoadBTree(nil less): %v", err)
		}
		for name, opt := range map[string]BTreeOption{
			"btWithExtentLeaves(-1)":    btWithExtentLeaves(-1),
			"btWithExtentLeaves(1<<40)": btWithExtentLeaves(1 << 40),
			"btWithLeafEntries(2)":      btWithLeafEntries(2),
			"WithBTreeTier(9)":          WithBTreeTier(9),
			"WithBTreeTier(Host)":       WithBTreeTier(vmem.Host),
		} {
			if tr, err := NewBTreeOrdered[uint64, uint64](d, opt); !errors.Is(err, vmem.ErrRange) {
				t.Errorf("NewBTreeOrdered with %s: %v, want vmem.ErrRange", name, err)
				if err == nil {
					tr.Close()
				}
			}
		}
		// Any bytes: the type is refused before the snapshot is read.
		if _, err := LoadBTreeOrdered[uint64, *int](d, bytes.NewReader([]byte("not a snapshot"))); !errors.Is(err, vmem.ErrPointerType) {
			t.Errorf("LoadBTree with a pointer value type: %v, want vmem.ErrPointerType", err)
		}
		if _, err := LoadBTree[*int, uint64](d, bytes.NewReader([]byte("not a snapshot")), func(a, b *int) bool { return false }); !errors.Is(err, vmem.ErrPointerType) {
			t.Errorf("LoadBTree with a pointer key type: %v, want vmem.ErrPointerType", err)
		}
	})
}
