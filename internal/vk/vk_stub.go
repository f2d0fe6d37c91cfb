//go:build !(cgo && linux)

package vk

import "errors"

// Available reports whether this build can use Vulkan at all.
const Available = false

var errNoCgo = errors.New("built without cgo (CGO_ENABLED=0) or not on Linux: Vulkan is not available")

// Load reports why Vulkan cannot be used in this build.
func Load() error { return errNoCgo }

// Instance is a VkInstance; this build cannot create one.
type Instance struct{}

func NewInstance() (*Instance, error)                  { return nil, errNoCgo }
func (i *Instance) Destroy()                           {}
func (i *Instance) Devices() ([]PhysicalDevice, error) { return nil, errNoCgo }
func (i *Instance) Budget(*PhysicalDevice) (budget, usage []uint64, ok bool) {
	return nil, nil, false
}
func (i *Instance) NewDevice(*PhysicalDevice, []string) (*Device, error) { return nil, errNoCgo }

// Device is a logical device; this build cannot create one.
type Device struct {
	TransferFamily, ComputeFamily int
	Kernels                       bool
}

const (
	QueueIndexTransfer  = 0
	QueueIndexCompute   = 1
	QueueIndexTransfer2 = 2
)

const (
	StageTransfer = 0x1000
	StageCompute  = 0x800
)

func (d *Device) HasQueue(int) bool     { return false }
func (d *Device) TransferOnly(int) bool { return false }

// Semaphore orders submissions; this build cannot create one.
type Semaphore struct{}

func (d *Device) NewSemaphore() (*Semaphore, error) { return nil, errNoCgo }
func (m *Semaphore) Destroy()                       {}

func (d *Device) Destroy()                                    {}
func (d *Device) Allocate(int, uint64, bool) (*Memory, error) { return nil, errNoCgo }
func (d *Device) Free(*Memory)                                {}
func (d *Device) NewStream(int) (*Stream, error)              { return nil, errNoCgo }

// Stream is a command buffer and fence; this build cannot create one.
type Stream struct{}

func (s *Stream) Destroy()   {}
func (s *Stream) Queue() int { return 0 }
func (s *Stream) SubmitWith([]Op, []byte, *Semaphore, uint32, *Semaphore) error {
	return errNoCgo
}
func (s *Stream) Submit([]Op, []byte) error      { return errNoCgo }
func (s *Stream) Wait(uint64) error              { return errNoCgo }
func (s *Stream) Done() (bool, error)            { return true, errNoCgo }
func (s *Stream) Run([]Op, []byte, uint64) error { return errNoCgo }

// Pipeline is a compute pipeline; this build cannot create one.
type Pipeline struct{ Push uint32 }

func (d *Device) NewPipeline([]byte, uint32, []uint32) (*Pipeline, error) { return nil, errNoCgo }
func (d *Device) DestroyPipeline(*Pipeline)                               {}
