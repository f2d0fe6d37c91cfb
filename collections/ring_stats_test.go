package collections

import (
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

func TestRingStats(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		for _, over := range []bool{false, true} {
			r, err := NewRing[uint64](d, 100, WithOverwrite(over))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 130 {
				if err := r.Push(uint64(i)); err != nil && (over || i < 100) {
					t.Fatal(err)
				}
			}
			for range 3 {
				r.Pop()
			}
			st := r.Stats()
			wantPushed := uint64(100)
			if over {
				wantPushed = 130
			}
			if st.Len != 97 || st.Cap != 100 || st.Pushed != wantPushed || st.DeviceBytes < 800 || st.HostBytes == 0 {
				t.Fatalf("overwrite %v: Stats %+v", over, st)
			}
			if err := r.Clear(); err != nil {
				t.Fatal(err)
			}
			if st := r.Stats(); st.Len != 0 || st.Pushed != 0 || st.Cap != 100 || st.DeviceBytes < 800 {
				t.Fatalf("overwrite %v: Stats after Clear %+v", over, st)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if st := r.Stats(); st != (RingStats{}) {
				t.Fatalf("Stats after Close: %+v", st)
			}
		}
	})
}
