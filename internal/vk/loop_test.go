//go:build cgo && linux

package vk

import (
	"os"
	"strconv"
	"testing"
)

// TestInstanceLoop creates and destroys instances (VK_LOOP=N, mode
// VK_LOOP_MODE: inst, devices, device) to find which object a process
// cannot create and destroy without end on a driver.
func TestInstanceLoop(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("VK_LOOP"))
	if n <= 0 {
		t.Skip("set VK_LOOP=N")
	}
	mode := os.Getenv("VK_LOOP_MODE")
	for i := range n {
		inst, err := NewInstance()
		if err != nil {
			t.Fatalf("%s: instance %d: %v", mode, i, err)
		}
		if mode != "inst" {
			pds, err := inst.Devices()
			if err != nil || len(pds) == 0 {
				t.Fatalf("%s: devices %d: %v", mode, i, err)
			}
			if mode == "device" {
				d, err := inst.NewDevice(&pds[0], []string{"VK_EXT_memory_budget"})
				if err != nil {
					t.Fatalf("%s: device %d: %v", mode, i, err)
				}
				d.Destroy()
			}
		}
		inst.Destroy()
	}
	t.Logf("%s: %d fine", mode, n)
}
