package join

import (
	"errors"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/timeline"
)

// coll is a completed collective of rank dev on communicator comm, numbered seq by SeqOp when
// seq > 0 (a Flight Recorder part's), else by op (an Inspector part's own id).
func coll(strs *timeline.Strings, dev int32, comm uint32, seq, op uint64, start, end int64, label string) timeline.Event {
	e := timeline.Event{Kind: timeline.KindCollective, Device: dev, Peer: timeline.NoDevice, Comm: comm, Stream: uint32(dev)*StreamsPerRank + comm,
		Queued: -1, Start: start, End: end, Ranks: 2, Bytes: 1 << 20, Op: op, Label: strs.ID(label)}
	if seq > 0 {
		e.Op, e.Aux = timeline.SeqOp(comm, seq), timeline.AuxSeqOp
	}
	return e
}

// Two parts of one 3-rank job: a sequence-numbered part (ranks 0–2, epoch T) and a measuring
// part (ranks 0 and 1, epoch T + 1 s, with host names). The joined stream keeps every event;
// the first part's completed ops of ranks 0 and 1 are shadows (the second measures them), rank
// 2's stay measured; the second part's communicators follow the first's, its SeqOp-free op ids
// and its streams moved off the first's; times are placed on the earlier epoch; labels are
// the session's; hosts are joined by rank.
func TestPartsJoinByRank(t *testing.T) {
	const epoch = int64(1_764_230_400_000_000_000)
	fs, is := timeline.NewStrings(), timeline.NewStrings()
	fr := Part{Format: "Flight Recorder", Files: "fr/nccl_trace_rank_0 and 2 more", Strings: fs, EpochUnixNs: epoch, World: 3, Ranked: true}
	for r := range int32(3) {
		fr.Events = append(fr.Events, coll(fs, r, 1, 1, 0, 100, 200, "nccl:all_reduce"))
	}
	pending := coll(fs, 0, 1, 2, 0, 300, 400, "nccl:all_reduce (started)")
	pending.Status = timeline.StatusPending
	fr.Events = append(fr.Events, pending)
	in := Part{Format: "NCCL Inspector", Files: "insp/node0-pid1.log and 1 more", Strings: is, EpochUnixNs: epoch + 1e9, World: 3, Ranked: true, Measures: true,
		Hosts: map[int32]string{0: "node0", 1: "node1"}, Extra: map[string]string{"comm.1": "0xabc world (3 ranks)"}}
	for r := range int32(2) {
		in.Events = append(in.Events, coll(is, r, 1, 0, 1<<40|1, 10, 60, "AllReduce"))
	}
	j, err := Parts([]Part{fr, in})
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Events) != 6 || j.EpochUnixNs != epoch || j.Devices != 3 {
		t.Fatalf("joined %d events, epoch %d, %d devices; want 6, %d, 3", len(j.Events), j.EpochUnixNs, j.Devices, epoch)
	}
	var shadows, measured, seq int
	for _, e := range j.Events {
		label := j.Strings.Lookup(e.Label)
		switch {
		case label == "AllReduce":
			measured++
			if e.Comm != 2 || e.Op != 1<<40|1 || e.Start != 1e9+10 || e.End != 1e9+60 || e.Stream != uint32(e.Device)*StreamsPerRank+1+partStreams || e.Status != timeline.StatusOK {
				t.Errorf("Inspector's op %+v; want comm 2, its own op id, at 1 s + 10 ns, its stream moved, measured", e)
			}
		case label == "nccl:all_reduce":
			seq++
			if s, _ := e.OpSeq(); e.Comm != 1 || s != 1 || e.Start != 100 {
				t.Errorf("Flight Recorder's op %+v; want comm 1, #1, at 100 ns", e)
			}
			if want := map[int32]uint8{0: timeline.StatusShadow, 1: timeline.StatusShadow, 2: timeline.StatusOK}[e.Device]; e.Status != want {
				t.Errorf("rank %d's Flight Recorder op: status %d; want %d (a shadow where Inspector measured the rank)", e.Device, e.Status, want)
			}
			if e.Status == timeline.StatusShadow {
				shadows++
			}
		case strings.HasSuffix(label, "(started)"):
			if e.Status != timeline.StatusPending {
				t.Errorf("pending op's status %d; want it left pending", e.Status)
			}
		default:
			t.Errorf("event %+v labelled %q", e, label)
		}
		if h := map[int32]uint16{0: 0, 1: 1, 2: timeline.NoHost}[e.Device]; e.Device >= 0 && e.Host != h {
			t.Errorf("rank %d on host %d; want %d (node0 0, node1 1, rank 2 of no host NoHost)", e.Device, e.Host, h)
		}
	}
	if measured != 2 || seq != 3 || shadows != 2 {
		t.Errorf("%d measured, %d sequence-numbered, %d shadows; want 2, 3, 2", measured, seq, shadows)
	}
	hosts := map[int32]uint16{}
	for _, e := range j.Events {
		if h, ok := hosts[e.Device]; ok && h != e.Host {
			t.Errorf("rank %d on hosts %d and %d", e.Device, h, e.Host)
		}
		hosts[e.Device] = e.Host
	}
	if names := timeline.HostNames(timeline.Meta{Extra: j.Extra}); names[0] != "node0" || names[1] != "node1" || len(names) != 2 || j.Extra[timeline.HostsInEventsKey] != "1" {
		t.Errorf("extra %v; want the events to carry hosts, 0 named node0 and 1 node1", j.Extra)
	}
	if hosts[0] == hosts[1] || hosts[2] == hosts[0] || hosts[2] == hosts[1] {
		t.Errorf("hosts by rank %v; want node0, node1 and unknown told apart", hosts)
	}
	if j.Extra["comm.2"] != "0xabc world (3 ranks)" {
		t.Errorf("extra %v; want Inspector's comm.1 as comm.2", j.Extra)
	}
	if w := strings.Join(j.Warnings, "\n"); !strings.Contains(w, "not aligned further, so no duration is taken across them") || !strings.Contains(w, "2 completed ops") {
		t.Errorf("warnings %q; want the clocks and the shadows said", w)
	}
}

