package vmemtest

import (
	"fmt"
	"testing"

	"github.com/govram/govram/internal/waithook"
)

type kaThing struct{ pad [64]byte }

var kaSink *kaThing

// kaNew returns a kaThing on the heap, as the containers' constructors do.
//
//go:noinline
func kaNew() *kaThing {
	kaSink = &kaThing{}
	x := kaSink
	kaSink = nil
	return x
}

func (*kaThing) Close() error { return nil }

// dropThenWait waits after its last use of x, as a call that forgot a
// runtime.KeepAlive does.
//
//go:noinline
func (x *kaThing) dropThenWait() { waithook.Run() }

// useAfterWait uses x after its wait.
//
//go:noinline
func (x *kaThing) useAfterWait() byte {
	waithook.Run()
	return x.pad[3]
}

type recTB struct {
	testing.TB
	errs []string
}

func (r *recTB) Helper()                   {}
func (r *recTB) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }

func TestKeptAlive(t *testing.T) {
	r := &recTB{TB: t}
	if n := KeptAlive(r, kaNew(), func(x *kaThing) { x.dropThenWait() }); n != 1 {
		t.Errorf("%d waits, want 1", n)
	}
	if len(r.errs) != 1 {
		t.Errorf("a call that let go of its receiver before waiting: errors %q, want one", r.errs)
	}
	r = &recTB{TB: t}
	KeptAlive(r, kaNew(), func(x *kaThing) { x.useAfterWait() })
	if len(r.errs) != 0 {
		t.Errorf("a call that kept its receiver: errors %q, want none", r.errs)
	}
}
