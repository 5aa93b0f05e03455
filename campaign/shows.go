package campaign

import (
	"fmt"

	"github.com/xfertop/xfertop/engine/fault"
	"github.com/xfertop/xfertop/timeline"
)

// shows is what a healthy run exercised, by which a fault kind can change it: the link classes
// that carried bytes, kernels, NCCL ops (collectives, sends and receives) and communicator
// creations.
type shows struct {
	links                   [timeline.NumPeaks + 1]bool // device link classes, then LinkFabric
	kernels, nccl, commInit bool
}

func (s *shows) add(e *timeline.Event) {
	switch e.Kind {
	case timeline.KindLinkBytes:
		if e.Bytes <= 0 {
			return
		}
		if link, _, ok := timeline.UnpackLink(e.Sub); ok {
			s.links[link] = true
		} else if _, ok := timeline.UnpackFabricLink(e.Sub); ok {
			s.links[timeline.LinkFabric] = true
		}
	case timeline.KindKernel:
		s.kernels = true
	case timeline.KindCollective, timeline.KindSend, timeline.KindRecv:
		s.nccl = true // a hang stops a rank at its next collective, or send or receive (fault.HangNext)
	case timeline.KindCommInit:
		s.commInit = true
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
