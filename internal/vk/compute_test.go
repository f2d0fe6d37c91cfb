//go:build cgo && linux

package vk

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/govram/govram/internal/shaders"
)

// TestDispatch runs the fill kernel through a pipeline, device addresses
// and push constants, with an inline update and barriers around it.
func TestDispatch(t *testing.T) {
	inst, pds := testDevices(t)
	pd := &pds[0]
	t.Logf("%s: %+v", pd.Name, pd.Compute)
	d, err := inst.NewDevice(pd, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Destroy()
	if !d.Kernels {
		t.Skip("no kernels on this device")
	}
	typ := -1
	for i, mt := range pd.MemoryTypes {
		if mt.Flags&(HostVisible|HostCoherent) == HostVisible|HostCoherent {
			typ = i
			break
		}
	}
	m, err := d.Allocate(typ, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(m)
	if m.Addr == 0 {
		t.Fatal("no device address")
	}
	code, err := shaders.FS.ReadFile("fill.spv")
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.NewPipeline(code, 16, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyPipeline(p)
	s, err := d.NewStream(QueueIndexCompute)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()

	// Fill 4096 bytes at 256 with a 48-byte pattern: the pattern goes in
	// by an inline update, the kernel replicates it.
	pattern := make([]byte, 48)
	for i := range pattern {
		pattern[i] = byte(i + 1)
	}
	push := make([]byte, 16)
	binary.LittleEndian.PutUint64(push, m.Addr+256)
	binary.LittleEndian.PutUint32(push[8:], 4096/16)
	binary.LittleEndian.PutUint32(push[12:], 48/16)
	data := append(append([]byte{}, pattern...), push...)
	b := unsafe.Slice((*byte)(m.Ptr), m.Size)
	clear(b)
	ops := []Op{
		{Kind: OpUpdate, Dst: m, DstOff: 256, Size: 48, DataOff: 0},
		{Kind: OpBarrier},
		{Kind: OpDispatch, Pipeline: p, Groups: [3]uint32{2, 1, 1}, DataOff: 48, Size: 16},
	}
	if err := s.Run(ops, data, 5e9); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4096; i++ {
		if b[256+i] != byte(i%48+1) {
			t.Fatalf("byte %d is %d, want %d", i, b[256+i], i%48+1)
		}
	}
	if b[255] != 0 || b[256+4096] != 0 {
		t.Fatal("fill wrote outside its range")
	}
	if err := s.Run([]Op{{Kind: OpDispatch, Groups: [3]uint32{1, 1, 1}}}, nil, 5e9); err == nil {
		t.Fatal("a dispatch without a pipeline was accepted")
	}
}
