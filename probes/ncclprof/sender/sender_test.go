package sender

import (
	"os"
	"strings"
	"testing"

	"github.com/xfertop/xfertop/attach"
	"github.com/xfertop/xfertop/probes/ncclprof/fold"
	"github.com/xfertop/xfertop/timeline"
)

func TestConfigFromEnv(t *testing.T) {
	for _, c := range []struct {
		name  string
		env   map[string]string
		err   string
		check func(Config) bool
	}{
		{"defaults", nil, "", func(c Config) bool {
			return c.Mask == fold.MaskColl && c.Ring == DefaultRing && c.Attach != nil && c.Attach.Address == attach.DefaultSocket() && c.GlobalRank == -1
		}},
		{"record dir only: no console tried", map[string]string{EnvRecordDir: "/tmp/r"}, "", func(c Config) bool { return c.Attach == nil && c.RecordDir == "/tmp/r" }},
		{"both", map[string]string{EnvRecordDir: "/tmp/r", attach.EnvAttach: "tcp::9"}, "", func(c Config) bool {
			return c.Attach != nil && c.Attach.Network == "tcp" && c.RecordDir != ""
		}},
		{"ring rounded up to a power of two", map[string]string{EnvRing: "1000"}, "", func(c Config) bool { return c.Ring == 1024 }},
		{"rank", map[string]string{EnvRank: "12", EnvEvents: "api"}, "", func(c Config) bool { return c.GlobalRank == 12 && c.Mask == fold.MaskAPI }},
		{"bad level", map[string]string{EnvEvents: "loud"}, EnvEvents, nil},
		{"bad ring", map[string]string{EnvRing: "3"}, EnvRing, nil},
		{"bad flush", map[string]string{EnvFlushMs: "-1"}, EnvFlushMs, nil},
		{"bad address", map[string]string{attach.EnvAttach: "tcp:x"}, attach.EnvAttach, nil},
		{"tag names", map[string]string{EnvTags: "1=forward, 0x2=backward pass,42=tp"}, "", func(c Config) bool {
			return len(c.TagNames) == 3 && c.TagNames[1] == "forward" && c.TagNames[2] == "backward pass" && c.TagNames[42] == "tp"
		}},
		{"tag without a name", map[string]string{EnvTags: "1=fwd,2"}, `item 2 ("2")`, nil},
		{"tag not a number", map[string]string{EnvTags: "fwd=1"}, EnvTags, nil},
		{"tag 0 is none", map[string]string{EnvTags: "0=x"}, EnvTags, nil},
		{"chain path too long", map[string]string{EnvChain: strings.Repeat("x", MaxChainPath+1)}, EnvChain, nil},
		{"NCCL's host id is the host", map[string]string{EnvNCCLHostID: "fake-host-1"}, "", func(c Config) bool { return c.Host == "fake-host-1" }},
		{"else the machine's name", nil, "", func(c Config) bool { h, _ := os.Hostname(); return c.Host == h }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ConfigFromEnv(func(k string) string { return c.env[k] })
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one naming %s", err, c.err)
				}
				return
			}
			if err != nil || !c.check(cfg) {
				t.Fatalf("%+v, %v", cfg, err)
			}
		})
	}
}

func rec(op fold.RecOp, typ, id uint64, t int64) *fold.Record {
	r := &fold.Record{Op: op, Type: typ, ID: id, T: t, Ctx: 1, B: 256}
	copy(r.Func[:], "AllReduce")
	copy(r.Dtype[:], "ncclFloat32")
	return r
}

// The plugin's cost: the mean time of the callbacks timed (picoseconds), and every callback that
// did work (records folded and drops) at that cost, per million ns of the operations folded.
func TestCost(t *testing.T) {
	s := New(Config{Mask: fold.MaskAPI, GlobalRank: 3, Batch: 1000}, 0, 0)
	s.Comm(1, fold.Comm{Hash: 7, NRanks: 4, Rank: 3}, 0, 7)
	s.Add(rec(fold.RecStart, fold.TypeColl, 1, 1_000))
	s.cost(5_000, Counters{CostNs: 640, CostSamples: 8})
	s.Add(rec(fold.RecStop, fold.TypeColl, 1, 21_000)) // a collective of 20 µs
	s.cost(30_000, Counters{CostNs: 640, CostSamples: 8, Dropped: 2})
	var got []timeline.Event
	for _, e := range s.events {
		if e.Kind == timeline.KindDeviceSample {
			got = append(got, e)
		}
	}
	// Before the collective ended only the time per callback is known: 2 callbacks at 80 ns,
	// then 4 (2 records, 2 drops): 320 ns of 20 µs is 16,000 ppm.
	want := []struct {
		m     timeline.SampleMetric
		v     int64
		calls uint64
	}{{timeline.SampleProfilerCallbackPs, 80_000, 1}, {timeline.SampleProfilerCallbackPs, 80_000, 4}, {timeline.SampleProfilerOverheadPPM, 16_000, 4}}
	if len(got) != len(want) {
		t.Fatalf("%d cost samples %+v; want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if g := got[i]; timeline.SampleMetric(g.Sub) != w.m || g.Bytes != w.v || g.Op != w.calls || g.Device != 3 {
			t.Errorf("sample %d: %+v; want metric %d value %d callbacks %d on device 3", i, g, w.m, w.v, w.calls)
		}
	}
	// Nothing timed yet: nothing is known, nothing is sent.
	s2 := New(Config{Mask: fold.MaskAPI}, 0, 0)
	s2.Comm(1, fold.Comm{Hash: 7, NRanks: 1}, 0, 7)
	s2.takeInits()
	s2.cost(1, Counters{})
	if len(s2.events) != 1 || s2.events[0].Kind != timeline.KindCommInit {
		t.Errorf("a cost sent with no callback timed: %+v", s2.events)
	}
	// Callbacks timed, but none of their records folded yet (the ring not drained when the
	// counters were read): a time per callback over no callbacks is not sent either.
	s2.cost(2, Counters{CostNs: 640, CostSamples: 8})
	if len(s2.events) != 1 {
		t.Errorf("a cost sent over no callback folded: %+v", s2.events[1:])
	}
}
