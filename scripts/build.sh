#!/usr/bin/env bash
# Builds xfertop as it is released, into bin/xfertop (or the path given):
#
#   scripts/build.sh [OUT]
#
# On amd64 it builds with GOEXPERIMENT=simd, Go's vector intrinsics (simd/archsimd, Go 1.26): the
# Kineto/Chrome JSON importer then finds a string's end 32 bytes at a time with AVX2 where the
# portable build takes eight (importers/kineto/strstop_simd.go; on a CPU without AVX2 the same
# binary reads words, as the portable one does). Both builds import the same events; the vector
# one imports the shared ResNet-50 trace, whose names are long, with about 1.1 times less CPU, and
# the benchmark's traces of short names alike (docs/performance.md, "Sixth round"). Elsewhere,
# and with XFERTOP_PORTABLE=1, it is the plain `go build`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="${1:-bin/xfertop}"
exp=""
if [ "$(go env GOARCH)" = amd64 ] && [ -z "${XFERTOP_PORTABLE:-}" ]; then
  exp=simd
fi
GOEXPERIMENT="$exp" go build -trimpath -o "$out" ./cmd/xfertop
echo "build.sh: $out ($(go version | cut -d' ' -f3-)${exp:+, GOEXPERIMENT=$exp})" >&2
