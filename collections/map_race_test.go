package collections

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/govram/govram/internal/buildconst"
	"github.com/govram/govram/vmem"
)

// TestMapRaceDetected shows that the race detector enforces the
// concurrency contract: a child process overlaps Puts with Gets on one map,
// with no synchronisation, and must be reported.
func TestMapRaceDetected(t *testing.T) {
	if os.Getenv("VMEM_MAP_MISUSE") == "1" {
		mapMisuse()
		return
	}
	if !buildconst.Race {
		t.Skip("needs -race")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMapRaceDetected$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "VMEM_MAP_MISUSE=1", "VMEM_BACKEND=host")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "WARNING: DATA RACE") {
		t.Fatalf("a Put overlapping Gets was not reported:\n%s", out)
	}
}

// mapMisuse breaks the contract on purpose.
func mapMisuse() {
	d, err := vmem.Open(vmem.Options{Backend: vmem.BackendHost})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	// No growth, so the racing reads never touch freed memory.
	m, err := NewMap[uint64, uint64](d, WithCapacity(4000))
	if err != nil {
		panic(err)
	}
	defer m.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := uint64(0); i < 2000; i++ {
			m.Put(i, i)
		}
	})
	for i := uint64(0); i < 2000; i++ {
		func() {
			defer func() { recover() }() // the run-time check may panic first
			m.Get(i)
		}()
	}
	wg.Wait()
}
