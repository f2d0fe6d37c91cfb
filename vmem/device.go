package vmem

import (
	"errors"
	"fmt"
	"github.com/govram/govram/internal/human"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govram/govram/internal/hostmem"
	"github.com/govram/govram/internal/lines"
	"github.com/govram/govram/internal/tlsf"
	"github.com/govram/govram/internal/vk"
)

// Device is an open GPU (or the host backend) with its memory tiers. All
// methods are safe for concurrent use. A Device must be closed; Close frees
// the memory of every container still open.
type Device struct {
	backend Backend
	// closed and lost are read by every container read (Device.Err, the
	// reads' loss check): here, away from mu, whose line every operation
	// writes.
	closed atomic.Bool
	lost   atomic.Bool

	opts    Options
	planner lines.Planner // from opts.Costs
	tiers   [numTiers]tierState
	vk      *vkState // nil on the host backend
	info    Info     // static part, filled at Open

	// mu is held shared by every operation and exclusively by Close, so
	// Close waits for operations in flight and nothing runs after it.
	mu     sync.RWMutex
	faults faultState
	plumb  devPlumbing // kern.Of(d)
	// tracing: Alloc records its caller (kern.Device.TraceBlocks).
	tracing atomic.Bool
	stall   stallState // GPU work whose wait timed out (stall.go)
	// heapReserved: bytes of chunks held per memory heap (tiers that share
	// a heap share its capacity; the host backend's tiers are all heap 0).
	heapReserved [maxHeaps]atomic.Uint64

	// owners are the containers open on the device (see atClose); Close
	// closes them before it frees what is left.
	ownMu   sync.Mutex
	owners  map[uint64]func()
	ownNext uint64
}

// resolveOptions applies the environment (VMEM_BACKEND, VMEM_DEVICE) and
// the defaults to o, for Open and OpenAll alike, and returns the backend
// to open.
func resolveOptions(o Options) (Options, Backend, error) {
	b, err := parseBackend(o.Backend)
	if err != nil {
		return o, b, err
	}
	if eb, ok, err := envBackend(); err != nil {
		return o, b, err
	} else if ok {
		b = eb
	}
	if s := os.Getenv("VMEM_DEVICE"); s != "" {
		o.Device = s
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	return o, b, nil
}

// Open opens a device. With BackendAuto it picks a GPU through Vulkan and
// falls back to the host backend (Info().Fallback says why); with
// BackendVulkan it fails with an error matching ErrNoDevice that gives the
// reason.
func Open(o Options) (*Device, error) {
	o, b, err := resolveOptions(o)
	if err != nil {
		return nil, err
	}
	var fallback string
	if b == BackendAuto || b == BackendVulkan {
		d, err := openVulkan(o, b == BackendAuto)
		if err == nil {
			return d, nil
		}
		if b == BackendVulkan {
			return nil, err
		}
		fallback = err.Error()
	}
	d := openHost(o)
	d.info.Fallback = fallback
	return d, nil
}

func noDevice(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNoDevice, fmt.Sprintf(format, args...))
}

func newDevice(b Backend, o Options) *Device {
	if o.ChunkSize == 0 {
		o.ChunkSize = defaultChunk
	}
	o.ChunkSize = roundUp(o.ChunkSize, chunkGranule)
	d := &Device{backend: b, opts: o, planner: lines.PlannerFor(o.Costs)}
	d.plumb.d = d
	for t := range d.tiers {
		d.tiers[t] = tierState{tier: Tier(t), a: tlsf.New(), limit: o.Limits[t], memType: -1, spare: -1}
	}
	return d
}

func openHost(o Options) *Device {
	d := newDevice(BackendHost, o)
	ram := hostmem.TotalRAM()
	for t := range d.tiers {
		ts := &d.tiers[t]
		ts.available = true
		ts.capacity = ram
		ts.maxChunk = tlsf.MaxRegionSize
	}
	d.info = Info{Backend: BackendHost, Name: "host memory (anonymous mmap)", Type: "host"}
	return d
}

// pickDevice chooses among pds by the Device option, else by type.
func pickDevice(pds []vk.PhysicalDevice, sel string, auto bool) (*vk.PhysicalDevice, error) {
	if sel != "" {
		if i, err := strconv.Atoi(sel); err == nil {
			if i < 0 || i >= len(pds) {
				return nil, noDevice("device index %d out of range (%d devices)", i, len(pds))
			}
			return &pds[i], nil
		}
		for i := range pds {
			if strings.Contains(strings.ToLower(pds[i].Name), strings.ToLower(sel)) {
				return &pds[i], nil
			}
		}
		return nil, noDevice("no Vulkan device matches %q", sel)
	}
	rank := map[vk.DeviceType]int{vk.TypeDiscrete: 0, vk.TypeIntegrated: 1, vk.TypeVirtual: 2, vk.TypeOther: 3, vk.TypeCPU: 4}
	var best *vk.PhysicalDevice
	for i := range pds {
		p := &pds[i]
		if auto && p.Type == vk.TypeCPU {
			continue // software rasterizers are slower than the host backend
		}
		if best == nil || rank[p.Type] < rank[best.Type] {
			best = p
		}
	}
	if best == nil {
		return nil, noDevice("only software Vulkan devices (%s); use BackendVulkan to run on them", pds[0].Name)
	}
	return best, nil
}

