#!/usr/bin/env bash
# Builds a real OpenTelemetry Collector from the Go module proxy with the Collector builder (ocb),
# once, into a cache, and prints the binary's path. Pinned: builder and core components v0.155.0,
# and the contrib Prometheus exporter v0.155.0 (the one contrib version of it the proxy serves; the
# core components must match its Collector API, hence v0.155.0 throughout).
#
#   OTELCOL_BIN=$(bash .ci/otelcol.sh)      # minutes the first time on 2 cores, then instant
#   "$OTELCOL_BIN" --config=file:cfg.yaml    # receivers: otlp; processors: batch;
#                                            # exporters: otlp (gRPC), prometheus
#
# Never run it without a config that names 127.0.0.1 for every listener: the OTLP receiver's
# defaults bind all interfaces. The tests (cmd/xfertop/listen_collector_test.go) write such configs.
set -euo pipefail
V=v0.155.0
cache="${XFER_OTELCOL_CACHE:-$HOME/.cache/xfertop-otelcol}"
bin="$cache/otelcol-xfertop-$V"

if [ ! -x "$bin" ]; then
  W=$(mktemp -d)
  trap 'rm -rf "$W"' EXIT
  mkdir -p "$cache"
  (
    cd "$W"
    GOBIN="$W/bin" go install "go.opentelemetry.io/collector/cmd/builder@$V" >&2
    cat > builder.yaml <<EOM
dist:
  name: otelcol-xfertop
  description: OpenTelemetry Collector for xfertop's CI (OTLP in, batch, OTLP and Prometheus out)
  output_path: $W/dist
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver $V
processors:
  - gomod: go.opentelemetry.io/collector/processor/batchprocessor $V
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/otlpexporter $V
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter $V
EOM
    # -trimpath and no debug info: a smaller binary and a build that does not depend on the path.
    "$W/bin/builder" --config=builder.yaml --ldflags='-s -w' >&2
    mv "$W/dist/otelcol-xfertop" "$bin.tmp"
    mv "$bin.tmp" "$bin"
  )
fi
echo "$bin"
