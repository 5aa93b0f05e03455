package topology

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/xfertop/xfertop/engine"
)

// kind is how a key's value is written.
type kind uint8

const (
	kString       kind = iota
	kInt               // a whole number
	kRatio             // a fraction in (0, 1], or a small non-negative factor (jitter)
	kBandwidth         // bytes per second: 450GB/s, 1.5TB/s, 800MB/s (or Gb/s)
	kBits              // a NIC's bandwidth, written in bits: 400Gb/s
	kDuration          // ns, written 700ns, 1.5us, 20ms
	kDurationF         // as kDuration, kept as float64 ns
	kBool              // true/false
	kArch              // hopper, ampere, ada
	kInterconnect      // nvswitch, nvlink-mesh, pcie
	kCPU               // intel, amd, other
	kFabric            // none, rail
	kFactor            // a ratio of at least 1 (0: not given)
)

// field is one key of a topology file and where its value lives in engine.Topology.
type field struct {
	key  string // "hosts", or "section.key"
	kind kind
	ptr  func(t *engine.Topology) any
	min  float64 // least value allowed (numbers)
	max  float64 // greatest value allowed (numbers)
	// optional keys may be left out of a file without base (their zero value is the default), so
	// that files written before the key existed still load.
	optional bool
}

// Limits that keep a topology file's simulation bounded in memory and sane in its arithmetic.
const (
	maxHosts       = 1024
	maxGPUsPerHost = 64
	maxBandwidth   = 1e15 // 1 PB/s
	maxDuration    = 3600e9
	maxChannels    = 64
)

