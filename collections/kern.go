package collections

import (
	"embed"

	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/vmem"
)

// kdev returns d's plumbing (internal/kern): kernel batches, close hooks,
// block addresses, fault injection for tests.
func kdev(d *vmem.Device) kern.Device { return kern.Of(d) }

// shaderFS holds the containers' compute kernels, compiled from
// internal/shaders/*.comp (go generate ./collections/internal/shaders; CI
// checks them).
//
//go:embed internal/shaders/*.spv
var shaderFS embed.FS

// newKernel declares the kernel internal/shaders/<name>.spv with push struct push.
func newKernel(name string, push any) *kern.Kernel {
	code, err := shaderFS.ReadFile("internal/shaders/" + name + ".spv")
	if err != nil {
		panic("collections: kernel " + name + ": " + err.Error()) // a broken build
	}
	return kern.NewKernel(name, code, push)
}
