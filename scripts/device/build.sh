#!/usr/bin/env bash
# Builds, on a machine with Go (no GPU needed), everything a GPU machine without Go needs to run
# scripts/device/run.sh, into .device/ (git-ignored; it travels to the GPU machine as a carried path):
#
#   scripts/device/build.sh
#
# .device/kit.tar.gz holds, gzipped (the carried paths and the working tree may hold 64 MiB in all,
# and the binaries are about 68 MiB unpacked):
#   xfertop                       the command built with -tags cuda (the cuda backend, the simulator, attach)
#   cuda.test                     go test -c -tags cuda ./engine/cuda (the backend's GPU tests and benchmarks)
#   xfertop-cmd.test              go test -c -tags cuda ./cmd/xfertop (TestCUDAReportHasSimKeys and friends)
#   libnccl-profiler-xfertop.so   the NCCL profiler plugin (probes/ncclprof, -buildmode=c-shared)
#   BUILD                         the commit, the Go version and how it was built
# The cgo headers come from ../shared/scripts/cuda-sdk.sh (XFER_CUDA_SDK_SH overrides the path): the
# binaries link libcuda.so.1 dynamically, so the GPU machine's driver is the one they use.
# Fails if the working tree and .device together exceed the 64 MiB that travel to the GPU machine.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
sdk="${XFER_CUDA_SDK_SH:-../shared/scripts/cuda-sdk.sh}"
[ -f "$sdk" ] || { echo "build.sh: $sdk not found (set XFER_CUDA_SDK_SH to cuda-sdk.sh)" >&2; exit 2; }
eval "$(bash "$sdk")"
command -v "$(go env CC)" >/dev/null || { echo "build.sh: no C compiler ($(go env CC)): cgo is needed" >&2; exit 2; }

stage="$(mktemp -d /tmp/xfertop-device-build.XXXXXX)"
trap 'rm -rf "$stage"' EXIT
# -s -w: no symbol table or DWARF (the plugin keeps its dynamic symbols, which NCCL looks up).
ld=(-ldflags=-s\ -w)
echo "build.sh: xfertop (-tags cuda)" >&2
go build -tags cuda -trimpath "${ld[@]}" -o "$stage/xfertop" ./cmd/xfertop
echo "build.sh: engine/cuda test binary" >&2
go test -c -tags cuda "${ld[@]}" -o "$stage/cuda.test" ./engine/cuda
echo "build.sh: cmd/xfertop test binary (-tags cuda)" >&2
go test -c -tags cuda "${ld[@]}" -o "$stage/xfertop-cmd.test" ./cmd/xfertop
echo "build.sh: NCCL profiler plugin" >&2
go build -buildmode=c-shared -trimpath "${ld[@]}" -o "$stage/libnccl-profiler-xfertop.so" ./probes/ncclprof
rm -f "$stage/libnccl-profiler-xfertop.h"
# nm's output is read whole first: grep -q stops reading at its match, and under pipefail the
# SIGPIPE that nm then gets would fail the check.
syms=$(nm -D --defined-only "$stage/libnccl-profiler-xfertop.so")
for v in 4 5 6 7; do
  grep -q " ncclProfiler_v$v\$" <<<"$syms" ||
    { echo "build.sh: the plugin does not export ncclProfiler_v$v" >&2; exit 1; }
done
{
  echo "commit $(git rev-parse HEAD)$([ -z "$(git status --porcelain)" ] || echo ' (with uncommitted changes)')"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) with $(go version | cut -d' ' -f3-) by scripts/device/build.sh"
  echo "cgo $CGO_CFLAGS"
} >"$stage/BUILD"

mkdir -p .device
rm -f .device/kit.tar.gz
tar -C "$stage" -czf .device/kit.tar.gz .
(cd "$stage" && ls -l BUILD xfertop cuda.test xfertop-cmd.test libnccl-profiler-xfertop.so) >&2

# What travels: the tracked and untracked-but-not-ignored files of the working tree, and .device.
limit=$((64 << 20))
tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
kit=$(du -sb .device | cut -f1)
total=$((tree + kit))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "build.sh: .device $(mib "$kit") + working tree $(mib "$tree") = $(mib "$total") of the $(mib "$limit") that travel"
if [ "$total" -gt "$limit" ]; then
  echo "build.sh: over the limit: the GPU machine would refuse the call" >&2
  exit 1
fi
