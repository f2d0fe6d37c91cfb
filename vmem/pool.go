package vmem

// Pool: several devices used as one.
//
// A machine with eight large GPUs has over a terabyte of VRAM, but each
// GPU is its own Vulkan device with its own memory, copy engine and compute
// queues: nothing is shared, and no device can address another's memory
// through govram. A Pool is simply the list of those Devices, opened
// together; the containers made on it (a Slice here, a Map or a BTree in
// package collections) keep one single-device container per device and
// route every element to exactly one of them. Work that touches several
// devices (bulk copies, gathers,
// batch lookups) runs one goroutine per device, so each GPU's DMA engine
// and kernels work at the same time.
//
// Each device keeps its own tiers: the mapped tier of GPU 0 is not the
// mapped tier of GPU 1, and a container's part on a device spills from
// mapped into private VRAM on that device exactly as a single-device
// container does. Info is therefore per device
// (Devices()[i].Info()).

import (
	"errors"
	"fmt"
	"github.com/govram/govram/internal/kern"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/govram/govram/internal/par"
	"github.com/govram/govram/internal/vk"
)

// Placement says how a Slice made on a Pool spreads its elements over the
// pool's devices (WithPlacement). It is the placement's name.
type Placement string

const (
	// Stripe spreads elements evenly: consecutive runs (stripes) of elements
	// go to the devices in turn, so every device holds about the same share
	// and bulk operations keep every GPU busy. It is the default. A striped
	// container can grow only while every device has room for its share.
	Stripe Placement = "stripe"
	// FillFirst fills device 0 (its mapped tier, then its private tier),
	// then device 1, and so on: the most capacity, and a small container
	// stays on one GPU, but bulk work on a range usually touches one device.
	FillFirst Placement = "fill-first"
)

// poolMaxDevices bounds a pool: batch operations record a device number in
// one byte per element.
const poolMaxDevices = 256

// Pool is a set of devices used together: every GPU of the machine, or
// those Options.Device names (OpenAll). Containers made on a pool spread
// their elements over its devices (see WithPlacement). All methods are safe
// for concurrent use. A Pool must be closed; a pool from OpenAll closes its
// devices then.
type Pool struct {
	devs      []*Device
	owned     bool        // Close closes the devices (OpenAll)
	fillFirst atomic.Bool // Slices made without WithPlacement fill first (tests set it)
	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool
}

// OpenAll opens every GPU of the machine, each as its own Device with the
// options o, and returns them as a pool in the driver's order.
//
// Which devices: with o.Device empty, every Vulkan device of the best kind
// present (all discrete GPUs if there is one, else all integrated ones,
// and so on); software devices (lavapipe) only with BackendVulkan and when
// there is nothing else. o.Device (or VMEM_DEVICE, which overrides it)
// selects devices by a comma-separated list of indices in the driver's
// order or of name substrings ("0,1", "H200"), so VMEM_DEVICE=0 turns a pool
// program into a one-GPU program without a code change.
//
// Where there is no usable GPU, BackendAuto falls back to a pool of one host
// device, whose Info().Fallback says why, as Open does; BackendVulkan fails
// with an error matching ErrNoDevice. BackendHost (or VMEM_BACKEND=host)
// gives a pool of one host device. If one of the chosen GPUs fails to open,
// OpenAll closes the others and fails (BackendVulkan) or falls back
// (BackendAuto), rather than returning a pool smaller than asked for.
func OpenAll(o Options) (*Pool, error) {
	o, b, err := resolveOptions(o)
	if err != nil {
		return nil, err
	}
	var fallback string
	if b == BackendAuto || b == BackendVulkan {
		devs, err := poolOpenVulkan(o, b == BackendAuto)
		if err == nil {
			return &Pool{devs: devs, owned: true}, nil
		}
		if b == BackendVulkan {
			return nil, err
		}
		fallback = err.Error()
	}
	o.Backend = BackendHost
	d := openHost(o)
	d.info.Fallback = fallback
	return &Pool{devs: []*Device{d}, owned: true}, nil
}

// poolOpenVulkan opens the selected Vulkan devices, in parallel: each open
// creates an instance and a logical device, and the drivers of separate
// GPUs do not wait for each other.
func poolOpenVulkan(o Options, auto bool) ([]*Device, error) {
	pds, err := poolPhysicalDevices()
	if err != nil {
		return nil, err
	}
	idx, err := poolSelect(pds, o.Device, auto)
	if err != nil {
		return nil, err
	}
	devs := make([]*Device, len(idx))
	errs := make([]error, len(idx))
	par.Go(len(idx), func(k int) {
		oi := o
		oi.Backend = BackendVulkan
		oi.Device = strconv.Itoa(idx[k])
		devs[k], errs[k] = openVulkan(oi, false)
	})
	if err := errors.Join(errs...); err != nil {
		for _, d := range devs {
			if d != nil {
				d.Close()
			}
		}
		return nil, err
	}
	return devs, nil
}

// poolPhysicalDevices lists the machine's Vulkan devices in the driver's
// order (the order Options.Device indexes).
func poolPhysicalDevices() ([]vk.PhysicalDevice, error) {
	if err := vk.Load(); err != nil {
		return nil, noDevice("%v", err)
	}
	inst, err := instance()
	if err != nil {
		return nil, noDevice("%v", err)
	}
	pds, err := inst.Devices()
	if err != nil {
		return nil, noDevice("%v", err)
	}
	if len(pds) == 0 {
		return nil, noDevice("the Vulkan loader found no device (is a driver installed? mesa-vulkan-drivers gives a CPU one)")
	}
	return pds, nil
}

