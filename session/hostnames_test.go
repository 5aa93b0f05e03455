package session

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// writeNamedLate writes a recording whose ranks named their hosts after its Meta chunk, as
// `attach --record` writes one: host 0 before its events, host 1 between them.
func writeNamedLate(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "attach.xfr")
	w, err := recordings.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	meta := recordings.Meta{Source: "attach", Backend: "nccl", Topology: "unknown", Extra: map[string]string{timeline.HostsInEventsKey: "1"}}
	kernel := func(dev int32, host uint16, start int64) timeline.Event {
		return timeline.Event{Kind: timeline.KindKernel, Start: start, End: start + 500, Queued: start, Device: dev, Host: host, Peer: timeline.NoDevice, Stream: 1}
	}
	for _, err := range []error{
		w.WriteMeta(meta),
		w.WriteHostNames([]recordings.HostName{{Host: 0, Name: "node-a"}}),
		w.WriteEvents([]timeline.Event{kernel(0, 0, 0), kernel(0, 0, 1000)}),
		w.WriteHostNames([]recordings.HostName{{Host: 1, Name: "node-b"}}),
		w.WriteEvents([]timeline.Event{kernel(1, 1, 2000), kernel(0, 0, 3000)}),
		w.Close(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// The hosts' names a recording holds after its Meta chunk reach the headless replay's report
// and the console's replay, as the live session's analysis had them.
func TestReplayHostNamesLearnedLate(t *testing.T) {
	path := writeNamedLate(t)
	want := map[int32]string{0: "node-a", 1: "node-b"}
	got, err := Replay(context.Background(), ReplayConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	rep := got.Report()
	if len(rep.Hosts) != 2 {
		t.Fatalf("the replay's report places %d devices on hosts; want 2", len(rep.Hosts))
	}
	for _, h := range rep.Hosts {
		if h.Host == nil || h.HostName == nil || *h.HostName != want[*h.Host] {
			host, name := "unknown", "no name"
			if h.Host != nil {
				host = fmt.Sprint(*h.Host)
			}
			if h.HostName != nil {
				name = *h.HostName
			}
			t.Errorf("the replay's report: device %d on host %s named %s; want its host named as the recording names it (%v)", h.Device, host, name, want)
		}
	}
	if names := timeline.HostNames(got.Meta); len(names) != 2 || names[1] != "node-b" {
		t.Errorf("the replay's description names %v; want %v", names, want)
	}
	rs, err := StartReplay(context.Background(), ReplayConfig{Path: path}, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Stop()
	waitFor(t, "the console's replay done", rs.Done)
	_, res := rs.Analysed(nil)
	for h, name := range want {
		if n, ok := res.Hosts.Name(h); !ok || n != name {
			t.Errorf("the console's replay names host %d %q (%v); want %q", h, n, ok, name)
		}
	}
}
