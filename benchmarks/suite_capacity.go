package main

// The capacity suite: how much a program can store. It allocates blocks
// of each tier until the device says ErrOutOfMemory (or -capacity-max is
// reached), keeping what it got, so the private tier is measured after
// the mapped one is full, as a container that spills would see it.

import (
	"errors"
	"fmt"
	"time"

	"github.com/govram/govram/internal/block"
	"github.com/govram/govram/internal/kern"
	"github.com/govram/govram/vmem"
)

func capacitySuite() *suite {
	return &suite{
		Name: "capacity",
		Once: true,
		About: "Allocate blocks of each tier (mapped, then private, then host) until ErrOutOfMemory or " +
			"-capacity-max per tier, keeping them, then free everything. Skipped on the host backend " +
			"unless -capacity-host (there it would only measure the operating system's overcommit). The " +
			"host tier is also capped at a quarter of the memory available and at 16 GiB, since on a GPU it is pinned (at about 2 GB/s).",
		Ops: []opDoc{
			{"mapped", "bytes of mapped VRAM obtained (GiB metric); the time is the whole probe"},
			{"private", "bytes of private VRAM obtained after the mapped tier is full"},
			{"host", "bytes of the host tier obtained (pinned system memory on a GPU)"},
		},
		Groups: func(e *env, _ int) []*group {
			return []*group{{Suite: "capacity", Name: "capacity", Impls: []*impl{capacityImpl(e)}}}
		},
	}
}

func capacityImpl(e *env) *impl {
	return &impl{
		Name: "govram", Role: RoleGovram, Ops: []string{"mapped", "private", "host"},
		Setup: func() (*fixture, error) {
			if e.dev.Info().Backend == vmem.BackendHost && !e.cfg.capHost {
				return nil, skipf("host backend (use -capacity-host to probe it)")
			}
			var held []block.Block
			fx := &fixture{close: func() error {
				var errs []error
				for _, b := range held {
					errs = append(errs, kern.Of(e.dev).Free(b))
				}
				held = nil
				kern.Of(e.dev).Trim()
				return errors.Join(errs...)
			}}
			for _, t := range []vmem.Tier{vmem.Mapped, vmem.Private, vmem.Host} {
				fx.ops = append(fx.ops, op{name: t.String(), once: true, fn: func(b *B) error {
					limit := e.cfg.capacityMax
					if t == vmem.Host && e.hostAvail > 0 {
						// Pinned memory the system cannot page out: stay well
						// clear of what the machine needs.
						// Pinning runs at a few GB/s: 16 GiB says what
						// a host tier gives without a minute of probing.
						limit = min(limit, e.hostAvail/4, 16<<30)
					}
					blocks, got, why, err := fillTier(e.dev, t, limit, &held)
					if err != nil {
						return err
					}
					sec := b.Elapsed().Seconds()
					b.ReportMetric(float64(got)/(1<<30), "GiB")
					b.ReportMetric(float64(blocks), "blocks")
					if sec > 0 {
						b.ReportMetric(float64(got)/(1<<30)/sec, "GiB/s")
					}
					b.Note(why)
					return nil
				}})
			}
			return fx, nil
		},
	}
}

// fillTier allocates blocks of t until the device refuses or limit bytes
// are held. Blocks are as large as the tier allows (at most 1 GiB); when
// one does not fit, smaller ones are tried down to 64 MiB so the tail is
// used too. It returns what it got and why it stopped.
func fillTier(dev *vmem.Device, t vmem.Tier, limit uint64, held *[]block.Block) (blocks int, got uint64, why string, err error) {
	ti := dev.Info().Tiers[t]
	if !ti.Available {
		return 0, 0, "", skipf("the %s tier is not available on this device", t)
	}
	const minBlock = 64 << 20
	bs := uint64(1 << 30)
	if ti.MaxBlock > 0 {
		bs = min(bs, ti.MaxBlock)
	}
	bs = min(bs, limit)
	start := time.Now()
	for {
		if got >= limit {
			return blocks, got, fmt.Sprintf("stopped at -capacity-max (%s)", fmtBytes(float64(limit))), nil
		}
		size := min(bs, limit-got)
		blk, err := kern.Of(dev).Alloc(block.Tier(t), size, 0)
		switch {
		case err == nil:
			*held = append(*held, blk)
			got += size
			blocks++
		case errors.Is(err, vmem.ErrOutOfMemory) || errors.Is(err, vmem.ErrTooLarge):
			if bs/2 >= minBlock {
				bs /= 2
				continue
			}
			return blocks, got, fmt.Sprintf("out of memory after %s (%v)", time.Since(start).Round(time.Millisecond), err), nil
		default:
			return blocks, got, "", err
		}
	}
}