// poolSelect returns the indices of the devices OpenAll opens (see its
// comment), in the driver's order, without repeats.
func poolSelect(pds []vk.PhysicalDevice, sel string, auto bool) ([]int, error) {
	if strings.TrimSpace(sel) != "" {
		var idx []int
		add := func(i int) {
			if !slices.Contains(idx, i) {
				idx = append(idx, i)
			}
		}
		for _, s := range strings.Split(sel, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if i, err := strconv.Atoi(s); err == nil {
				if i < 0 || i >= len(pds) {
					return nil, noDevice("device index %d out of range (%d devices)", i, len(pds))
				}
				add(i)
				continue
			}
			n := len(idx)
			for i := range pds {
				if strings.Contains(strings.ToLower(pds[i].Name), strings.ToLower(s)) {
					add(i)
				}
			}
			if len(idx) == n {
				return nil, noDevice("no Vulkan device matches %q", s)
			}
		}
		if len(idx) > poolMaxDevices {
			return nil, noDevice("%d devices selected; a pool holds at most %d", len(idx), poolMaxDevices)
		}
		return idx, nil
	}
	rank := map[vk.DeviceType]int{vk.TypeDiscrete: 0, vk.TypeIntegrated: 1, vk.TypeVirtual: 2, vk.TypeOther: 3, vk.TypeCPU: 4}
	best := -1
	for i := range pds {
		r := rank[pds[i].Type]
		if auto && pds[i].Type == vk.TypeCPU {
			continue // slower than the host backend, as for Open
		}
		if best < 0 || r < best {
			best = r
		}
	}
	if best < 0 {
		return nil, noDevice("only software Vulkan devices (%s); use BackendVulkan to run on them", pds[0].Name)
	}
	var idx []int
	for i := range pds {
		if rank[pds[i].Type] == best && len(idx) < poolMaxDevices {
			idx = append(idx, i)
		}
	}
	return idx, nil
}

// newPool makes a pool of devices the caller opened (and keeps closing):
// Close of the pool leaves them open. The devices must be distinct and
// open; there may be 1 to 256 of them.
//
// Tests use it (internal/kern) to simulate several GPUs: several
// host devices, or one Vulkan device (lavapipe) opened twice as two
// logical devices. Such a pool exercises every code path of the pool
// containers (routing, spilling, fan-out, errors), but its devices share
// one memory and one processor, so it says nothing about the speed of
// several GPUs.
func newPool(devs ...*Device) (*Pool, error) {
	if len(devs) == 0 {
		return nil, fmt.Errorf("vmem: NewPool: no devices: %w", ErrNoDevice)
	}
	if len(devs) > poolMaxDevices {
		return nil, fmt.Errorf("vmem: NewPool: %d devices; a pool holds at most %d", len(devs), poolMaxDevices)
	}
	for i, d := range devs {
		if d == nil {
			return nil, fmt.Errorf("vmem: NewPool: device %d is nil: %w", i, ErrNoDevice)
		}
		if d.closed.Load() {
			return nil, fmt.Errorf("vmem: NewPool: device %d: %w", i, ErrClosed)
		}
		if slices.Index(devs, d) != i {
			return nil, fmt.Errorf("vmem: NewPool: device %d is also device %d", i, slices.Index(devs, d))
		}
	}
	return &Pool{devs: slices.Clone(devs)}, nil
}

// Devices returns the pool's devices, in the driver's order for a pool
// from OpenAll: each one's Info and Err are that GPU's.
func (p *Pool) Devices() []*Device { return slices.Clone(p.devs) }

// len returns the number of devices.
func (p *Pool) len() int { return len(p.devs) }

// stats returns the tier's counters summed over the devices (LargestFree
// is the largest on any one device: no block spans devices).
func (p *Pool) stats(t Tier) tierStats {
	var sum tierStats
	for _, d := range p.devs {
		s := d.stats(t)
		sum.Reserved += s.Reserved
		sum.InUse += s.InUse
		sum.Blocks += s.Blocks
		sum.Chunks += s.Chunks
		sum.LargestFree = max(sum.LargestFree, s.LargestFree)
	}
	return sum
}

// Err returns ErrClosed after Close, else the first device's error
// (ErrClosed, ErrDeviceLost), nil if every device is usable.
func (p *Pool) Err() error {
	if p.closed.Load() {
		return ErrClosed
	}
	for _, d := range p.devs {
		if err := d.Err(); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the devices of a pool from OpenAll (each Device.Close: the
// containers still open on them are closed first). A pool of devices the
// caller opened (tests make one to simulate several GPUs) leaves them to
// its caller. Close is idempotent; containers made on
// the pool are invalid after their devices close.
func (p *Pool) Close() error {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		if !p.owned {
			return
		}
		errs := make([]error, len(p.devs))
		for i, d := range p.devs {
			if err := d.Close(); err != nil {
				errs[i] = fmt.Errorf("device %d: %w", i, err)
			}
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// usable is the check of pool constructors.
func (p *Pool) usable() error {
	if p == nil {
		return fmt.Errorf("vmem: nil pool: %w", ErrNoDevice)
	}
	if p.closed.Load() {
		return ErrClosed
	}
	return nil
}

func init() {
	kern.NewPool = func(devs []any) (any, error) {
		ds := make([]*Device, len(devs))
		for i, d := range devs {
			ds[i], _ = d.(*Device)
		}
		return newPool(ds...)
	}
}
