package join

import (
	"fmt"
	"maps"
	"slices"

	"github.com/xfertop/xfertop/timeline"
)

// NumberHosts numbers the hosts named in hosts (rank → host name) as the events carry them in
// Host: 0, 1, … in the order of the lowest rank on each, so one name is one number. A rank of no
// name has no number.
func NumberHosts(hosts map[int32]string) map[int32]uint16 {
	ids := map[string]uint16{}
	out := make(map[int32]uint16, len(hosts))
	for _, r := range slices.Sorted(maps.Keys(hosts)) {
		name := hosts[r]
		if name == "" {
			continue
		}
		id, ok := ids[name]
		if !ok {
			id = uint16(min(len(ids), 1<<16-1))
			ids[name] = id
		}
		out[r] = id
	}
	return out
}

// PlaceHosts hands the hosts that a job's sources named, by rank (NCCL Inspector's hostname, NCCL
// RAS's host), to the one device→host map (analysis/hostmap) the way the plugin's merged
// recordings do: each event of a rank carries its host's number (NumberHosts), and extra (the
// job's timeline.Meta.Extra) says the events carry their hosts (timeline.HostsInEventsKey) and
// names each host (timeline.HostNameKey). Findings, the report's hosts and the console's Cluster
// view then all read the host from that map.
//
// A rank among the events that no source placed carries timeline.NoHost: the map leaves its host
// unknown rather than put it on a host, and the warning returned says how many such ranks there
// are ("" when there are none, or when no source named a host).
func PlaceHosts(events []timeline.Event, hosts map[int32]string, extra map[string]string) string {
	for h := range timeline.HostNames(timeline.Meta{Extra: extra}) {
		delete(extra, timeline.HostNameKey(h)) // a part's own numbering of its hosts (Inspector's)
	}
	delete(extra, timeline.HostsInEventsKey)
	ids := NumberHosts(hosts)
	if len(ids) == 0 {
		return ""
	}
	unplaced := map[int32]bool{}
	for i := range events {
		e := &events[i]
		if e.Device < 0 {
			continue
		}
		if h, ok := ids[e.Device]; ok {
			e.Host = h
		} else {
			e.Host, unplaced[e.Device] = timeline.NoHost, true
		}
	}
	extra[timeline.HostsInEventsKey] = "1"
	for _, r := range slices.Sorted(maps.Keys(ids)) {
		extra[timeline.HostNameKey(int32(ids[r]))] = hosts[r]
	}
	if n := len(unplaced); n > 0 {
		return fmt.Sprintf("the sources name the hosts of %d ranks but not of %d others (rank %d the first): their hosts are unknown",
			len(ids), n, slices.Min(slices.Collect(maps.Keys(unplaced))))
	}
	return ""
}