// Parts of different job sizes are refused, naming both parts' files; a part numbered by host
// and pid is joined with a warning saying so.
func TestPartsRefuseOtherJobs(t *testing.T) {
	a := Part{Format: "Flight Recorder", Files: "fr/nccl_trace_rank_0 and 3 more", Strings: timeline.NewStrings(), World: 4, Ranked: true}
	b := Part{Format: "NCCL Inspector", Files: "insp/node0-pid1.log and 7 more", Strings: timeline.NewStrings(), World: 8, Ranked: true, Measures: true}
	_, err := Parts([]Part{a, b})
	var me *MismatchError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), a.Files) || !strings.Contains(err.Error(), b.Files) || !strings.Contains(err.Error(), "4 ranks, 8 ranks") {
		t.Errorf("Parts of 4 and 8 ranks: %v; want a MismatchError naming both parts and sizes", err)
	}
	b.World, b.Ranked = 0, false
	j, err := Parts([]Part{a, b})
	if err != nil || !strings.Contains(strings.Join(j.Warnings, "\n"), b.Files+" numbers its processes by host and pid") {
		t.Errorf("a part by host and pid: %v, warnings %q; want joined, with a warning naming it", err, j.Warnings)
	}
}

// Two parts naming a rank's host differently (Inspector's hostname, RAS's address) are joined: the
// first part's host is kept, in the meta and on the events, and a warning names the rank, both
// hosts and both parts' files; a host only the second names is taken from it.
func TestPartsHostsDiffer(t *testing.T) {
	a := Part{Format: "NCCL Inspector", Files: "insp/node0-pid1.log", Strings: timeline.NewStrings(), World: 4, Ranked: true,
		Hosts: map[int32]string{0: "node0", 3: "node1"}}
	b := Part{Format: "NCCL RAS", Files: "ras.json", Strings: timeline.NewStrings(), World: 4, Ranked: true,
		Hosts: map[int32]string{0: "node0", 2: "node1", 3: "10.0.0.2"}}
	a.Events = []timeline.Event{coll(a.Strings, 3, 1, 1, 0, 0, 10, "AllReduce")}
	j, err := Parts([]Part{a, b})
	if err != nil {
		t.Fatal(err)
	}
	// node0 is host 0 (rank 0's), node1 host 1: rank 3 on the first part's node1, as rank 2.
	if j.Extra[timeline.HostsInEventsKey] != "1" || j.Extra[timeline.HostNameKey(0)] != "node0" || j.Extra[timeline.HostNameKey(1)] != "node1" || j.Extra[timeline.HostNameKey(2)] != "" {
		t.Errorf("hosts %v; want the events to carry hosts 0 node0 and 1 node1, and no third", j.Extra)
	}
	if len(j.Events) != 1 || j.Events[0].Host != 1 {
		t.Errorf("events %+v; want rank 3's on host 1 (node1)", j.Events)
	}
	w := strings.Join(j.Warnings, "\n")
	if want := "the parts name the host of 1 rank differently (the first named is kept): rank 3: node1 (insp/node0-pid1.log), 10.0.0.2 (ras.json)"; !strings.Contains(w, want) {
		t.Errorf("warnings %q lack %q", w, want)
	}
}

