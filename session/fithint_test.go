package session

import (
	"errors"
	"strings"
	"testing"
)

// A scenario given a topology other than its own is told to use its own only when the topology
// is what does not fit: a wrong knob on a large topology is about the knob (its own topology
// refuses it too), and a 1,024-GPU user is not sent to a 16-GPU cluster.
func TestTopologyHintOnlyForFit(t *testing.T) {
	for _, c := range []struct {
		name     string
		cfg      Config
		hint     bool
		errorHas string
	}{
		{name: "unknown knob at 1,024 GPUs", cfg: Config{Scenario: "llm-train", Topology: "h100x8x4", Hosts: 128, Sets: map[string]string{"foo": "1"}},
			errorHas: `unknown knob "foo"`},
		{name: "tp no host divides", cfg: Config{Scenario: "llm-train", Topology: "h100x8x4", Hosts: 128, Sets: map[string]string{"tp": "3"}},
			errorHas: "tp 3 must divide"},
		{name: "unknown knob on another topology", cfg: Config{Scenario: "pipeline", Topology: "h100x8x4", Sets: map[string]string{"foo": "1"}},
			errorHas: `unknown knob "foo"`},
		{name: "too few hosts", cfg: Config{Scenario: "crosshost", Topology: "h100x8"}, hint: true, errorHas: "needs at least 2 hosts"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Steps = 1
			_, err := Prepare(c.cfg)
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.errorHas) {
				t.Fatalf("Prepare: %v; want a configuration error saying %q", err, c.errorHas)
			}
			if got := strings.Contains(err.Error(), "it was written for"); got != c.hint {
				t.Errorf("Prepare: %v; want the hint to use the scenario's own topology: %v", err, c.hint)
			}
		})
	}
}
