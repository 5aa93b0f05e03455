package campaign

import (
	"fmt"
	"slices"

	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/timeline"
)

// shows is what a healthy run exercised, by which a fault kind can change it: the link classes
// that carried bytes, kernels, NCCL ops (collectives, sends and receives) and communicator
// creations.
type shows struct {
	links                   [timeline.NumPeaks + 1]bool // device link classes, then LinkFabric
	kernels, nccl, commInit bool
	// used are the devices that did each: a fault is drawn on one of them (Places).
	used Places
}

// Places are the devices a healthy run used, by what a fault acts on: the devices whose links of
// each class carried bytes, that ran kernels, that ran NCCL ops (collectives, sends, receives) or created communicators, and
// that launched any op (a host's thread). A campaign draws a fault's place among them, so that
// its trials are not spent on GPUs or NICs the scenario never uses (a pipeline of 4 stages on 16
// GPUs). A nil set is unknown: any place.
type Places struct {
	Links   [timeline.NumPeaks]map[int32]bool
	Kernels map[int32]bool
	Colls   map[int32]bool
	Ops     map[int32]bool
}

func mark(m *map[int32]bool, d int32) {
	if d < 0 {
		return
	}
	if *m == nil {
		*m = map[int32]bool{}
	}
	(*m)[d] = true
}

func (s *shows) add(e *timeline.Event) {
	switch e.Kind {
	case timeline.KindLinkBytes:
		if e.Bytes <= 0 {
			return
		}
		if link, _, ok := timeline.UnpackLink(e.Sub); ok {
			s.links[link] = true
			mark(&s.used.Links[link], e.Device)
		} else if _, ok := timeline.UnpackFabricLink(e.Sub); ok {
			s.links[timeline.LinkFabric] = true
		}
	case timeline.KindKernel:
		s.kernels = true
		mark(&s.used.Kernels, e.Device)
	case timeline.KindCollective, timeline.KindSend, timeline.KindRecv:
		s.nccl = true // a hang stops a rank at its next collective, or send or receive (fault.HangNext)
		mark(&s.used.Colls, e.Device)
	case timeline.KindCommInit:
		s.commInit = true
		mark(&s.used.Colls, e.Device)
	}
	if e.Kind.IsBusy() {
		mark(&s.used.Ops, e.Device)
	}
}

// cannot says why a run like the healthy one cannot show fault kind k ("" when it can): what the
// fault acts on, the run does not do, so its trials could only be undetectable.
func (s *shows) cannot(k fault.Kind) string {
	link := -1
	switch k {
	case fault.PCIeGen:
		link = timeline.PeakPCIe
	case fault.NVLinkSlow:
		link = timeline.PeakNVLink
	case fault.NICSlow, fault.NICFlap:
		link = timeline.PeakNIC
	case fault.FabricSlow:
		if !s.links[timeline.LinkFabric] {
			return "no flow crosses a leaf switch's ports to the spines"
		}
	case fault.GPUSlow:
		if !s.kernels {
			return "it runs no kernels"
		}
	case fault.Hang:
		if !s.nccl {
			return "it runs no collectives, sends or receives"
		}
	case fault.MissingRank:
		if !s.commInit {
			return "it creates no communicators"
		}
	}
	if link >= 0 && !s.links[link] {
		return "it moves nothing over " + timeline.LinkName(link)
	}
	return ""
}

// Unshown is a fault kind a campaign's scenario cannot show on its topology, and why.
type Unshown struct {
	Kind fault.Kind
	Why  string
}

func (u Unshown) String() string { return fmt.Sprintf("%s (%s)", u.Kind, u.Why) }

// unshown lists the kinds of kinds that s cannot show.
func (s *shows) unshown(kinds []fault.Kind) []Unshown {
	var out []Unshown
	for _, k := range kinds {
		if why := s.cannot(k); why != "" {
			out = append(out, Unshown{k, why})
		}
	}
	return out
}

// devices are the devices, in order, that a fault of kind k acts on in the run (nil: unknown).
func (p *Places) devices(k fault.Kind) []int32 {
	var m map[int32]bool
	switch k {
	case fault.NICSlow, fault.NICFlap:
		m = p.Links[timeline.PeakNIC]
	case fault.NVLinkSlow:
		m = p.Links[timeline.PeakNVLink]
	case fault.PCIeGen:
		m = p.Links[timeline.PeakPCIe]
	case fault.GPUSlow:
		m = p.Kernels
	case fault.Hang, fault.MissingRank:
		m = p.Colls
	case fault.HostSlow:
		m = p.Ops
	}
	if len(m) == 0 {
		return nil
	}
	out := make([]int32, 0, len(m))
	for d := range m {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}
