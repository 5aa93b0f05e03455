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
	if len(keys) > pathLargestN {
		keys = keys[:pathLargestN]
	}
	members := commMembers(g, keys)
	var out []report.PathContributor
	for _, k := range keys {
		if sum[k] <= 0 {
			break
		}
		c := report.PathContributor{Category: k.cat.String(), What: contributorWhat(k), Kind: k.kind, Link: k.link,
			Ns: sum[k] / float64(len(paths))}
		if k.dev != timeline.NoDevice {
			c.Rank, c.Host = &k.dev, &k.host
		}
		if k.comm != 0 || k.host < 0 {
			c.Comm = &k.comm
			if m := members[k.comm]; m != nil {
				c.Ranks = m.ranks
				c.What = fmt.Sprintf("%s on communicator %d (%s)", k.kind, k.comm, m.text(topo.GPUsPerHost > 0))
			}
		}
		out = append(out, c)
	}
	return out
}

// commRanks are a communicator's ranks (their devices) and hosts, as its collectives' events say.
type commRanks struct {
	ranks []int32
	hosts map[int32]bool
}

// text names the ranks and, where the hosts are known, theirs: "ranks 3, 19, 43, 59 on hosts 0,
// 2, 5, 7", the first and last few of a long list.
func (m *commRanks) text(hostsKnown bool) string {
	hosts := make([]int32, 0, len(m.hosts))
	for h := range m.hosts {
		hosts = append(hosts, h)
	}
	sort.Slice(hosts, func(i, j int) bool { return hosts[i] < hosts[j] })
	if !hostsKnown {
		return "ranks " + listIDs(m.ranks)
	}
	return "ranks " + listIDs(m.ranks) + " on " + map[bool]string{true: "host ", false: "hosts "}[len(hosts) == 1] + listIDs(hosts)
}

// listIDs writes ids, at most eight: "3, 19, 43", "0, 8, 16, … 1016 (128)".
func listIDs(ids []int32) string {
	var b []byte
	for i, id := range ids {
		if len(ids) > 8 && i == 3 {
			b = fmt.Appendf(b, ", … %d (%d)", ids[len(ids)-1], len(ids))
			break
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		b = fmt.Appendf(b, "%d", id)
	}
	return string(b)
}

// commMembers gathers the ranks of the communicators keys name, from the graph's collectives:
// "on communicator 12 (4 ranks)" tells a user which ranks and hosts to look at only with them.
func commMembers(g *depgraph.Graph, keys []pathKey) map[uint32]*commRanks {
	out := map[uint32]*commRanks{}
	for _, k := range keys {
		if k.comm != 0 {
			out[k.comm] = nil
		}
	}
	if len(out) == 0 {
		return nil
	}
	seen := map[[2]int64]bool{}
	for n := range g.Nodes {
		e := g.Event(int32(n))
		if e.Kind != timeline.KindCollective || e.Device == timeline.NoDevice {
			continue
		}
		m, want := out[e.Comm]
		if !want || seen[[2]int64{int64(e.Comm), int64(e.Device)}] {
			continue
		}
		seen[[2]int64{int64(e.Comm), int64(e.Device)}] = true
		if m == nil {
			m = &commRanks{hosts: map[int32]bool{}}
			out[e.Comm] = m
		}
		m.ranks = append(m.ranks, e.Device)
		m.hosts[int32(e.Host)] = true
	}
	for _, m := range out {
		if m != nil {
			sort.Slice(m.ranks, func(i, j int) bool { return m.ranks[i] < m.ranks[j] })
		}
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
