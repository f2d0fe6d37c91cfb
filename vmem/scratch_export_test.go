package vmem

import "github.com/govram/govram/internal/vk"

// Test hooks for the kernels' kept scratch (kernel.go).

// ScratchCycle takes scratch buffers of the sizes given (device-local or
// host-visible), then gives them all back, as kernel operations do.
func ScratchCycle(d *Device, device bool, sizes ...uint64) error {
	kind := kernScratchHost
	if device {
		kind = kernScratchDevice
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	var ms []*vk.Memory
	defer func() {
		for _, m := range ms {
			d.kernPutScratch(kind, m)
		}
	}()
	for _, sz := range sizes {
		m, err := d.kernTakeScratch(kind, sz)
		if err != nil {
			return err
		}
		ms = append(ms, m)
	}
	return nil
}

// ScratchKept returns the sizes of the kept scratch buffers of each kind
// and of the kept large device buffer (0: none).
func ScratchKept(d *Device) (host, device []uint64, big uint64) {
	k := &d.vk.kern
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, m := range k.scratch[kernScratchHost] {
		host = append(host, m.Size)
	}
	for _, m := range k.scratch[kernScratchDevice] {
		device = append(device, m.Size)
	}
	if k.big != nil {
		big = k.big.Size
	}
	return host, device, big
}
