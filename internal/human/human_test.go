package human

import "testing"

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {512, "512 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{140 << 30, "140.0 GiB"}, {3 << 40, "3.0 TiB"}, {-2048, "-2.0 KiB"},
	} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if got := Bytes(uint64(1 << 20)); got != "1.0 MiB" {
		t.Errorf("Bytes(uint64 1 MiB) = %q", got)
	}
}