// fields lists every key in the order a formatted file writes them.
var fields = []field{
	{key: "name", kind: kString, ptr: func(t *engine.Topology) any { return &t.Name }},
	{key: "description", kind: kString, ptr: func(t *engine.Topology) any { return &t.Description }},
	{key: "hosts", kind: kInt, ptr: func(t *engine.Topology) any { return &t.Hosts }, min: 1, max: maxHosts},
	{key: "gpus_per_host", kind: kInt, ptr: func(t *engine.Topology) any { return &t.GPUsPerHost }, min: 1, max: maxGPUsPerHost},
	{key: "interconnect", kind: kInterconnect, ptr: func(t *engine.Topology) any { return &t.Interconnect }},
	{key: "nvls", kind: kBool, ptr: func(t *engine.Topology) any { return &t.NVLS }},
	{key: "cpu", kind: kCPU, ptr: func(t *engine.Topology) any { return &t.CPU }, optional: true},

	{key: "gpu.model", kind: kString, ptr: func(t *engine.Topology) any { return &t.GPU.Model }},
	{key: "gpu.arch", kind: kArch, ptr: func(t *engine.Topology) any { return &t.GPU.Arch }},
	{key: "gpu.hbm", kind: kBandwidth, ptr: func(t *engine.Topology) any { return &t.GPU.HBMBps }, min: 1e6, max: maxBandwidth},
	{key: "gpu.nvlink", kind: kBandwidth, ptr: func(t *engine.Topology) any { return &t.GPU.NVLinkBps }, max: maxBandwidth},
	{key: "gpu.nvlink_links", kind: kInt, ptr: func(t *engine.Topology) any { return &t.GPU.NVLinkLinks }, max: 64},
	{key: "gpu.nvlink_gen", kind: kInt, ptr: func(t *engine.Topology) any { return &t.GPU.NVLinkGen }, max: 16},
	{key: "gpu.wave", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.GPU.WaveNs }, min: 1, max: maxDuration},
	{key: "gpu.kernel_jitter", kind: kRatio, ptr: func(t *engine.Topology) any { return &t.GPU.KernelJitter }, max: 0.5},

	{key: "pcie.gen", kind: kInt, ptr: func(t *engine.Topology) any { return &t.PCIe.Gen }, min: 1, max: 16},
	{key: "pcie.pinned", kind: kBandwidth, ptr: func(t *engine.Topology) any { return &t.PCIe.PinnedBps }, min: 1e6, max: maxBandwidth},
	{key: "pcie.pageable", kind: kBandwidth, ptr: func(t *engine.Topology) any { return &t.PCIe.PageableBps }, min: 1e6, max: maxBandwidth},

	{key: "nics.per_host", kind: kInt, ptr: func(t *engine.Topology) any { return &t.NICs.PerHost }, max: 256},
	{key: "nics.type", kind: kString, ptr: func(t *engine.Topology) any { return &t.NICs.Type }},
	{key: "nics.bandwidth", kind: kBits, ptr: func(t *engine.Topology) any { return &t.NICs.Bps }, max: maxBandwidth},
	{key: "nics.latency", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.NICs.LatencyNs }, max: maxDuration},

	{key: "fabric.kind", kind: kFabric, ptr: func(t *engine.Topology) any { return &t.Fabric.Kind }, optional: true},
	{key: "fabric.switch_radix", kind: kInt, ptr: func(t *engine.Topology) any { return &t.Fabric.SwitchRadix }, max: 1024, optional: true},
	{key: "fabric.hosts_per_leaf", kind: kInt, ptr: func(t *engine.Topology) any { return &t.Fabric.HostsPerLeaf }, max: maxHosts, optional: true},
	{key: "fabric.oversubscription", kind: kFactor, ptr: func(t *engine.Topology) any { return &t.Fabric.Oversubscription }, max: 64, optional: true},
	{key: "fabric.hop_latency", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Fabric.HopLatencyNs }, max: maxDuration, optional: true},
	{key: "fabric.nvlink_domain", kind: kInt, ptr: func(t *engine.Topology) any { return &t.Fabric.NVLinkDomain }, max: maxHosts * 8, optional: true},

	{key: "nccl.link_efficiency", kind: kRatio, ptr: func(t *engine.Topology) any { return &t.NCCL.LinkEff }, min: 1e-3, max: 1},
	{key: "nccl.nic_efficiency", kind: kRatio, ptr: func(t *engine.Topology) any { return &t.NCCL.NICEff }, min: 1e-3, max: 1},
	{key: "nccl.p2p_copy_efficiency", kind: kRatio, ptr: func(t *engine.Topology) any { return &t.NCCL.P2PCopyEff }, min: 1e-3, max: 1},
	{key: "nccl.channels", kind: kInt, ptr: func(t *engine.Topology) any { return &t.NCCL.Channels }, min: 1, max: maxChannels},
	{key: "nccl.nvls_channels", kind: kInt, ptr: func(t *engine.Topology) any { return &t.NCCL.NVLSChannels }, min: 1, max: maxChannels},
	{key: "nccl.nvls_tree", kind: kBool, ptr: func(t *engine.Topology) any { return &t.NCCL.NVLSTree }},
	{key: "nccl.base_latency", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.NCCL.BaseNs }, max: maxDuration},
	{key: "nccl.link_latency", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.NCCL.LinkLatencyNs }, max: maxDuration},
	{key: "nccl.net_overhead", kind: kDurationF, ptr: func(t *engine.Topology) any { return &t.NCCL.NetOverheadNs }, max: maxDuration},

	{key: "host.launch", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Costs.LaunchNs }, max: maxDuration},
	{key: "host.nccl_launch", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Costs.NCCLLaunchNs }, max: maxDuration},
	{key: "host.group_launch", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Costs.GroupLaunchNs }, max: maxDuration},
	{key: "host.group_per_op", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Costs.GroupPerOpNs }, max: maxDuration},
	{key: "host.wait_launch", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Costs.WaitLaunchNs }, max: maxDuration},
	{key: "host.batch_add", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Costs.BatchAddNs }, max: maxDuration},
	{key: "host.copy_latency", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Costs.CopyLatencyNs }, max: maxDuration},
	{key: "host.notify", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Costs.NotifyNs }, max: maxDuration},
	{key: "host.event_latency", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Costs.EventLatencyNs }, max: maxDuration},
	{key: "host.barrier_step", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Costs.BarrierStepNs }, max: maxDuration},
	{key: "host.comm_init_first", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Costs.CommInitFirstNs }, max: maxDuration},
	{key: "host.comm_init", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Costs.CommInitNs }, max: maxDuration},
	{key: "host.graph_launch", kind: kDuration, ptr: func(t *engine.Topology) any { return &t.Costs.GraphLaunchNs }, max: maxDuration, optional: true},
}

// sections are the keys that hold a mapping, in the order a formatted file writes them.
var sections = []string{"gpu", "pcie", "nics", "fabric", "nccl", "host"}

func fieldByKey(key string) *field {
	for i := range fields {
		if fields[i].key == key {
			return &fields[i]
		}
	}
	return nil
}

// keysIn lists the keys of a section ("" for the top level), for error messages.
func keysIn(section string) string {
	var out []string
	for _, f := range fields {
		s, k, ok := strings.Cut(f.key, ".")
		switch {
		case section == "" && !ok:
			out = append(out, s)
		case ok && s == section:
			out = append(out, k)
		}
	}
	if section == "" {
		out = append(out, "base")
		out = append(out, sections...)
	}
	return strings.Join(out, ", ")
}

var bandwidthUnits = []struct {
	suffix string
	exp    string // the power of ten, appended to the number so parsing rounds once
	bits   bool
}{
	{"TB/s", "e12", false}, {"GB/s", "e9", false}, {"MB/s", "e6", false},
	{"Tb/s", "e12", true}, {"Gb/s", "e9", true}, {"Mb/s", "e6", true},
	{"B/s", "", false},
}

