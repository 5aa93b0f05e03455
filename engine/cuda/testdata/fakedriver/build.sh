#!/usr/bin/env bash
# Builds the fake CUDA driver and fake NCCL into DIR (default: a new temporary folder) and prints
# the environment that makes a cuda-tagged xfertop binary or test binary use them:
#
#	eval "$(engine/cuda/testdata/fakedriver/build.sh)"
#	go test -tags cuda ./engine/cuda
#
# Needs a C compiler and cuda.h: CGO_CFLAGS from ../shared/scripts/cuda-sdk.sh, or CUDA_INCLUDE.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$(mktemp -d /tmp/xfertop-fakedriver.XXXXXX)}"
mkdir -p "$out"
cc="${CC:-gcc}"
flags=(-std=gnu11 -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter -shared -fPIC -pthread)
inc=()
[ -n "${CUDA_INCLUDE:-}" ] && inc+=(-I"$CUDA_INCLUDE")
# shellcheck disable=SC2206 # CGO_CFLAGS is a list of compiler flags
[ -n "${CGO_CFLAGS:-}" ] && inc+=($CGO_CFLAGS)
"$cc" "${flags[@]}" "${inc[@]}" -Wl,-soname,libcuda.so.1 -o "$out/libcuda.so.1" "$here/fakecuda.c" >&2
ln -sf libcuda.so.1 "$out/libcuda.so"
"$cc" "${flags[@]}" "${inc[@]}" -Wl,-soname,libnccl.so.2 -o "$out/libnccl.so.2" "$here/fakenccl.c" "$out/libcuda.so.1" >&2
echo "export LD_LIBRARY_PATH=\"$out\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
echo "export XFER_NCCL_LIB=\"$out/libnccl.so.2\""
echo "export XFER_FAKE_DRIVER=\"$out\""
