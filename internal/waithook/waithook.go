// Package waithook lets tests run code at the points where a govram call
// blocks on work it started: a GPU fence, the workers of a parallel pass.
//
// A container's memory is freed by its garbage-collection backstop once
// the container is unreachable, so a call must keep its container
// reachable until it has finished with that memory (runtime.KeepAlive).
// A call that blocks is where a forgotten KeepAlive bites: the GPU or the
// workers still use the memory while the collector runs. Tests set a hook
// that collects garbage at every such point and checks that the container
// survived (vmemtest.KeptAlive). Outside tests the hook is nil and a wait
// costs one atomic load more.
package waithook

import "sync/atomic"

var hook atomic.Pointer[func()]

// Set installs f (nil: none) and returns a function that restores the
// hook found before.
func Set(f func()) (restore func()) {
	var p *func()
	if f != nil {
		p = &f
	}
	old := hook.Swap(p)
	return func() { hook.Store(old) }
}

// Run calls the hook, if one is set. Callers call it just before they
// block.
func Run() {
	if f := hook.Load(); f != nil {
		(*f)()
	}
}
