package collections

import (
	"runtime"
	"sync"

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
