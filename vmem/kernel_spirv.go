package vmem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
)

// spirvMember is one member of a push-constant block.
type spirvMember struct {
	name         string
	offset, size uint32
}

// spirvPushBlock returns the members of a SPIR-V module's push-constant
// block, in order (none when the module has no block).
func spirvPushBlock(code []byte) ([]spirvMember, error) {
	if len(code)%4 != 0 || len(code) < 20 || binary.LittleEndian.Uint32(code) != 0x07230203 {
		return nil, errors.New("not a SPIR-V module")
	}
	words := make([]uint32, len(code)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(code[4*i:])
	}
	const (
		opTypeInt, opTypeFloat, opTypeStruct, opTypePointer = 21, 22, 30, 32
		opVariable, opMemberDecorate, opMemberName          = 59, 72, 6
		decOffset, storagePushConstant                      = 35, 9
	)
	scalar := map[uint32]uint32{} // type id -> bytes
	structs := map[uint32][]uint32{}
	pointee := map[uint32]uint32{}
	offsets := map[[2]uint32]uint32{}
	names := map[[2]uint32]string{}
	var blockPtr uint32
	for i := 5; i < len(words); {
		n, op := words[i]>>16, words[i]&0xffff
		if n == 0 || i+int(n) > len(words) {
			return nil, errors.New("malformed SPIR-V")
		}
		w := words[i : i+int(n)]
		switch op {
		case opTypeInt, opTypeFloat:
			scalar[w[1]] = w[2] / 8
		case opTypeStruct:
			structs[w[1]] = append([]uint32(nil), w[2:]...)
		case opTypePointer:
			if w[2] == storagePushConstant {
				pointee[w[1]] = w[3]
			}
		case opVariable:
			if w[3] == storagePushConstant {
				blockPtr = w[1]
			}
		case opMemberName:
			b := make([]byte, 0, 4*len(w[3:]))
			for _, x := range w[3:] {
				b = binary.LittleEndian.AppendUint32(b, x)
			}
			for k, c := range b {
				if c == 0 {
					b = b[:k]
					break
				}
			}
			names[[2]uint32{w[1], w[2]}] = string(b)
		case opMemberDecorate:
			if w[3] == decOffset {
				offsets[[2]uint32{w[1], w[2]}] = w[4]
			}
		}
		i += int(n)
	}
	st, ok := pointee[blockPtr]
	if blockPtr == 0 || !ok {
		return nil, nil
	}
	var out []spirvMember
	for m, typ := range structs[st] {
		size, ok := scalar[typ]
		if !ok {
			return nil, fmt.Errorf("push-constant member %d is not a scalar", m)
		}
		key := [2]uint32{st, uint32(m)}
		out = append(out, spirvMember{names[key], offsets[key], size})
	}
	return out, nil
}

// kernCheckPush compares a kernel's Go push struct with the push-constant
// block of its SPIR-V: the same members (by name) at the same offsets, and
// no more bytes than the pipeline layout declares.
func kernCheckPush(name string, pt reflect.Type, push uint32, code []byte) error {
	block, err := spirvPushBlock(code)
	if err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	var fields []spirvMember
	for i := range pt.NumField() {
		f := pt.Field(i)
		if f.Name != "_" {
			fields = append(fields, spirvMember{f.Name, uint32(f.Offset), uint32(f.Type.Size())})
		}
	}
	if len(block) != len(fields) {
		return fmt.Errorf("%s: the shader has %d push constants, %s has %d fields", name, len(block), pt, len(fields))
	}
	for i := range block {
		if block[i] != fields[i] {
			return fmt.Errorf("%s: push constant %d is %+v in the shader, %+v in %s", name, i, block[i], fields[i], pt)
		}
	}
	if len(block) > 0 {
		if last := block[len(block)-1]; last.offset+last.size > push {
			return fmt.Errorf("%s: the block ends at %d, past the %d bytes pushed", name, last.offset+last.size, push)
		}
	}
	return nil
}
