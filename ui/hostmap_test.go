package ui

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/xfertop/xfertop/analysis"
	"github.com/xfertop/xfertop/join"
	"github.com/xfertop/xfertop/join/jointest"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/report"
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/views/cluster"
	timelineview "github.com/xfertop/xfertop/ui/views/timeline"
)

// ranksOnTwoHosts is an attach-like job as the plugin's recordings of it merge: two ranks, each
// naming its own host, rank 1's file given first, so that the join numbers rank 1's host 0 and
// rank 0's host 1 (the hosts the ranks reported, not their ids over a count of GPUs per host).
// Both ranks run an all-reduce; rank 1 then posts a second that rank 0 never posts: a hang whose
// culprit is rank 0.
func ranksOnTwoHosts(t *testing.T) (*fakeSource, []timeline.Event, timeline.Meta, *timeline.Strings) {
	t.Helper()
	dir := t.TempDir()
	const epoch = 1_700_000_000_000_000_000
	var paths []string
	for _, r := range []struct {
		host string
		rank int32
	}{{"node-b", 1}, {"node-a", 0}} {
		evs := jointest.RankEvents(r.rank, uint32(r.rank), 1_000_000)
		if r.rank == 1 {
			evs = append(evs, timeline.Event{Kind: timeline.KindMark, Label: 2, Start: 2_000_000, End: 2_000_000, Queued: -1, Device: 1,
				Stream: 1, Op: 9, Comm: 9, Peer: 1, Ranks: 2, Bytes: 1024, Sub: uint8(timeline.CollAllReduce)})
		}
		path := filepath.Join(dir, fmt.Sprintf("rank%d.xfr", r.rank))
		f := jointest.RankFile{Host: r.host, PID: 100 + int(r.rank), Rank: fmt.Sprint(r.rank), Epoch: epoch, Events: evs}
		w, err := recordings.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		// The plugin's labels: the communicator's name, and its posting marks' label.
		if err := errors.Join(w.WriteMeta(f.Meta()), w.WriteStrings(1, []string{"comm world", join.PostedLabel}), w.WriteEvents(f.Events),
			w.WriteOutcome([][2]string{{"ended", ""}}), w.Close()); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	m, err := join.MergeRecordings(paths, recordings.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	strs := m.Strings()
	win := timeline.NewWindow(1<<20, strs)
	var evs []timeline.Event
	for m.Next() {
		for _, e := range m.At() {
			evs = append(evs, e)
			win.Emit(&e)
		}
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	meta := m.Meta()
	return &fakeSource{win: win, info: SourceInfo{Name: "merged", Meta: meta}, status: Status{Speed: 1, Done: true}}, evs, meta, strs
}

// The cluster view shows an attach-like job's ranks under the hosts they reported (rank 0 on
// host 1, named node-a; rank 1 on host 0, node-b), and the diagnosis's hang names rank 0's
// reported host by its name, in the console's findings and the report alike (the number stays
// the key: the report's host 1). Before the one host map, the view put both ranks on one host
// (no count of GPUs per host) and the finding named no host; before the map carried the names,
// the view and the findings showed the join's numbers alone.
func TestClusterHostsFromRanks(t *testing.T) {
	src, evs, meta, strs := ranksOnTwoHosts(t)
	m := sized(src, 120, 30)
	press(m, "8")
	cv := paneAt[*cluster.Model](m, TabCluster)
	for dev, want := range map[int32]string{0: "node-a", 1: "node-b"} {
		if got, ok := cv.HostOf(dev); !ok || got != want {
			t.Errorf("cluster view lists gpu %d under host %q (%v); want host %s, the host its rank named", dev, got, ok, want)
		}
	}
	out := ansi.Strip(m.View().Content)
	if !strings.Contains(out, "cluster (2 hosts × 1 GPU)") {
		t.Errorf("cluster view:\n%s\nwant 2 hosts of 1 GPU", out)
	}

	an := analysis.New(meta)
	for i := range evs {
		an.Emit(&evs[i])
	}
	res := an.Result(strs)
	var hang *report.Finding
	rep := report.Build(res, meta, report.Run{})
	for i := range rep.Findings {
		if f := &rep.Findings[i]; f.Rank != nil && *f.Rank == 0 {
			hang = f
		}
	}
	if hang == nil {
		t.Fatalf("report findings %+v; want one naming rank 0", rep.Findings)
	}
	if hang.Host == nil || *hang.Host != 1 || !strings.Contains(hang.Culprit, "rank 0 (host node-a)") ||
		hang.HostName == nil || *hang.HostName != "node-a" {
		t.Errorf("report finding: culprit %q, host %v, host_name %v; want rank 0 on host 1, node-a, the host it named", hang.Culprit, hang.Host, hang.HostName)
	}
	press(m, "9")
	if out := ansi.Strip(m.View().Content); !strings.Contains(out, "rank 0 (host node-a)") {
		t.Errorf("findings view:\n%s\nwant rank 0 named on host node-a", out)
	}
	press(m, "8")
	sameHosts(t, cv, rep, 2)
	// The timeline groups the streams under the same hosts.
	press(m, "2")
	host := -2
	under := map[int32]int{}
	for _, r := range paneAt[*timelineview.Model](m, TabTimeline).Rows() {
		switch {
		case r.HostHeader:
			host = r.Host
		case r.Header:
			under[r.Device] = host
		}
	}
	if under[0] != 1 || under[1] != 0 {
		t.Errorf("timeline lists device 0 under host %d, device 1 under host %d; want 1 and 0", under[0], under[1])
	}
}

// sameHosts checks that the console's cluster view, the report and the diagnosis's findings give
// each device one host: the report's for every device it lists (want of them), the view's for the
// same device, and every finding's for its culprit rank.
func sameHosts(t *testing.T, cv *cluster.Model, rep *report.Report, want int) {
	t.Helper()
	if len(rep.Hosts) != want {
		t.Errorf("report places %d devices (%+v); want %d", len(rep.Hosts), rep.Hosts, want)
	}
	byDev := map[int32]string{}
	for _, dh := range rep.Hosts {
		h := "?"
		if dh.Host != nil {
			h = fmt.Sprint(*dh.Host)
		}
		byDev[dh.Device] = h
		if dh.HostName != nil { // the view shows a host by its name where a source named it
			h = *dh.HostName
		}
		if got, ok := cv.HostOf(dh.Device); !ok || got != h {
			t.Errorf("device %d: the report's host %s, the cluster view's %q (%v)", dh.Device, h, got, ok)
		}
	}
	for _, f := range rep.Findings {
		if f.Rank == nil {
			continue
		}
		h := "?"
		if f.Host != nil {
			h = fmt.Sprint(*f.Host)
		}
		if h != byDev[*f.Rank] {
			t.Errorf("finding %q names rank %d on host %s; the report places it on %s", f.Culprit, *f.Rank, h, byDev[*f.Rank])
		}
	}
}

// A topology job's stray device (an id past its hosts: here 100 in a job of 2 hosts of 8) is on
// the host its id says (100 / 8 = 12), in the console's cluster view and the report alike, not on
// the host after the last (host 2), where its place in the list of devices (the 17th) put it.
func TestClusterStrayDeviceByID(t *testing.T) {
	meta := timeline.Meta{Source: "sim", Backend: "sim", Topology: "h100x8x2", Devices: 16, GPUsPerHost: 8}
	strs := timeline.NewStrings()
	win := timeline.NewWindow(1<<20, strs)
	var evs []timeline.Event
	for _, d := range []int32{0, 3, 9, 15, 100} {
		e := timeline.Event{Kind: timeline.KindKernel, Device: d, Peer: -1, Host: uint16(d / 8), Stream: 1, Queued: -1, Start: 0, End: 1_000_000}
		evs = append(evs, e)
		win.Emit(&e)
	}
	src := &fakeSource{win: win, info: SourceInfo{Name: "stray", Meta: meta}, status: Status{Speed: 1, Done: true}}
	m := sized(src, 120, 30)
	press(m, "8")
	cv := paneAt[*cluster.Model](m, TabCluster)
	for dev, want := range map[int32]string{0: "0", 9: "1", 15: "1", 100: "12"} {
		if got, ok := cv.HostOf(dev); !ok || got != want {
			t.Errorf("cluster view lists gpu %d under host %q (%v); want host %s", dev, got, ok, want)
		}
	}
	if !cv.GoHost(12, -1) {
		t.Error("GoHost(12): the stray device's host is not in the view")
	}
	if cv.GoHost(2, -1) {
		t.Error("GoHost(2): a host no device is on is in the view")
	}
	// :host says which hosts there are: 0, 1 and the stray device's 12, not "0 to 2".
	typeCmd(m, "host 2")
	if f := m.cmdView(); !strings.Contains(ansi.Strip(f), ":host 2: give one of the job's hosts: 0, 1, 12") {
		t.Errorf(":host 2: footer %q", ansi.Strip(f))
	}
	an := analysis.New(meta)
	for i := range evs {
		an.Emit(&evs[i])
	}
	rep := report.Build(an.Result(strs), meta, report.Run{})
	sameHosts(t, cv, rep, 5) // the devices that ran: the report lists no row for a device that did nothing
	if rep.HostsFrom != "topology" {
		t.Errorf("report hosts_from %q; want topology", rep.HostsFrom)
	}
}

// Above a screenful, the overview rolls an attach-like job's GPUs up under the hosts their ranks
// named (even ranks on host 0, odd on host 1), not by id over a count: expanding host 1 lists
// its odd ranks alone.
func TestOverviewHostsFromRanks(t *testing.T) {
	const ranks = 64
	meta := timeline.Meta{Source: "attach", Backend: "nccl", Topology: "unknown", Devices: ranks,
		Extra: map[string]string{timeline.HostsInEventsKey: "1"}}
	win := timeline.NewWindow(1<<20, timeline.NewStrings())
	for d := range int32(ranks) {
		e := timeline.Event{Kind: timeline.KindKernel, Device: d, Peer: -1, Host: uint16(d % 2), Stream: 1, Queued: -1, Start: 0, End: 1_000_000}
		win.Emit(&e)
	}
	m := sized(&fakeSource{win: win, info: SourceInfo{Name: "ranks", Meta: meta}, status: Status{Speed: 1, Done: true}}, 160, 45)
	rowsOf := func() []string {
		var out []string
		_, table, _ := strings.Cut(text(m), "\ngpu ")
		for _, l := range strings.Split(table, "\n") {
			if f := strings.Fields(l); len(f) > 0 && (strings.HasPrefix(f[0], "▸h") || strings.HasPrefix(f[0], "▾h") || isNum(f[0])) {
				out = append(out, f[0])
			}
		}
		return out
	}
	if r := rowsOf(); len(r) != 2 || r[0] != "▸h0" || r[1] != "▸h1" {
		t.Fatalf("64 ranks on 2 named hosts: rows %v; want ▸h0, ▸h1", r)
	}
	press(m, "j", "enter")
	r := rowsOf()
	if len(r) != 2+ranks/2 || r[1] != "▾h1" {
		t.Fatalf("host 1 expanded: rows %v; want its 32 ranks under it", r)
	}
	for _, x := range r[2:] {
		if n, err := strconv.Atoi(x); err != nil || n%2 != 1 {
			t.Errorf("host 1 lists device %s; want its odd ranks alone", x)
		}
	}
}

// :host takes a host's name as well as its number (the name the rank gave its host), completes
// the names, and, given a host the job does not have, lists the hosts by name and number. The
// cluster view's breadcrumb and heatmap rows name the host. Before, :host node-b was refused.
func TestHostCommandByName(t *testing.T) {
	src, _, _, _ := ranksOnTwoHosts(t)
	m := sized(src, 120, 30)
	press(m, "8")
	cv := paneAt[*cluster.Model](m, TabCluster)
	typeCmd(m, "host node-b")
	if f := ansi.Strip(m.cmdView()); !strings.Contains(f, "host node-b (0): its GPUs") || cv.Level() != cluster.LevelHost {
		t.Errorf(":host node-b: footer %q, level %v; want host 0's GPUs", f, cv.Level())
	}
	if out := ansi.Strip(m.View().Content); !strings.Contains(out, "host node-b") {
		t.Errorf("cluster view after :host node-b:\n%s\nwant its breadcrumb to name node-b", out)
	}
	typeCmd(m, "host 1")
	if f := ansi.Strip(m.cmdView()); !strings.Contains(f, "host node-a (1): its GPUs") {
		t.Errorf(":host 1: footer %q; want host node-a (1)", f)
	}
	typeCmd(m, "host node-c")
	if f := ansi.Strip(m.cmdView()); !strings.Contains(f, ":host node-c: give one of the job's hosts, by name or number: node-b (0), node-a (1)") {
		t.Errorf(":host node-c: footer %q", f)
	}
	if _, c := m.candidates("host node-"); !slices.Equal(c, []string{"node-b", "node-a"}) {
		t.Errorf("completions of host node-: %q; want node-b, node-a", c)
	}
	cv.GoCluster()
	if out := ansi.Strip(m.View().Content); !strings.Contains(out, "node-a ") || !strings.Contains(out, "node-b ") {
		t.Errorf("cluster heatmap:\n%s\nwant its rows named node-b and node-a", out)
	}
}

// The cluster view's local column is a GPU's index on its host where the host map knows it (a
// topology's: gpu 3 is local 3 even with gpus 1 and 2 idle, and the stray gpu 100 local 4), and
// where it does not (ranks that named their hosts, not their GPUs) the GPU's place on its host,
// marked as a place (#0) and said so. Before, the column showed the place unmarked: gpu 3 as
// local 1, and a rank's place as if it were its CUDA device.
func TestClusterLocalColumn(t *testing.T) {
	rowOf := func(out string, gpu int) []string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == strconv.Itoa(gpu) {
				return f
			}
		}
		return nil
	}
	meta := timeline.Meta{Source: "sim", Backend: "sim", Topology: "h100x8x2", Devices: 16, GPUsPerHost: 8}
	win := timeline.NewWindow(1<<20, timeline.NewStrings())
	for _, d := range []int32{0, 3, 9, 15, 100} {
		e := timeline.Event{Kind: timeline.KindKernel, Device: d, Peer: -1, Host: uint16(d / 8), Stream: 1, Queued: -1, Start: 0, End: 1_000_000}
		win.Emit(&e)
	}
	m := sized(&fakeSource{win: win, info: SourceInfo{Name: "stray", Meta: meta}, status: Status{Speed: 1, Done: true}}, 160, 30)
	press(m, "8")
	for _, c := range []struct {
		host, gpu int
		local     string
	}{{0, 3, "3"}, {0, 0, "0"}, {1, 15, "7"}, {12, 100, "4"}} {
		typeCmd(m, "host "+strconv.Itoa(c.host))
		out := ansi.Strip(m.View().Content)
		if f := rowOf(out, c.gpu); len(f) < 2 || f[1] != c.local {
			t.Errorf("host %d: gpu %d's row %q; want local %s\n%s", c.host, c.gpu, f, c.local, out)
		}
		if strings.Contains(out, "its place on the host") {
			t.Errorf("host %d: a topology's GPUs are said to be shown by place:\n%s", c.host, out)
		}
	}

	src, _, _, _ := ranksOnTwoHosts(t)
	m = sized(src, 160, 30)
	press(m, "8")
	typeCmd(m, "host 1")
	out := ansi.Strip(m.View().Content)
	if f := rowOf(out, 0); len(f) < 2 || f[1] != "#0" || !strings.Contains(out, "local #N: its place on the host (GPU index unknown)") {
		t.Errorf("rank 0 on a host it named: row %q; want local #0, said to be its place:\n%s", f, out)
	}
}

// The overview's rolled-up rows name a host as its ranks named it (▸node-b), a host no source
// named by its number (▸h0); the filter takes the name too. Before, both rows were numbers.
func TestOverviewNamedHosts(t *testing.T) {
	const ranks = 64
	meta := timeline.Meta{Source: "attach", Backend: "nccl", Topology: "unknown", Devices: ranks,
		Extra: map[string]string{timeline.HostsInEventsKey: "1", timeline.HostNameKey(1): "node-b"}}
	win := timeline.NewWindow(1<<20, timeline.NewStrings())
	for d := range int32(ranks) {
		e := timeline.Event{Kind: timeline.KindKernel, Device: d, Peer: -1, Host: uint16(d % 2), Stream: 1, Queued: -1, Start: 0, End: 1_000_000}
		win.Emit(&e)
	}
	m := sized(&fakeSource{win: win, info: SourceInfo{Name: "ranks", Meta: meta}, status: Status{Speed: 1, Done: true}}, 160, 45)
	out := text(m)
	if !strings.Contains(out, "\n▸h0 ") || !strings.Contains(out, "\n▸node-b ") {
		t.Errorf("overview:\n%s\nwant rows ▸h0 and ▸node-b", out)
	}
	press(m, "/")
	for _, r := range "node-b" {
		press(m, string(r))
	}
	press(m, "enter")
	if out := text(m); !strings.Contains(out, "32 of 64 devices") {
		t.Errorf("filter node-b:\n%s\nwant host 1's 32 devices", out)
	}
}
