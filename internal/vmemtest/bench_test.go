package vmemtest

import "testing"

func TestSizeName(t *testing.T) {
	for n, want := range map[int]string{100000: "1e5", 1e6: "1e6", 1e8: "1e8", 16000000: "1.6e7", 100003: "100003", 4e6: "4e6", 1 << 23: "8.388608e6"} {
		if got := SizeName(n); got != want {
			t.Errorf("SizeName(%d) = %q, want %q", n, got, want)
		}
	}
}
