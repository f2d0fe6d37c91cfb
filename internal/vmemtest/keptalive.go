package vmemtest

import (
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/govram/govram/internal/waithook"
)

// KeptAlive calls call(c) with c's only reference, collecting garbage at
// every point where govram blocks on work it started (a GPU fence, the
// workers of a parallel pass; see internal/waithook), and fails t if c
// was found unreachable there: the call let go of its container while it
// could still use the container's memory, which the container's
// garbage-collection backstop would then free under it. Afterwards it
// closes c. It returns how many waits the call made, so that a test can
// check it reached the code it means to test.
//
// The caller must not use c after passing it (pass it straight from its
// constructor), and call must not use it after the method under test.
func KeptAlive[T any, P interface {
	*T
	Close() error
}](t testing.TB, c P, call func(P)) int {
	t.Helper()
	w := weak.Make((*T)(c))
	// freed is closed when c has been collected: a collection right after
	// the call (which holds the last reference) is no fault, but its
	// backstop, not Close, then frees c's memory.
	freed := make(chan struct{})
	runtime.AddCleanup((*T)(c), func(ch chan struct{}) { close(ch) }, freed)
	var waits, lost atomic.Int64
	restore := waithook.Set(func() {
		waits.Add(1)
		runtime.GC()
		if w.Value() == nil {
			lost.Add(1)
		}
	})
	call(c)
	restore()
	if n := lost.Load(); n > 0 {
		// The type, not c: a use of c here would keep it alive.
		t.Errorf("%v was unreachable at %d of the %d waits of its call: its memory could be freed while in use (runtime.KeepAlive)", reflect.TypeFor[P](), n, waits.Load())
	}
	if p := w.Value(); p != nil {
		P(p).Close()
	} else {
		// Let the container's own backstop run before the leak checks.
		select {
		case <-freed:
		case <-time.After(10 * time.Second):
			t.Errorf("%v collected after its call, and its cleanup did not run", reflect.TypeFor[P]())
		}
		for range 10 {
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
	}
	return int(waits.Load())
}
