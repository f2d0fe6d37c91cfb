package collections

import (
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

// FuzzRing decodes the input into a ring (element type, capacity, policy,
// tiny segments and staging or not) and a list of operations, and runs them
// on the ring and on the slice model side by side, on every backend.
//
// Byte 0: type (low 4 bits), policy (bit 4), tiny options (bit 5);
// byte 1: capacity - 1 (mod 48); then two bytes per operation: which, and
// its size.
func FuzzRing(f *testing.F) {
	f.Add([]byte{2, 7, 10, 3, 35, 9, 50, 2, 80, 4, 91, 0, 31, 20})
	f.Add([]byte{0x13, 4, 35, 200, 40, 17, 75, 9, 75, 30, 92, 0, 5, 0, 5, 0, 35, 3})
	f.Add([]byte{0x27, 16, 0, 0, 0, 0, 35, 60, 72, 40, 60, 0, 93, 0, 96, 0, 0, 0})
	f.Add([]byte{0x3a, 0, 35, 5, 35, 5, 55, 0, 80, 2, 99, 0})
	f.Add([]byte{0x09, 47, 40, 140, 40, 141, 80, 100, 33, 0, 95, 0})
	devs := []*vmem.Device{vmemtest.Open(f, vmem.BackendHost, vmem.Options{})}
	if d, err := vmem.Open(vmem.Options{Backend: vmem.BackendVulkan}); err == nil {
		f.Cleanup(func() { d.Close() })
		devs = append(devs, d)
	} else if vmemtest.RequireVulkan() {
		f.Fatalf("no Vulkan device: %v", err)
	}
	cases := ringTypeCases()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		tc := cases[int(data[0]&15)%len(cases)]
		cfg := ringDiffConfig{capacity: 1 + int(data[1])%48, policy: ringPolicy(data[0] >> 4 & 1)}
		if data[0]>>5&1 == 1 {
			cfg.opts = ringTinyOpts()
		}
		for _, d := range devs {
			ops := data[2:]
			cfg.dev = d
			cfg.src = func() (int, int, bool) {
				if len(ops) < 2 {
					return 0, 0, false
				}
				k, arg := int(ops[0])%100, int(ops[1])
				ops = ops[2:]
				return k, arg, true
			}
			tc.run(t, cfg)
			vmemtest.CheckNoLeaks(t, d)
		}
	})
}