// The hosts the parts name reach the one host map (join.PlaceHosts): each rank's events carry its
// host's number (one name, one number, by the lowest rank on it), the description names the
// hosts; a rank no part placed carries timeline.NoHost, which the map leaves unplaced, and a
// warning says how many ranks were named and which was not.
func TestPartsHostsOfSomeRanks(t *testing.T) {
	for _, c := range []struct {
		name  string
		hosts map[int32]string
		want  map[int32]uint16 // each rank's host in its events
		warn  string
	}{
		{"every rank", map[int32]string{0: "node-b", 1: "node-a", 2: "node-b"}, map[int32]uint16{0: 0, 1: 1, 2: 0}, ""},
		{"rank 1 of none", map[int32]string{0: "node-b", 2: "node-a"}, map[int32]uint16{0: 0, 1: timeline.NoHost, 2: 1},
			"the sources name the hosts of 2 ranks but not of 1 others (rank 1 the first): their hosts are unknown"},
		{"none", nil, map[int32]uint16{0: 0, 1: 0, 2: 0}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := Part{Format: "NCCL Inspector", Files: "insp", Strings: timeline.NewStrings(), World: 3, Ranked: true, Hosts: c.hosts}
			for r := int32(0); r < 3; r++ {
				a.Events = append(a.Events, coll(a.Strings, r, 1, 1, 0, 0, 10, "AllReduce"))
			}
			j, err := Parts([]Part{a})
			if err != nil {
				t.Fatal(err)
			}
			m := timeline.Meta{Extra: j.Extra}
			if got := m.HostsInEvents(); got != (c.hosts != nil) {
				t.Errorf("hosts in events %v; want %v (extra %v)", got, c.hosts != nil, j.Extra)
			}
			for _, e := range j.Events {
				if e.Host != c.want[e.Device] {
					t.Errorf("rank %d on host %d; want %d", e.Device, e.Host, c.want[e.Device])
				}
			}
			names := timeline.HostNames(m)
			if c.hosts != nil && (len(names) != 2 || names[0] != "node-b" || names[1] != "node-a") {
				t.Errorf("host names %v; want 0 node-b, 1 node-a", names)
			}
			w := strings.Join(j.Warnings, "\n")
			if c.warn != "" && !strings.Contains(w, c.warn) || c.warn == "" && strings.Contains(w, "name the hosts of") {
				t.Errorf("warnings %q; want %q", w, c.warn)
			}
		})
	}
}
