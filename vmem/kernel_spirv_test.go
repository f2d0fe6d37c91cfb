package vmem

import (
	"testing"
)

// TestKernelPushLayouts checks every kernel's Go push struct against the
// push-constant block of its SPIR-V: the same members (by name) at the same
// offsets, and no more bytes than the pipeline layout declares. (Kernels
// declared by other packages with NewKernel are checked when their
// pipeline is first built.)
func TestKernelPushLayouts(t *testing.T) {
	for _, k := range kernList {
		code, err := k.spirv()
		if err != nil {
			t.Fatal(err)
		}
		if err := kernCheckPush(k.name, k.pushType, k.push, code); err != nil {
			t.Error(err)
		}
	}
}