func parseBandwidth(s string) (float64, error) {
	t := strings.TrimSpace(s)
	for _, u := range bandwidthUnits {
		num, ok := strings.CutSuffix(t, u.suffix)
		if !ok {
			continue
		}
		num = strings.TrimSpace(num)
		if num == "" || strings.ContainsAny(num, "eEpPxX_") {
			break
		}
		v, err := strconv.ParseFloat(num+u.exp, 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 0) {
			break
		}
		if u.bits {
			v /= 8
		}
		return v, nil
	}
	return 0, fmt.Errorf("%q is not a bandwidth (examples: 450GB/s, 1.5TB/s, 400Gb/s)", s)
}

// formatBandwidth writes bps in GB/s (Gb/s for bits), or in B/s where the shorter form would not
// read back as the same number.
func formatBandwidth(bps float64, bits bool) string {
	s := strconv.FormatFloat(bps/1e9, 'f', -1, 64) + "GB/s"
	if bits {
		s = strconv.FormatFloat(bps*8/1e9, 'f', -1, 64) + "Gb/s"
	}
	if v, err := parseBandwidth(s); err == nil && v == bps {
		return s
	}
	return strconv.FormatFloat(bps, 'f', -1, 64) + "B/s"
}

func parseDuration(s string) (float64, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration (examples: 700ns, 1.5us, 20ms)", s)
	}
	return float64(d), nil
}

func formatDuration(ns float64) string {
	for _, u := range []struct {
		suffix string
		ns     float64
	}{{"s", 1e9}, {"ms", 1e6}, {"us", 1e3}} {
		if ns >= u.ns {
			return strconv.FormatFloat(ns/u.ns, 'f', -1, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(ns, 'f', -1, 64) + "ns"
}

// set parses v into f's place in t.
func (f *field) set(t *engine.Topology, v string) error {
	var num float64
	switch p := f.ptr(t).(type) {
	case *string:
		*p = v
		return nil
	case *bool:
		switch v {
		case "true", "on", "yes":
			*p = true
		case "false", "off", "no":
			*p = false
		default:
			return fmt.Errorf("%q is not true or false", v)
		}
		return nil
	case *engine.Arch:
		a, err := engine.ParseArch(v)
		*p = a
		return err
	case *engine.Interconnect:
		c, err := engine.ParseInterconnect(v)
		*p = c
		return err
	case *engine.CPUVendor:
		c, err := engine.ParseCPUVendor(v)
		*p = c
		return err
	case *engine.FabricKind:
		k, err := engine.ParseFabricKind(v)
		*p = k
		return err
	case *int:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not a whole number", v)
		}
		if err := f.bounds(float64(n), v); err != nil {
			return err
		}
		*p = n
		return nil
	case *int64:
		d, err := parseDuration(v)
		if err != nil {
			return err
		}
		if err := f.bounds(d, v); err != nil {
			return err
		}
		*p = int64(d)
		return nil
	case *float64:
		var err error
		switch f.kind {
		case kBandwidth, kBits:
			num, err = parseBandwidth(v)
		case kDurationF:
			num, err = parseDuration(v)
		default:
			num, err = strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(num) {
				err = fmt.Errorf("%q is not a number", v)
			}
		}
		if err != nil {
			return err
		}
		if err := f.bounds(num, v); err != nil {
			return err
		}
		*p = num
		return nil
	}
	return fmt.Errorf("internal: key %s has no parser", f.key)
}

func (f *field) bounds(x float64, v string) error {
	if x < f.min || x > f.max {
		return fmt.Errorf("%s out of range (%s to %s)", v, f.format(f.min), f.format(f.max))
	}
	return nil
}

// format writes a bound in the key's own unit.
func (f *field) format(x float64) string {
	switch f.kind {
	case kBandwidth:
		return formatBandwidth(x, false)
	case kBits:
		return formatBandwidth(x, true)
	case kDuration, kDurationF:
		return formatDuration(x)
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// get writes f's value in t as the file writes it.
func (f *field) get(t *engine.Topology) string {
	switch p := f.ptr(t).(type) {
	case *string:
		return *p
	case *bool:
		return strconv.FormatBool(*p)
	case *engine.Arch:
		return p.String()
	case *engine.Interconnect:
		return p.String()
	case *engine.CPUVendor:
		return p.String()
	case *engine.FabricKind:
		return p.String()
	case *int:
		return strconv.Itoa(*p)
	case *int64:
		return formatDuration(float64(*p))
	case *float64:
		switch f.kind {
		case kBandwidth, kBits, kDurationF:
			return f.format(*p)
		}
		return strconv.FormatFloat(*p, 'f', -1, 64)
	}
	return ""
}
