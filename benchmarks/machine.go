package main

// The machine a run measured: figures mean little without it.

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/govram/govram/vmem"
)

// Machine describes the host.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	MemTotal   uint64 `json:"mem_total"`
	Kernel     string `json:"kernel,omitempty"`
	Go         string `json:"go"`
	OSArch     string `json:"os_arch"`
	// Features: what golang.org/x/sys/cpu sees (the paths govram picks
	// depend on them); Flags: /proc/cpuinfo's flags line.
	Features []string `json:"features"`
	Flags    []string `json:"flags,omitempty"`
	// GPUs: nvidia-smi's view where it is installed (name, driver,
	// memory), which the Vulkan description lacks.
	GPUs []string `json:"gpus,omitempty"`
}

// Device describes the vmem device a run used.
type Device struct {
	Backend       string     `json:"backend"`
	Name          string     `json:"name"`
	Type          string     `json:"type"`
	Driver        string     `json:"driver,omitempty"`
	APIVersion    string     `json:"api_version,omitempty"`
	Fallback      string     `json:"fallback,omitempty"`
	TransferQueue string     `json:"transfer_queue,omitempty"`
	Tiers         []TierDesc `json:"tiers"`
	// Kernels is false when VMEM_KERNELS=0 kept operations on the CPU.
	Kernels bool `json:"kernels"`
}

// TierDesc is one tier of Device.
type TierDesc struct {
	Tier       string `json:"tier"`
	Available  bool   `json:"available"`
	MemoryType int    `json:"memory_type"`
	Capacity   uint64 `json:"capacity"`
	Budget     uint64 `json:"budget,omitempty"`
	MaxBlock   uint64 `json:"max_block"`
}

// describeDevice converts dev.Info().
func describeDevice(dev *vmem.Device) Device {
	in := dev.Info()
	d := Device{Backend: string(in.Backend), Name: in.Name, Type: in.Type, Driver: in.Driver,
		APIVersion: in.APIVersion, Fallback: in.Fallback, TransferQueue: in.TransferQueue,
		Kernels: os.Getenv("VMEM_KERNELS") != "0"}
	for _, t := range in.Tiers {
		d.Tiers = append(d.Tiers, TierDesc{Tier: t.Tier.String(), Available: t.Available,
			MemoryType: t.MemoryType, Capacity: t.Capacity, Budget: t.Budget, MaxBlock: t.MaxBlock})
	}
	return d
}

// describeMachine reads /proc/cpuinfo, /proc/meminfo and x/sys/cpu.
func describeMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		Go: runtime.Version(), OSArch: runtime.GOOS + "/" + runtime.GOARCH,
		MemTotal: meminfo("MemTotal"), Features: cpuFeatures()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch {
			case k == "model name" && m.CPU == "":
				m.CPU = v
			case k == "flags" && m.Flags == nil:
				m.Flags = strings.Fields(v)
			}
		}
		f.Close()
	}
	if m.CPU == "" {
		m.CPU = runtime.GOARCH
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.GPUs = nvidiaSMI()
	return m
}

// cpuFeatures lists the x86 features govram's line I/O chooses between,
// or the arm64 ones.
func cpuFeatures() []string {
	var fs []string
	add := func(ok bool, name string) {
		if ok {
			fs = append(fs, name)
		}
	}
	switch runtime.GOARCH {
	case "amd64", "386":
		x := cpu.X86
		add(x.HasSSE2, "sse2")
		add(x.HasSSE41, "sse4.1")
		add(x.HasSSE42, "sse4.2")
		add(x.HasAVX, "avx")
		add(x.HasAVX2, "avx2")
		add(x.HasAVX512F, "avx512f")
		add(x.HasAVX512BW, "avx512bw")
		add(x.HasAVX512VL, "avx512vl")
		add(x.HasERMS, "erms")
		add(x.HasBMI2, "bmi2")
	case "arm64":
		a := cpu.ARM64
		add(a.HasASIMD, "asimd")
		add(a.HasSVE, "sve")
		add(a.HasATOMICS, "atomics")
	}
	return fs
}

// meminfo returns a /proc/meminfo field in bytes (0 if unknown).
func meminfo(field string) uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != field {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0
		}
		n, _ := strconv.ParseUint(f[0], 10, 64)
		if len(f) > 1 && f[1] == "kB" {
			n <<= 10
		}
		return n
	}
	return 0
}

// nvidiaSMI asks nvidia-smi, where it is installed, for the GPUs' names,
// drivers and memory; it never holds the run up for long.
func nvidiaSMI() []string {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path,
		"--query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current",
		"--format=csv,noheader").Output()
	if err != nil {
		return nil
	}
	var gs []string
	for line := range bytes.SplitSeq(bytes.TrimSpace(out), []byte("\n")) {
		if s := strings.TrimSpace(string(line)); s != "" {
			gs = append(gs, s)
		}
	}
	return gs
}

// interestingFlags are the /proc/cpuinfo flags the report shows (the full
// list is in results.json).
var interestingFlags = []string{"sse4_1", "avx2", "avx512f", "avx512bw", "movdir64b", "movdiri", "erms", "fsrm", "hypervisor"}
