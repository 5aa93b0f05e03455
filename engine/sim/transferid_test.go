package sim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/engine"
	"github.com/xfertop/xfertop/timeline"
)

// SendBuffers' and ReceiveBuffers' ops are numbered as every other op is, from the client's op
// counter, whatever the transfer's key (crosshost packs step and pairing into it): the watchdog
// names "send op 3", a number a person can say and search for, not the key and index packed into
// 17 digits. Both halves of a buffer share the id, posted in either order, and a key used again
// after both halves were posted gets a new one.
func TestTransferOpIDs(t *testing.T) {
	const key = uint64(1)<<28 | 6 // crosshost's first step, pairing 0, pair 6
	c, store, _ := faultSim(t, "h100x8x2")
	buf := func(d engine.DeviceID) *engine.Buffer {
		ev, err := c.Record(c.ComputeStream(d))
		if err != nil {
			t.Fatal(err)
		}
		return c.NewBuffer(d, 1<<20, ev)
	}
	before := c.NewOpID()
	if _, err := c.ReceiveBuffers(key, 8, []int64{1 << 20}, []engine.DeviceID{0}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendBuffers(key, []*engine.Buffer{buf(0)}, []engine.DeviceID{8}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendBuffers(key, []*engine.Buffer{buf(1), buf(2)}, []engine.DeviceID{9, 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReceiveBuffers(key, 9, []int64{1 << 20}, []engine.DeviceID{1}); err != nil {
		t.Fatal(err)
	}
	// Buffer 1 of the second use of key is never received: the watchdog names its send (its event
	// is emitted, failed, as the run ends).
	err := c.Run(context.Background())
	var wd *engine.WatchdogError
	if !errors.As(err, &wd) || wd.OpID != before+3 || !strings.Contains(err.Error(), fmt.Sprintf("send op %d from rank 2", before+3)) {
		t.Fatalf("run ended with %v; want the watchdog naming send op %d from rank 2", err, before+3)
	}
	ids := map[uint64]int{}
	for _, e := range store.Events() {
		if e.Kind == timeline.KindSend || e.Kind == timeline.KindRecv {
			ids[e.Op]++
		}
	}
	if want := map[uint64]int{before + 1: 2, before + 2: 2, before + 3: 1}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("send and receive op ids %v (count of events each); want %v", ids, want)
	}
}
