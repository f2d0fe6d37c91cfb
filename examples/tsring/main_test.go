package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/govram/govram/internal/vmemtest"
	"github.com/govram/govram/vmem"
)

func TestTSRing(t *testing.T) {
	vmemtest.Each(t, vmem.Options{}, func(t *testing.T, d *vmem.Device) {
		// A ring much smaller than the stream, odd batch and block sizes and
		// three producers: the ring wraps and fills, blocks end mid-batch.
		cfg := config{n: 30_000, series: 70, producers: 3, ring: 1000, batch: 300, block: 4099,
			dir: t.TempDir(), keep: true, dev: d}
		var out bytes.Buffer
		if err := run(cfg, &out); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		t.Log("\n" + got)

		total := (cfg.n + cfg.series - 1) / cfg.series * cfg.series
		for _, want := range []string{
			"backend " + string(d.Info().Backend) + "\n",
			fmt.Sprintf("ingest: PushBatch took %d samples", total),
			fmt.Sprintf("drain: PopBatch took %d samples", total),
			fmt.Sprintf("file: %d blocks, ", (total+cfg.block-1)/cfg.block),
			fmt.Sprintf("verify: read back %d samples of %d series", total, cfg.series),
		} {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		path := filepath.Join(cfg.dir, "samples.tsr")
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(\d+) bytes written`).FindStringSubmatch(got)
		if m == nil || m[1] != strconv.FormatInt(fi.Size(), 10) {
			t.Errorf("output says %v bytes written, the file has %d", m, fi.Size())
		}
		if raw := int64(total) * 24; fi.Size() >= raw/2 {
			t.Errorf("file of %d bytes for %d bytes of samples: not compressed", fi.Size(), raw)
		}

		// The check reading the file back is real: a damaged file fails it.
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 0x40
		bad := filepath.Join(cfg.dir, "bad.tsr")
		if err := os.WriteFile(bad, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := verify(bad, cfg.series, total/cfg.series); err == nil {
			t.Error("verify accepted a damaged file")
		}
	})
}
