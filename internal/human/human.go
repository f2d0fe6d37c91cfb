// Package human formats quantities for people: byte counts with binary
// units, for messages, logs and the examples' reports.
package human

import "fmt"

// Bytes formats a byte count with a binary unit: "512 B", "1.5 KiB",
// "140.0 GiB".
func Bytes[N ~int | ~int64 | ~uint | ~uint64 | ~uintptr](n N) string {
	const unit = 1024
	u := uint64(n)
	if n < 0 {
		return "-" + Bytes(-int64(n))
	}
	if u < unit {
		return fmt.Sprintf("%d B", u)
	}
	div, exp := uint64(unit), 0
	for m := u / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(u)/float64(div), "KMGTPE"[exp])
}
