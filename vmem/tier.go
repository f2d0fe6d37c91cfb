package vmem

import (
	"fmt"
	"os"
	"strings"

	"github.com/govram/govram/internal/block"
)

// Tier names a kind of memory.
type Tier int

const (
	// Mapped is VRAM the CPU can load and store (DEVICE_LOCAL|HOST_VISIBLE).
	// Loads are slow unless they are whole-line streaming loads; stores are
	// fast when sequential or batched and sorted.
	Mapped Tier = iota
	// Private is VRAM reached only by DMA and kernels (DEVICE_LOCAL). Where
	// the driver caps the mapped tier (docs/physics.md), it holds the VRAM
	// beyond the cap.
	Private
	// Host is system memory outside the Go heap. On the Vulkan backend it is
	// pinned memory the GPU can reach, so DMA to and from it needs no staging.
	Host
	// NumTiers is the number of tiers.
	NumTiers = 3
)

// A Tier converts to the block.Tier of the same kind and back.
func _() {
	var x [1]struct{}
	_ = x[int(block.Mapped)-int(Mapped)]
	_ = x[int(block.Private)-int(Private)]
	_ = x[int(block.Host)-int(Host)]
}

func (t Tier) String() string {
	switch t {
	case Mapped:
		return "mapped"
	case Private:
		return "private"
	case Host:
		return "host"
	}
	return fmt.Sprintf("Tier(%d)", int(t))
}

// Backend selects how memory is reached.
type Backend int

const (
	// BackendAuto picks a GPU through Vulkan (discrete first), else the host
	// backend. Software Vulkan drivers (lavapipe) are skipped by Auto: they
	// are slower than host memory; ask for Vulkan to use them.
	BackendAuto Backend = iota
	// BackendVulkan requires a Vulkan device; Open fails with ErrNoDevice otherwise.
	BackendVulkan
	// BackendHost keeps every tier in off-heap system memory (anonymous mmap).
	BackendHost
)

func (b Backend) String() string {
	switch b {
	case BackendAuto:
		return "auto"
	case BackendVulkan:
		return "vulkan"
	case BackendHost:
		return "host"
	}
	return fmt.Sprintf("Backend(%d)", int(b))
}

// ParseBackend reads "auto", "vulkan" or "host".
func ParseBackend(s string) (Backend, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return BackendAuto, nil
	case "vulkan", "vk", "gpu":
		return BackendVulkan, nil
	case "host", "cpu":
		return BackendHost, nil
	}
	return BackendAuto, fmt.Errorf("vmem: unknown backend %q (want auto, vulkan or host)", s)
}

// envBackendVar is the environment variable that overrides Options.Backend.
const envBackendVar = "VMEM_BACKEND"

func envBackend() (Backend, bool, error) {
	s, ok := os.LookupEnv(envBackendVar)
	if !ok || s == "" {
		return BackendAuto, false, nil
	}
	b, err := ParseBackend(s)
	return b, true, err
}
