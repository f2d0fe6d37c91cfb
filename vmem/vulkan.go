package vmem

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/govram/govram/internal/vk"
)

// stageSize is one staging buffer. Transfers larger than this are split
// and pipelined over laneDepth buffers: the GPU fills the next ones while
// the CPU drains one. A 16 MiB piece alone runs DMA below the link's
// speed (docs/physics.md); with two more in flight the copy engine never
// waits for a submit.
const (
	stageSize = 16 << 20
	laneDepth = 3
)

// maxLanes bounds concurrent staged transfers (and pinned staging memory:
// maxLanes * laneDepth * stageSize).
const maxLanes = 4

// vkState is the Vulkan side of a Device.
type vkState struct {
	inst *vk.Instance
	pd   vk.PhysicalDevice
	dev  *vk.Device

	mu     sync.Mutex
	cond   *sync.Cond
	idle   []*lane
	nlanes int
	stype  int // memory type for staging

	// cpuChunks lists the chunks the CPU addresses that DMA can also reach,
	// sorted by address, so a transfer whose host side already lies in one
	// needs no staging copy. Replaced whole on change (copy on write).
	cpuChunks atomic.Pointer[[]*chunk]
	idxMu     sync.Mutex

	kern kernState // compute kernels (kernel.go)
}

// lane is laneDepth streams with a staging buffer each.
type lane struct {
	s     [laneDepth]*vk.Stream
	stage [laneDepth]*vk.Memory
}

// sharedInst is the process's one VkInstance, made on first use and never
// destroyed: NVIDIA's driver (the version docs/physics.md names) refuses
// the 31st vkCreateInstance of a process with VK_ERROR_INCOMPATIBLE_DRIVER,
// even when every earlier instance was destroyed (internal/vk's
// TestInstanceLoop), so a process that opens and closes devices again and
// again (a service reconnecting, a test run) must not make one per device.
// Devices are still made and destroyed per Open.
var sharedInst struct {
	mu   sync.Mutex
	inst *vk.Instance
}

// instance returns the shared instance, making it if there is none yet (a
// failure is not kept: the next Open tries again).
func instance() (*vk.Instance, error) {
	sharedInst.mu.Lock()
	defer sharedInst.mu.Unlock()
	if sharedInst.inst == nil {
		inst, err := vk.NewInstance()
		if err != nil {
			return nil, err
		}
		sharedInst.inst = inst
	}
	return sharedInst.inst, nil
}

func openVulkan(o Options, auto bool) (*Device, error) {
	if err := vk.Load(); err != nil {
		return nil, noDevice("%v", err)
	}
	inst, err := instance()
	if err != nil {
		return nil, noDevice("%v", err)
	}
	pds, err := inst.Devices()
	if err != nil || len(pds) == 0 {
		if err == nil {
			return nil, noDevice("the Vulkan loader found no device (is a driver installed? mesa-vulkan-drivers gives a CPU one)")
		}
		return nil, noDevice("%v", err)
	}
	pd, err := pickDevice(pds, o.Device, auto)
	if err != nil {
		return nil, err
	}
	dev, err := inst.NewDevice(pd, []string{"VK_EXT_memory_budget"})
	if err != nil {
		return nil, noDevice("%s: %v", pd.Name, err)
	}
	if o.ChunkSize == 0 && pd.Type == vk.TypeCPU {
		// Software drivers fill memory at CPU speed: smaller chunks start faster.
		o.ChunkSize = 32 << 20
	}
	d := newDevice(BackendVulkan, o)
	v := &vkState{inst: inst, pd: *pd, dev: dev}
	v.cond = sync.NewCond(&v.mu)
	v.cpuChunks.Store(new([]*chunk))
	d.vk = v

	maxAlloc := pd.MaxAllocation
	if maxAlloc == 0 {
		maxAlloc = 1 << 30
	}
	choose := func(t Tier, typ int) {
		ts := &d.tiers[t]
		if typ < 0 {
			return
		}
		ts.available = true
		ts.memType = typ
		ts.heap = pd.MemoryTypes[typ].Heap
		ts.capacity = pd.Heaps[ts.heap].Size
		ts.maxChunk = maxAlloc
	}
	const dl, hv, hc, cached = vk.DeviceLocal, vk.HostVisible, vk.HostCoherent, vk.HostCached
	choose(Mapped, pickType(pd, dl|hv|hc, 0, 0))
	priv := pickType(pd, dl, hv, 0)
	if priv < 0 {
		// No VRAM reserved to the GPU (integrated or software devices): the
		// private tier uses device-local memory that is merely left unmapped.
		priv = pickType(pd, dl, 0, 0)
	}
	choose(Private, priv)
	host := pickType(pd, hv|hc, dl, cached)
	if host < 0 {
		host = pickType(pd, hv|hc, 0, cached)
	}
	choose(Host, host)
	v.stype = host
	if host < 0 {
		v.stype = d.tiers[Mapped].memType
	}
	if v.stype < 0 {
		d.Close()
		return nil, noDevice("%s has no host-visible coherent memory", pd.Name)
	}

	drv := pd.DriverName
	if pd.DriverInfo != "" {
		drv += " " + pd.DriverInfo
	}
	if drv == "" {
		drv = fmt.Sprintf("version %#x", pd.DriverVersion)
	}
	q := fmt.Sprintf("compute queue (family %d)", dev.ComputeFamily)
	if dev.TransferFamily != dev.ComputeFamily {
		q = fmt.Sprintf("dedicated copy queue (family %d)", dev.TransferFamily)
	}
	d.info = Info{Backend: BackendVulkan, Name: pd.Name, Type: pd.Type.String(), Driver: drv,
		APIVersion: pd.APIString(), TransferQueue: q}
	return d, nil
}

