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
)

// numTiers is the number of tiers: the arrays indexed by Tier (Options.Limits,
// Info.Tiers, SliceStats.TierBytes) have three elements.
const numTiers = 3

// A Tier converts to the block.Tier of the same kind and back.
func _() {
	var x [1]struct{}
	_ = x[int(block.Mapped)-int(Mapped)]
	_ = x[int(block.Private)-int(Private)]
	_ = x[int(block.Host)-int(Host)]
}

func (t Tier) String() string {
	if t < Mapped || t > Host {
		return fmt.Sprintf("Tier(%d)", int(t))
	}
	return block.Tier(t).String()
}

// Backend selects how memory is reached. It is the backend's name, so a
// flag or an environment variable converts to it directly
// (vmem.Backend("host")); Open also takes "vk" and "gpu" for Vulkan,
// "cpu" for the host, "" for auto, in any case, and refuses other names
// with an error.
type Backend string

const (
	// BackendAuto picks a GPU through Vulkan (discrete first), else the host
	// backend. Software Vulkan drivers (lavapipe) are skipped by Auto: they
	// are slower than host memory; ask for Vulkan to use them.
	BackendAuto Backend = "auto"
	// BackendVulkan requires a Vulkan device; Open fails with ErrNoDevice otherwise.
	BackendVulkan Backend = "vulkan"
	// BackendHost keeps every tier in off-heap system memory (anonymous mmap).
	BackendHost Backend = "host"
)

// parseBackend returns the backend b names.
func parseBackend(b Backend) (Backend, error) {
	switch strings.ToLower(strings.TrimSpace(string(b))) {
	case "", "auto":
		return BackendAuto, nil
	case "vulkan", "vk", "gpu":
		return BackendVulkan, nil
	case "host", "cpu":
		return BackendHost, nil
	}
	return BackendAuto, fmt.Errorf("vmem: unknown backend %q (want auto, vulkan or host): %w", string(b), ErrRange)
}

// envBackendVar is the environment variable that overrides Options.Backend.
const envBackendVar = "VMEM_BACKEND"

func envBackend() (Backend, bool, error) {
	s, ok := os.LookupEnv(envBackendVar)
	if !ok || s == "" {
		return BackendAuto, false, nil
	}
	b, err := parseBackend(Backend(s))
	return b, true, err
}
