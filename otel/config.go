package otel

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/xfertop/xfertop/timeline"
)

// Defaults of the volume and back-pressure controls.
const (
	DefaultServiceName   = "xfertop"
	DefaultSampleRatio   = 1.0              // every step
	DefaultMinSpan       = 0                // every span
	DefaultQueue         = 64               // batches of events waiting for the span builder
	DefaultBatch         = 4096             // events per batch
	DefaultExportTimeout = 3 * time.Second  // one export attempt
	DefaultRetryFor      = 10 * time.Second // retries of a failed export, then its spans count as dropped
	// DefaultShutdownTimeout is how long the end of a run waits for the collector to take the spans
	// still queued; what it has not taken by then is counted as dropped. A collector that refuses
	// connections is given up at once.
	DefaultShutdownTimeout = time.Second
	// DefaultMaxRate is the span budget: above it, whole steps are skipped (and counted) so that
	// exporting never takes the engine's CPU. A paced run of the default scenario makes ~200 spans/s;
	// an unpaced simulation can make over 250 000.
	DefaultMaxRate = 10_000
)

// Config configures the export. The zero value exports nothing; Resolve fills it from flags and the
// standard OTEL_* variables.
type Config struct {
	Endpoint      string  // URL (http://host:port, https://host:port) or host:port (plaintext)
	Protocol      string  // "grpc" or "http/protobuf"
	Insecure      bool    // plaintext (set for http:// endpoints and host:port)
	ServiceName   string  // service.name
	SampleRatio   float64 // fraction of steps exported, whole steps together
	MinSpan       time.Duration
	Epoch         time.Time // wall-clock time of session time 0
	Scenario      string
	Queue         int
	Batch         int
	ExportTimeout time.Duration
	RetryFor      time.Duration
	// ShutdownTimeout bounds how long Close waits for the collector (0: DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	MaxRate         float64 // spans per second; 0: no limit
	// NoMetrics turns the OTLP metrics off (OTEL_METRICS_EXPORTER=none): spans only.
	NoMetrics bool
	// Detail is DetailSpans (the default) or DetailFull (every event, rebuildable exactly).
	Detail string
	// Meta describes the run; it travels on every host's resource (xfertop.meta.*), so that a
	// receiver analyses the events as the run itself does.
	Meta timeline.Meta
}

// Resolve builds a config from the --otlp flag value (may be empty) and the environment:
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT, ..._TRACES_PROTOCOL /
// ..._PROTOCOL, ..._INSECURE, OTEL_SERVICE_NAME and OTEL_METRICS_EXPORTER (otlp or none). (Headers, TLS certificates, timeouts and
// compression are read by the OTLP exporters themselves; OTEL_RESOURCE_ATTRIBUTES by the resource.)
// ok is false when neither the flag nor the environment asks for export.
func Resolve(flagEndpoint string, getenv func(string) string) (cfg Config, ok bool, err error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg = Config{SampleRatio: DefaultSampleRatio, MinSpan: DefaultMinSpan, Queue: DefaultQueue, Batch: DefaultBatch,
		ExportTimeout: DefaultExportTimeout, RetryFor: DefaultRetryFor, ShutdownTimeout: DefaultShutdownTimeout, ServiceName: DefaultServiceName, MaxRate: DefaultMaxRate}
	cfg.Endpoint = flagEndpoint
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if cfg.Endpoint == "" {
			cfg.Endpoint = getenv(k)
		}
	}
	if cfg.Endpoint == "" {
		return cfg, false, nil
	}
	cfg.Protocol = getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if cfg.Protocol == "" {
		cfg.Protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if cfg.Protocol == "" {
		cfg.Protocol = "grpc"
	}
	switch cfg.Protocol {
	case "grpc", "http/protobuf":
	default:
		return cfg, false, fmt.Errorf("OTLP protocol %q: xfertop exports over grpc or http/protobuf", cfg.Protocol)
	}
	switch m := getenv("OTEL_METRICS_EXPORTER"); m {
	case "", "otlp":
	case "none":
		cfg.NoMetrics = true
	default:
		return cfg, false, fmt.Errorf("OTEL_METRICS_EXPORTER %q: xfertop exports metrics over otlp, or none", m)
	}
	if n := getenv("OTEL_SERVICE_NAME"); n != "" {
		cfg.ServiceName = n
	}
	switch strings.ToLower(getenv("OTEL_EXPORTER_OTLP_TRACES_INSECURE") + getenv("OTEL_EXPORTER_OTLP_INSECURE")) {
	case "true", "truetrue":
		cfg.Insecure = true
	}
	if !strings.Contains(cfg.Endpoint, "://") {
		// host:port: plaintext, as collectors listen on a local network or loopback.
		cfg.Endpoint, cfg.Insecure = "http://"+cfg.Endpoint, true
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return cfg, false, fmt.Errorf("OTLP endpoint %q: give http://host:port, https://host:port or host:port", cfg.Endpoint)
	}
	if u.Scheme == "http" {
		cfg.Insecure = true
	}
	return cfg, true, nil
}