// pickType returns the memory type that has all of want, none of avoid,
// preferring prefer and then the largest heap; -1 if none.
func pickType(pd *vk.PhysicalDevice, want, avoid, prefer uint32) int {
	best := -1
	score := func(i int) (int, uint64) {
		p := 0
		if pd.MemoryTypes[i].Flags&prefer == prefer {
			p = 1
		}
		return p, pd.Heaps[pd.MemoryTypes[i].Heap].Size
	}
	for i, mt := range pd.MemoryTypes {
		if mt.Flags&want != want || mt.Flags&avoid != 0 {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		p, h := score(i)
		bp, bh := score(best)
		if p > bp || (p == bp && h > bh) {
			best = i
		}
	}
	return best
}

func (v *vkState) close() {
	v.mu.Lock()
	for _, l := range v.idle {
		v.destroyLane(l)
	}
	v.idle = nil
	v.mu.Unlock()
	v.kern.close(v.dev)
	v.dev.Destroy()
	// The instance is the process's (instance) and stays.
}

func (v *vkState) destroyLane(l *lane) {
	for k := range laneDepth {
		if l.s[k] != nil {
			l.s[k].Destroy()
		}
		if l.stage[k] != nil {
			v.dev.Free(l.stage[k])
		}
	}
}

// getLane takes an idle lane, making one if fewer than maxLanes exist.
func (v *vkState) getLane() (*lane, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for {
		if n := len(v.idle); n > 0 {
			l := v.idle[n-1]
			v.idle = v.idle[:n-1]
			return l, nil
		}
		if v.nlanes < maxLanes {
			break
		}
		v.cond.Wait()
	}
	v.nlanes++
	v.mu.Unlock()
	l, err := v.newLane()
	v.mu.Lock()
	if err != nil {
		v.nlanes--
		return nil, wrapVk(err)
	}
	return l, nil
}

func (v *vkState) newLane() (*lane, error) {
	l := &lane{}
	for k := range laneDepth {
		s, err := v.dev.NewStream(vk.QueueIndexTransfer)
		if err != nil {
			v.destroyLane(l)
			return nil, err
		}
		l.s[k] = s
		m, err := v.dev.Allocate(v.stype, stageSize, true)
		if err != nil {
			v.destroyLane(l)
			return nil, err
		}
		l.stage[k] = m
	}
	return l, nil
}

func (v *vkState) putLane(l *lane) {
	v.mu.Lock()
	v.idle = append(v.idle, l)
	v.mu.Unlock()
	v.cond.Signal()
}

// run submits ops on one stream and waits.
func (d *Device) run(ops []vk.Op, data []byte) error {
	if err := d.faults.submit(); err != nil {
		return d.noteErr(err)
	}
	l, err := d.vk.getLane()
	if err != nil {
		return d.noteErr(err)
	}
	var volume uint64
	for _, o := range ops {
		volume = satAdd(volume, o.Size)
	}
	err = l.s[0].Run(ops, data, d.waitNs(volume))
	if isTimeout(err) {
		d.park([]*vk.Stream{l.s[0]}, func() { d.vk.putLane(l) })
	} else {
		d.vk.putLane(l)
	}
	return d.gpuErr(err, volume)
}

// gpuErr converts a stream error. A wait that times out is ErrTimeout, not
// a lost device: the work may only be slow (see stall.go).
func (d *Device) gpuErr(err error, volume uint64) error {
	if err == nil {
		return nil
	}
	if ce, ok := err.(*vk.CallError); ok && ce.Result == vk.Timeout {
		return fmt.Errorf("%w: %s: no answer within %v", ErrTimeout, ce.Call, d.waitBound(volume))
	}
	return d.noteErr(wrapVk(err))
}

// staged moves n bytes through a lane's staging buffers in pieces, two in
// flight. For a read, each piece is copied by the GPU into staging (gpu)
// and then out by the CPU (cpu); for a write the other way round.
func (d *Device) staged(n uint64, read bool, gpu func(piece, k int, off, size uint64) vk.Op, cpu func(stage unsafe.Pointer, off, size uint64)) error {
	if err := d.faults.submit(); err != nil {
		return d.noteErr(err)
	}
	l, err := d.vk.getLane()
	if err != nil {
		return d.noteErr(err)
	}
	pieces := int((n + stageSize - 1) / stageSize)
	var pending [laneDepth]bool
	var firstErr error
	var stuck []*vk.Stream // waits that timed out: their work still runs
	wait := func(k int) {
		if pending[k] {
			pending[k] = false
			err := l.s[k].Wait(d.waitNs(stageSize))
			if isTimeout(err) {
				stuck = append(stuck, l.s[k])
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	submit := func(i int) {
		k := i % laneDepth
		off := uint64(i) * stageSize
		size := min(stageSize, n-off)
		if !read {
			cpu(l.stage[k].Ptr, off, size)
		}
		op := gpu(i, k, off, size)
		op.Kind = vk.OpCopy
		if read {
			op.Dst, op.DstOff = l.stage[k], 0
		} else {
			op.Src, op.SrcOff = l.stage[k], 0
		}
		if err := l.s[k].Submit([]vk.Op{op}, nil); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		pending[k] = true
	}
	if read {
		for i := 0; i < min(laneDepth, pieces) && firstErr == nil; i++ {
			submit(i)
		}
		for i := 0; i < pieces && firstErr == nil; i++ {
			k := i % laneDepth
			wait(k)
			if firstErr != nil {
				break
			}
			off := uint64(i) * stageSize
			cpu(l.stage[k].Ptr, off, min(stageSize, n-off))
			if i+laneDepth < pieces {
				submit(i + laneDepth)
			}
		}
	} else {
		for i := 0; i < pieces && firstErr == nil; i++ {
			wait(i % laneDepth)
			if firstErr == nil {
				submit(i)
			}
		}
	}
	for k := range laneDepth {
		wait(k)
	}
	if len(stuck) > 0 {
		d.park(stuck, func() { d.vk.putLane(l) })
	} else {
		d.vk.putLane(l)
	}
	return d.gpuErr(firstErr, stageSize)
}

// registerCPU and unregisterCPU keep cpuChunks in step with chunk life.
func (v *vkState) registerCPU(c *chunk) {
	v.idxMu.Lock()
	defer v.idxMu.Unlock()
	old := *v.cpuChunks.Load()
	n := append(append(make([]*chunk, 0, len(old)+1), old...), c)
	sort.Slice(n, func(i, j int) bool { return uintptr(n[i].Ptr) < uintptr(n[j].Ptr) })
	v.cpuChunks.Store(&n)
}

func (v *vkState) unregisterCPU(c *chunk) {
	v.idxMu.Lock()
	defer v.idxMu.Unlock()
	old := *v.cpuChunks.Load()
	n := make([]*chunk, 0, len(old))
	for _, x := range old {
		if x != c {
			n = append(n, x)
		}
	}
	v.cpuChunks.Store(&n)
}

// chunkOf finds the chunk holding [p, p+n), if the CPU memory at p is one
// of this device's DMA-reachable chunks.
func (v *vkState) chunkOf(p unsafe.Pointer, n uint64) (*chunk, uint64) {
	cs := *v.cpuChunks.Load()
	a := uintptr(p)
	i := sort.Search(len(cs), func(i int) bool { return uintptr(cs[i].Ptr) > a }) - 1
	if i < 0 {
		return nil, 0
	}
	c := cs[i]
	off := uint64(a - uintptr(c.Ptr))
	if off+n > c.Size {
		return nil, 0
	}
	return c, off
}
