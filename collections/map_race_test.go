package collections

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	// The child runs with several Ps, so that its two sides run on two
	// threads at once; one P would interleave them only at preemptions,
	// where the map's own atomics may order every access. It is tried a
	// few times, since on a loaded machine the threads may still take
	// turns.
	var out []byte
	for range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMapRaceDetected$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "VMEM_MAP_MISUSE=1", "VMEM_BACKEND=host", "GOMAXPROCS=4")
		out, _ = cmd.CombinedOutput()
		if strings.Contains(string(out), "WARNING: DATA RACE") {
			return
		}
	}
	t.Fatalf("a Put overlapping Gets was not reported:\n%s", out)
}

// mapMisuse breaks the contract on purpose. The two sides first meet, so
// that their unsynchronised calls overlap in time whatever the scheduler
// does (on a loaded machine one side could otherwise finish before the
// other starts, and the map's own atomics would then order every access).
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
	var putting, getting atomic.Bool
	deadline := time.Now().Add(200 * time.Millisecond)
	var wg sync.WaitGroup
	wg.Go(func() {
		putting.Store(true)
		for !getting.Load() {
			runtime.Gosched()
		}
		for i := uint64(0); time.Now().Before(deadline); i++ {
			m.Put(i%2000, i)
		}
	})
	getting.Store(true)
	for !putting.Load() {
		runtime.Gosched()
	}
	for i := uint64(0); time.Now().Before(deadline); i++ {
		func() {
			defer func() { recover() }() // the run-time check may panic first
			m.Get(i % 2000)
		}()
	}
	wg.Wait()
}
