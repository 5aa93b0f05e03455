package recordings

import (
	"sort"
	"strconv"
	"strings"

	"github.com/xfertop/xfertop/timeline"
)

// Meta describes the recorded session.
type Meta struct {
	Source       string
	Scenario     string
	Backend      string
	Topology     string
	Devices      int
	Seed         int64
	IdleMode     timeline.IdleMode
	KernelWaitNs int64
	EpochUnixNs  int64 // wall-clock time of time 0
	Writer       string
	Knobs        map[string]string
	Extra        map[string]string // keys this version does not interpret, kept as found
}

func (m Meta) pairs() [][2]string {
	mode := "engine"
	if m.IdleMode == timeline.IdleHTA {
		mode = "hta"
	}
	kv := [][2]string{
		{"source", m.Source}, {"scenario", m.Scenario}, {"backend", m.Backend}, {"topology", m.Topology},
		{"devices", strconv.Itoa(m.Devices)}, {"seed", strconv.FormatInt(m.Seed, 10)}, {"idle_mode", mode},
		{"kernel_wait_ns", strconv.FormatInt(m.KernelWaitNs, 10)}, {"epoch_unix_ns", strconv.FormatInt(m.EpochUnixNs, 10)},
		{"writer", m.Writer},
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
