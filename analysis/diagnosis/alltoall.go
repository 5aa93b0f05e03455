package diagnosis

import (
	"fmt"

	"github.com/xfertop/xfertop/timeline"
)

// An all-to-all (NCCL's group of sends and receives to every peer, a mixture of experts' dispatch)
// hides a slow link from slowLink twice over: its ranks' parts of one instance end together (the
// instance ends when its last flow does, so no rank's time stands out), and a ragged one's ranks
// each move their own bytes (so no two ranks make a class of peers). With its hot expert's NIC
// bounding the step, a NIC at a tenth of its rate can take its share of the all-to-all ten times
// as long and still end before the hot expert's traffic does. Its flows still run at what is left
// of it while busy (busy.go): among the ranks of an all-to-all in the step, the link that moved
// slower while busy than its peers of the same class is the suspect, and what it cost is the time
// it was busy beyond what its peers' rate takes for the same bytes.

// allToAllLink is the slow link among the step's all-to-all ranks, by its rate while busy, when
// their transfer times named none (slowLink, selfSlowLink).
func (d *Diagnosis) allToAllLink() (suspect, bool) {
	var cands []int32
	for r := range d.ranks {
		if d.ranks[r].a2a {
			cands = append(cands, int32(r))
		}
	}
	if len(cands) < minPeers {
		return suspect{}, false
	}
	p, ok := d.slowestBusy(cands)
	if !ok {
		return suspect{}, false
	}
	cls := 1
	if p.class == linkClass(2) {
		cls = 2
	}
	a := &d.ranks[p.rank]
	excess := max(a.busyExtra[cls][0], a.busyExtra[cls][1])
	ratio := 1 / max(p.low, 1e-3) // a link that was down moved (almost) nothing while busy
	name := linkName(p.class)
	return suspect{kind: SlowLink, rank: p.rank, host: d.hostOf(p.rank), ratio: ratio, conf: p.conf, excess: excess, link: p.class,
		flaps: p.down > 0 && p.up > 0, evidence: p.first*timeline.LinkWindowNs + 1,
		detail: fmt.Sprintf("%s this step, in its all-to-all (%d ranks), whose ranks' parts end together: their times cannot show which link held it, its rate while busy does",
			p.say(), len(cands)),
		cost: fmt.Sprintf("its %s's transfers", name)}, true
}
