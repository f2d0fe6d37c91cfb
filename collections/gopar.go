package collections

import (
	"runtime"
	"sync"
	"unsafe"

	"github.com/govram/govram/internal/waithook"
)

// goPar calls f(i) for every i in [0, n), on a goroutine each when n > 1,
// and returns when all have returned. A panic in any call (a WithHasher
// function's, say) is raised again here, with the first panic's value, so
// that it reaches the caller of the container's method as if f had run on
// its goroutine, instead of ending the program from a goroutine the caller
// never sees.
func goPar(n int, f func(i int)) {
	if n <= 1 {
		if n == 1 {
			f(0)
		}
		return
	}
	var (
		wg       sync.WaitGroup
		once     sync.Once
		panicked bool
		val      any
	)
	for i := range n {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { panicked, val = true, r })
				}
			}()
			f(i)
		})
	}
	waithook.Run()
	wg.Wait()
	// What f reaches stays reachable while the workers may run it.
	runtime.KeepAlive(f)
	if panicked {
		panic(val)
	}
}

// mapPar runs f over [0, n) in parts of at least min items, on up to
// GOMAXPROCS goroutines.
func mapPar(n, minPart int, f func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), n/max(minPart, 1))
	if w <= 1 {
		f(0, n)
		return
	}
	per := (n + w - 1) / w
	goPar((n+per-1)/per, func(x int) { f(x*per, min((x+1)*per, n)) })
}

// mapParCopy copies n bytes, on several goroutines when n is large (one
// goroutine moves 10-20 GB/s; a batch of a million keys is 8 MB each way).
func mapParCopy(dst, src unsafe.Pointer, n uint64) {
	if n == 0 {
		return
	}
	d, s := unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n)
	const part = 1 << 19
	if n < 2*part {
		copy(d, s)
		return
	}
	mapPar(int(n/part), 1, func(a, b int) {
		hi := uint64(b) * part
		if b == int(n/part) {
			hi = n
		}
		copy(d[uint64(a)*part:hi], s[uint64(a)*part:hi])
	})
}