// Close frees the device and all its memory. It is idempotent. The
// device's containers are invalid afterwards.
//
// Containers still open are closed first, so their later calls see a
// closed container (ErrClosed where they return an error) and never touch
// freed memory; then all memory still allocated is freed. Nothing leaks,
// but Close then returns an error matching ErrOpenBlocks that says how
// much was still allocated, since a program that relies on it has
// probably forgotten a Close.
//
// Close must not overlap calls on the device's containers.
func (d *Device) Close() error {
	if d.closed.Load() {
		return nil
	}
	var open [numTiers]tierStats
	for t := range d.tiers {
		open[t] = d.stats(Tier(t))
	}
	owners := d.takeOwners()
	for _, f := range owners {
		f()
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Swap(true) {
		return nil
	}
	if d.vk != nil {
		d.drainStalls() // nothing is freed under work still running
	}
	var blocks int
	var bytes uint64
	for t := range d.tiers {
		ts := &d.tiers[t]
		ts.mu.Lock()
		// Blocks allocated after the snapshot (by a container's Close, say)
		// count too.
		blocks += max(open[t].Blocks, ts.blocks)
		bytes += max(open[t].InUse, ts.inUse)
		for _, c := range ts.chunks {
			if c != nil {
				d.releaseChunk(c)
			}
		}
		ts.chunks = nil
		ts.a = tlsf.New()
		d.heapReserved[ts.heap].Add(-ts.reserved)
		ts.blocks, ts.inUse, ts.reserved, ts.spare = 0, 0, 0, -1
		ts.traces = nil
		ts.mu.Unlock()
	}
	if d.vk != nil {
		d.vk.close()
	}
	if blocks > 0 || len(owners) > 0 {
		return &openBlocksError{blocks: blocks, bytes: bytes, owners: len(owners)}
	}
	return nil
}

// openBlocksError reports blocks that were still allocated at Close; they
// were freed. It matches ErrOpenBlocks.
type openBlocksError struct {
	blocks int
	bytes  uint64
	owners int
}

func (e *openBlocksError) Error() string {
	return fmt.Sprintf("vmem: Close: %d blocks (%s) still allocated, in %d open containers; all freed",
		e.blocks, human.Bytes(e.bytes), e.owners)
}
func (e *openBlocksError) Is(t error) bool { return t == ErrOpenBlocks }

// ErrOpenBlocks is returned (wrapped) by Device.Close when containers were
// still open; Close closed them and freed their memory, so nothing leaks,
// but a container was not closed first.
var ErrOpenBlocks = errors.New("vmem: blocks still allocated at Close")

// atClose registers f to run when the device is closed, before its memory
// is freed (kern.Device.AtClose says what for); cancel removes it. On a
// closed device f runs at once.
func (d *Device) atClose(f func()) (cancel func()) {
	d.ownMu.Lock()
	if d.closed.Load() {
		d.ownMu.Unlock()
		f()
		return func() {}
	}
	if d.owners == nil {
		d.owners = make(map[uint64]func())
	}
	d.ownNext++
	id := d.ownNext
	d.owners[id] = f
	d.ownMu.Unlock()
	return func() {
		d.ownMu.Lock()
		delete(d.owners, id)
		d.ownMu.Unlock()
	}
}

// takeOwners empties the AtClose registry and returns its functions in the
// order they were registered.
func (d *Device) takeOwners() []func() {
	d.ownMu.Lock()
	defer d.ownMu.Unlock()
	ids := make([]uint64, 0, len(d.owners))
	for id := range d.owners {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fs := make([]func(), 0, len(ids))
	for _, id := range ids {
		fs = append(fs, d.owners[id])
	}
	d.owners = nil
	return fs
}

// enter starts an operation: it fails after Close or device loss.
func (d *Device) enter() error {
	d.mu.RLock()
	if d.closed.Load() {
		d.mu.RUnlock()
		return ErrClosed
	}
	if d.lost.Load() {
		d.mu.RUnlock()
		return ErrDeviceLost
	}
	if d.stall.on.Load() {
		if err := d.settle(); err != nil {
			d.mu.RUnlock()
			return err
		}
	}
	return nil
}

func (d *Device) exit() { d.mu.RUnlock() }

// noteErr records device loss so every later call reports it.
func (d *Device) noteErr(err error) error {
	if errors.Is(err, ErrDeviceLost) {
		d.lost.Store(true)
	}
	return err
}

// timeoutNs is the GPU wait bound.
func (d *Device) timeoutNs() uint64 { return uint64(d.opts.Timeout / time.Nanosecond) }

// maxHeaps is Vulkan's VK_MAX_MEMORY_HEAPS.
const maxHeaps = 16

func roundUp(x, a uint64) uint64 { return (x + a - 1) &^ (a - 1) }
