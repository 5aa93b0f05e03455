package main

import (
	"fmt"
	"sort"

	"github.com/xfertop/xfertop/depgraph"
	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
)

// pathLargestN is how many of the critical path's contributors analyze --critical-path names.
const pathLargestN = 5

// pathKey groups the ops on a critical path: one rank's ops of one kind over one link.
type pathKey struct {
	cat  depgraph.Category
	dev  int32
	host int
	kind string
	link string
	comm uint32 // a collective's communicator (dev is then NoDevice: every rank's)
	n    int32  // its ranks
}

// pathLargest is the critical path's largest contributors per step: the time the ops of one rank
// and kind (a send or receive also by the link it crosses) have on the paths, the first step left
// out as Summarize leaves it out, most first. "which rank or link is slowing the job": the
// split into compute and communication says how much, this says whose. topo (zero when the trace
// does not say) names the NIC a send crosses.
func pathLargest(g *depgraph.Graph, paths []depgraph.Path, names depgraph.Names, topo engine.Topology) []report.PathContributor {
	if len(paths) > 1 && paths[0].Step >= 0 {
		paths = paths[1:]
	}
	sum := map[pathKey]float64{}
	for _, p := range paths {
		if len(p.NodeNs) != len(p.Nodes) {
			continue
		}
		for i, n := range p.Nodes {
			sum[contributorKey(g, n, topo)] += float64(p.NodeNs[i])
		}
	}
	keys := make([]pathKey, 0, len(sum))
	for k := range sum {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := sum[keys[i]], sum[keys[j]]
		return a > b || a == b && (keys[i].dev < keys[j].dev || keys[i].dev == keys[j].dev && keys[i].kind < keys[j].kind)
	})
	var out []report.PathContributor
	for _, k := range keys {
		if len(out) == pathLargestN || sum[k] <= 0 {
			break
		}
		c := report.PathContributor{Category: k.cat.String(), What: contributorWhat(k), Kind: k.kind, Link: k.link,
			Ns: sum[k] / float64(len(paths))}
		if k.dev != timeline.NoDevice {
			c.Rank, c.Host = &k.dev, &k.host
		}
		if k.comm != 0 || k.host < 0 {
			c.Comm = &k.comm
		}
		out = append(out, c)
	}
	return out
}

// contributorKey is op n's group: its rank, kind (a collective's op, a kernel's "kernels") and,
// for a send or receive, the link it crosses.
func contributorKey(g *depgraph.Graph, n int32, topo engine.Topology) pathKey {
	e := g.Event(n)
	k := pathKey{cat: g.Category(n), dev: e.Device, host: int(e.Host), kind: e.Kind.String()}
	switch e.Kind {
	case timeline.KindCollective:
		// A collective's time is every rank's: the rank the path went through is not its cause.
		k.kind, k.dev, k.host, k.comm, k.n = timeline.CollOp(e.Sub).String(), timeline.NoDevice, -1, e.Comm, int32(e.Ranks)
	case timeline.KindSend, timeline.KindRecv:
		k.link = p2pLink(e, topo)
	}
	return k
}

// p2pLink is the link a send or receive crosses as the rank's own: its GPU's NIC (by host and NIC
// number where the topology says how its NICs are shared) to another host, NVLink within one.
func p2pLink(e *timeline.Event, topo engine.Topology) string {
	if e.Peer == timeline.NoDevice || topo.GPUsPerHost == 0 {
		return ""
	}
	if topo.HostOf(engine.DeviceID(e.Peer)) == topo.HostOf(engine.DeviceID(e.Device)) {
		return "NVLink"
	}
	local := int(e.Device) % topo.GPUsPerHost
	if nics := topo.NICs.PerHost; nics > 0 {
		return fmt.Sprintf("host %d NIC %d", int(e.Device)/topo.GPUsPerHost, local*nics/topo.GPUsPerHost)
	}
	return fmt.Sprintf("host %d's network", int(e.Device)/topo.GPUsPerHost)
}

// contributorWhat names a group in words: "rank 299's sends over host 37 NIC 3".
func contributorWhat(k pathKey) string {
	rank := fmt.Sprintf("rank %d's", k.dev)
	switch {
	case k.comm != 0 || k.host < 0:
		return fmt.Sprintf("%s on communicator %d (%d ranks)", k.kind, k.comm, k.n)
	case k.dev == timeline.NoDevice:
		rank = fmt.Sprintf("host %d's", k.host)
	case k.kind == "kernel":
		return fmt.Sprintf("rank %d's kernels (host %d)", k.dev, k.host)
	}
	what := k.kind
	switch k.kind {
	case "send", "recv":
		what = map[string]string{"send": "sends", "recv": "receives"}[k.kind]
		if k.link != "" {
			return fmt.Sprintf("%s %s over %s", rank, what, k.link)
		}
	case "runtime":
		what = "runtime calls"
	}
	return fmt.Sprintf("%s %s", rank, what)
}
