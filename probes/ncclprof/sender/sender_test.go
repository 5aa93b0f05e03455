package sender

import (
	"strings"
	"testing"

	"github.com/xfertop/xfertop/attach"
	"github.com/xfertop/xfertop/probes/ncclprof/fold"
)

func TestConfigFromEnv(t *testing.T) {
	for _, c := range []struct {
		name  string
		env   map[string]string
		err   string
		check func(Config) bool
	}{
		{"defaults", nil, "", func(c Config) bool {
			return c.Mask == fold.MaskKernel && c.Ring == DefaultRing && c.Attach != nil && c.Attach.Address == attach.DefaultSocket() && c.GlobalRank == -1
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
