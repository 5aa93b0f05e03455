package attach

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xfertop/xfertop/join/jointest"
	"github.com/xfertop/xfertop/recordings"
	"github.com/xfertop/xfertop/timeline"
)

// A live attach and a merge of the same ranks' recordings are one truth: the same events.
func TestMergeEqualsAttach(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	sockDir, err := os.MkdirTemp("", "xa")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	epoch := int64(7e9)
	files := []jointest.RankFile{
		{Host: "h", PID: 1, Rank: "0", Epoch: epoch + 300, Events: jointest.RankEvents(0, 0, 1000)},
		{Host: "h", PID: 2, Rank: "1", Epoch: epoch + 100, Events: jointest.RankEvents(1, 1, 1500)},
	}
	var paths []string
	for i, f := range files {
		p := filepath.Join(dir, "rank"+strconv.Itoa(i)+".xfr")
		jointest.WriteRank(t, p, f)
		paths = append(paths, p)
	}
	merged, _ := jointest.MergeAll(t, paths)

	// The same streams, sent to a console whose time 0 is the earliest rank's.
	k := &sink{}
	srv, err := Start(context.Background(), Config{Addr: Addr{"unix", filepath.Join(sockDir, "s")}, Epoch: epoch + 100}, k)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		c, err := Dial(srv.Addr(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := recordings.NewStreamWriter("test", c)
		err = errors.Join(w.WriteMeta(f.Meta()), w.WriteStrings(1, jointest.Labels), w.WriteEvents(f.Events), w.Close())
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !srv.Quiet(50*time.Millisecond) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	srv.Close()
	live := k.evs
	order := func(a, b timeline.Event) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Device, b.Device), cmp.Compare(a.Kind, b.Kind))
	}
	slices.SortFunc(live, order)
	slices.SortFunc(merged, order)
	if !slices.Equal(live, merged) {
		t.Errorf("attach received\n%+v\nthe merge of the recordings gave\n%+v", live, merged)
	}
}
