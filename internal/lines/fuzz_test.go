package lines

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/govram/govram/internal/buildconst"
)

// FuzzBatcher decodes the input into a batch size and a list of
// operations, runs them on a batcher over a small region and on a plain
// byte slice side by side, and compares every read and every flush.
func FuzzBatcher(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 8, 3, 1, 0, 8, 4, 0, 0, 0})
	f.Add([]byte{3, 5, 0, 0, 64, 1, 70, 0, 140, 2, 9, 0, 0, 3, 0, 0, 139, 4, 0, 0, 0})
	f.Add([]byte{7, 0, 0, 8, 200, 0, 0, 0, 10, 2, 60, 0, 0, 3, 250, 7, 30})
	f.Add([]byte{1, 5, 0, 0, 0, 5, 64, 0, 0, 5, 128, 0, 0, 5, 192, 0, 0, 3, 0, 0, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		maxLines := 1 + int(data[0]%8)
		r := rand.New(rand.NewPCG(uint64(len(data)), uint64(data[0])))
		m := newModel(t, r, 32, maxLines)
		size := len(m.mem)
		var val byte
		payload := func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				val++
				b[i] = val
			}
			return b
		}
		for i := 1; i+3 < len(data); i += 4 {
			a := int(binary.LittleEndian.Uint16(data[i+1:]))
			c := int(data[i+3])
			off := a % (size + 16) // now and then past the end
			switch data[i] % 6 {
			case 0, 1:
				m.put(off, payload(c%140))
			case 2:
				m.putUint64(off, uint64(a)*hashMul)
			case 3:
				m.get(off, c%140)
			case 4:
				m.flush()
			case 5:
				m.put(off&^(LineSize-1), payload(LineSize))
			}
			if buildconst.Invariants {
				m.b.check()
			}
		}
		m.flush()
		m.b.check()
	})
}
