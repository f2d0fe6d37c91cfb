package vmem

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govram/govram/internal/vk"
)

// A wait for the GPU that times out does not mean the GPU is gone: a long
// sort on a slow device may simply still be running. The call returns
// ErrTimeout, and what the work still uses is held back until it ends:
//
//   - its streams are parked (not reused: a stream takes a new submission
//     only once its fence has signalled), with a release that returns them
//     to their pools;
//   - raw memory freed meanwhile (chunks, kernel scratch) is kept until the
//     GPU is done with it (vkFree);
//   - every call that enters the device first asks whether the parked work
//     has ended (settle): until it has, it fails with ErrTimeout, so no new
//     block can be carved from memory the GPU still writes.
//
// Once the work ends the device is usable as before; a device lost
// meanwhile is reported as lost.
type stallState struct {
	on       atomic.Bool
	mu       sync.Mutex
	parked   []parked
	deferred []*vk.Memory
}

type parked struct {
	streams []*vk.Stream
	release func()
}

// ErrTimeout: a wait for the GPU ran past Options.Timeout (scaled by the
// size of the work). The device is not lost: the work goes on, calls
// return ErrTimeout until it ends, and then the device works as before.
var ErrTimeout = errors.New("vmem: timed out waiting for the GPU")

// isTimeout reports a wait that ran out of time.
func isTimeout(err error) bool {
	var ce *vk.CallError
	return errors.As(err, &ce) && ce.Result == vk.Timeout
}

// park holds streams whose work has not ended; release runs once it has.
func (d *Device) park(streams []*vk.Stream, release func()) {
	st := &d.stall
	st.mu.Lock()
	st.parked = append(st.parked, parked{streams, release})
	st.on.Store(true)
	st.mu.Unlock()
}

// vkFree frees raw device memory, or keeps it until parked work has ended.
func (d *Device) vkFree(m *vk.Memory) {
	st := &d.stall
	if st.on.Load() {
		st.mu.Lock()
		if st.on.Load() {
			st.deferred = append(st.deferred, m)
			st.mu.Unlock()
			return
		}
		st.mu.Unlock()
	}
	d.vk.dev.Free(m)
}

// settle releases parked work that has ended. It returns ErrTimeout while
// some has not, and ErrDeviceLost if the device was lost meanwhile.
func (d *Device) settle() error {
	st := &d.stall
	st.mu.Lock()
	defer st.mu.Unlock()
	keep := st.parked[:0]
	var lost error
	for _, p := range st.parked {
		done := true
		for _, s := range p.streams {
			ok, err := s.Done()
			if err != nil {
				lost = err
			}
			done = done && ok
		}
		if done || lost != nil {
			p.release()
			continue
		}
		keep = append(keep, p)
	}
	st.parked = keep
	if lost != nil {
		return d.noteErr(wrapVk(lost))
	}
	if len(keep) > 0 {
		return fmt.Errorf("%w: work from an earlier call that timed out is still running", ErrTimeout)
	}
	for _, m := range st.deferred {
		d.vk.dev.Free(m)
	}
	st.deferred = nil
	st.on.Store(false)
	return nil
}

// drainStalls waits for parked work (Close): each stream for one more
// timeout, then everything is released whatever the answer.
func (d *Device) drainStalls() {
	st := &d.stall
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, p := range st.parked {
		for _, s := range p.streams {
			s.Wait(d.timeoutNs())
		}
		p.release()
	}
	st.parked = nil
	for _, m := range st.deferred {
		d.vk.dev.Free(m)
	}
	st.deferred = nil
	st.on.Store(false)
}

// gpuFloorRate is the slowest rate, in bytes a second, at which any
// supported device (a software driver on a busy CPU included) works
// through the data of a submission; a wait allows Options.Timeout plus the
// submission's bytes at this rate. Tests lower the allowance to provoke
// timeouts.
var gpuFloorRate atomic.Uint64

func init() { gpuFloorRate.Store(16 << 20) }

// waitBound is the time a wait for work over volume bytes may take.
func (d *Device) waitBound(volume uint64) time.Duration {
	r := max(gpuFloorRate.Load(), 1)
	extra := min(float64(volume)/float64(r)*float64(time.Second), float64(1<<62))
	return d.opts.Timeout + time.Duration(extra)
}

// waitNs is waitBound in nanoseconds, for vk waits.
func (d *Device) waitNs(volume uint64) uint64 { return uint64(d.waitBound(volume)) }
