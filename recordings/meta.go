package recordings

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// Meta is the recorded session's description: timeline.Meta, the one description of a run that
// recordings, reports and the console share.
type Meta = timeline.Meta

// MetaPairs is m as the recording's Meta chunk holds it: key/value pairs, knobs as knob.NAME.
func MetaPairs(m Meta) [][2]string {
	mode := m.IdleMode.String()
	kv := [][2]string{
		{"source", m.Source}, {"scenario", m.Scenario}, {"backend", m.Backend}, {"topology", m.Topology},
		{"devices", strconv.Itoa(m.Devices)}, {"seed", strconv.FormatInt(m.Seed, 10)}, {"idle_mode", mode},
		{"kernel_wait_ns", strconv.FormatInt(m.KernelWaitNs, 10)}, {"epoch_unix_ns", strconv.FormatInt(m.EpochUnixNs, 10)},
		{"writer", m.Writer},
	}
	if m.GPUsPerHost > 0 {
		kv = append(kv, [2]string{"gpus_per_host", strconv.Itoa(m.GPUsPerHost)})
	}
	for i, name := range peakKeys {
		if m.LinkPeaks[i] > 0 {
			kv = append(kv, [2]string{name, strconv.FormatFloat(m.LinkPeaks[i], 'g', -1, 64)})
		}
	}
	if m.FabricPortBps > 0 {
		kv = append(kv, [2]string{fabricPortKey, strconv.FormatFloat(m.FabricPortBps, 'g', -1, 64)})
	}
	if m.Mapping != "" {
		kv = append(kv, [2]string{"mapping", m.Mapping})
	}
	if m.LinkBytes {
		kv = append(kv, [2]string{"link_bytes", "engine"})
	}
	if len(m.Faults) > 0 {
		// One pair: a fault reads as key=value pairs parted by commas, never by "; ".
		kv = append(kv, [2]string{faultsKey, strings.Join(m.Faults, faultsSep)})
	}
	keys := make([]string, 0, len(m.Knobs))
	for k := range m.Knobs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kv = append(kv, [2]string{"knob." + k, m.Knobs[k]})
	}
	extra := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		extra = append(extra, k)
	}
	sort.Strings(extra)
	for _, k := range extra {
		kv = append(kv, [2]string{k, m.Extra[k]})
	}
	return kv
}

// MetaFromPairs is the inverse of MetaPairs: a run's description read back from its pairs (a
// recording's Meta chunk, an OTLP resource's xfertop.meta.* attributes). Unknown keys go to Extra.
func MetaFromPairs(kv [][2]string) Meta { return metaFrom(kv) }

func metaFrom(kv [][2]string) Meta {
	var m Meta
	for _, p := range kv {
		k, v := p[0], p[1]
		switch k {
		case "source":
			m.Source = v
		case "scenario":
			m.Scenario = v
		case "backend":
			m.Backend = v
		case "topology":
			m.Topology = v
		case "devices":
			m.Devices, _ = strconv.Atoi(v)
		case "seed":
			m.Seed, _ = strconv.ParseInt(v, 10, 64)
		case "idle_mode":
			if v == "hta" {
				m.IdleMode = timeline.IdleHTA
			}
		case "kernel_wait_ns":
			m.KernelWaitNs, _ = strconv.ParseInt(v, 10, 64)
		case "epoch_unix_ns":
			m.EpochUnixNs, _ = strconv.ParseInt(v, 10, 64)
		case "writer":
			m.Writer = v
		case "gpus_per_host":
			m.GPUsPerHost, _ = strconv.Atoi(v)
		case "mapping":
			m.Mapping = v
		case "link_bytes":
			m.LinkBytes = v == "engine"
		case faultsKey:
			if v != "" {
				m.Faults = strings.Split(v, faultsSep)
			}
		case fabricPortKey:
			if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && !math.IsInf(f, 0) {
				m.FabricPortBps = f
			}
		case peakKeys[0], peakKeys[1], peakKeys[2], peakKeys[3]:
			f, err := strconv.ParseFloat(v, 64)
			if err == nil && f > 0 {
				m.LinkPeaks[slices.Index(peakKeys[:], k)] = f
			}
		default:
			if name, ok := strings.CutPrefix(k, "knob."); ok {
				if m.Knobs == nil {
					m.Knobs = map[string]string{}
				}
				m.Knobs[name] = v
				continue
			}
			if m.Extra == nil {
				m.Extra = map[string]string{}
			}
			m.Extra[k] = v
		}
	}
	return m
}

// faultsKey holds timeline.Meta.Faults, parted by faultsSep (absent: none, or a recording
// written before faults were kept).
const (
	faultsKey = "faults"
	faultsSep = "; "
)

// fabricPortKey holds timeline.Meta.FabricPortBps: a fabric switch port's bandwidth each way.
const fabricPortKey = "peak.fabric_port_bps"

// peakKeys name the link peaks (bytes/s per device) in timeline.Meta.LinkPeaks order.
var peakKeys = [timeline.NumPeaks]string{"peak.pcie_bps", "peak.nvlink_bps", "peak.nic_bps", "peak.hbm_bps"}
