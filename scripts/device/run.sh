#!/usr/bin/env bash
# shellcheck disable=SC2317 # the steps are called by name: "step_$step"
# Runs xfertop's checks on a GPU machine that has no Go toolchain, from the kit that
# scripts/device/build.sh made (.device/kit.tar.gz, carried there), in the repository root:
#
#   scripts/device/run.sh STEP...        (or: all)
#
# Steps, in the order given; each has its own timeout, and a failing step never stops the others:
#   env        nvidia-smi, nvidia-smi topo -m, the driver, NCCL, torch and the kit's build           20 s
#   tests      engine/cuda's test binary (-test.v) and cmd/xfertop's CUDA tests, on the GPU, with     90 s
#              the fake driver's models of CUDA and NCCL (model_tests) listed by name
#   scenarios  xfertop run --headless --json --scenario S, S = pipeline, copy-sweep,
#              allreduce-sweep, crosshost: --backend cuda --fit, then the simulator                  80 s
#   bench      engine/cuda's benchmarks, shortened: copies at 4 KiB, 1 MiB, 64 MiB and 1 GiB each
#              direction, per-op CPU cost, communicator cache, NCCL groups, NVML against the engine 80 s
#   torch      a one-rank PyTorch job with the NCCL profiler plugin, watched by xfertop attach
#              --headless --json, checked against what it issued (check_attach.py); keeps what
#              the job wrote: its Kineto trace, Flight Recorder dumps, the plugin's .xfr          45 s
#   torch2     the same job on two ranks sharing the GPU as two NCCL hosts (NCCL_HOSTID): on one
#              rank NCCL runs collectives as local copies that reach no profiler; on two they do  55 s
#   watch      the console (xfertop attach) live under tmux while the two-rank job runs 35 s,
#              frames at 10, 20, 30 s; NCCL RAS's status captured meanwhile (JSON and text)      60 s
#   overhead   the two-rank job with the plugin and without it, alternated (with, without, twice):
#              its iterations' wall time each way, and the plugin's own measure of its cost      60 s
#   console    the console of a cuda run, live, under tmux for 60 s (script(1) without tmux)     120 s
#   ab         engine/cuda's benchmarks XFER_AB_BENCH of an earlier build (XFER_AB_OLD, a test
#              binary carried in .device, e.g. go test -c -tags cuda at the older commit) and of
#              the kit's, alternated XFER_AB_ROUNDS times (default 3): ratios in the same run     120 s
#   gpu        env tests scenarios bench torch torch2 watch overhead: one device call, ≤ 480 s
#   all        every step above
#
# Results: $OUT/summary.txt (one line per step: status, exit status, seconds, a note) and
# $OUT/results.tar.gz (STEP/stdout.txt, STEP/stderr.txt, STEP/rc and the step's own files),
# rewritten after each step so that a call cut short keeps what ran. They are packed because the
# device tool returns at most 8 files from $OUT; while a step runs its files are under $XFER_WORK.
# The summary and the failed steps' last lines are printed too.
#
# Environment:
#   OUT              where the results go (required)
#   XFER_KIT         the kit (default .device/kit.tar.gz), unpacked into XFER_KIT_DIR (/tmp/xfertop-kit)
#   XFER_WORK        the steps' working folders (default /tmp/xfertop-device)
#   XFER_TIMEOUT_<STEP>  a step's timeout in seconds (XFER_TIMEOUT_bench=300)
#   XFER_QUICK=1     small sizes and one benchmark iteration: for a run against the fake driver
#                    (engine/cuda/testdata/fakedriver), whose figures are not a GPU's
#   XFER_BENCH, XFER_BENCHTIME  benchmark patterns (space-separated, each run in turn) and benchtime
#   XFER_BENCH_CPUPROFILE  a benchmark pattern run once more with -test.cpuprofile bench/cpu.pprof
#   XFER_CONSOLE_ARGS  more flags for the console step's xfertop run (--nvml, --scenario crosshost)
#
# Exit status: 0 every step passed or was skipped; 1 a step failed or timed out; 2 usage.
set -uo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
self="$root/scripts/device/run.sh"
cd "$root" || exit 2
steps_all=(env tests scenarios bench torch torch2 watch overhead console)
steps_gpu=(env tests scenarios bench torch torch2 watch overhead)
declare -A limits=([env]=20 [tests]=90 [scenarios]=80 [bench]=80 [torch]=45 [torch2]=55 [watch]=60 [overhead]=60 [console]=120 [ab]=120)

usage() {
  awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$self" >&2
  exit 2
}

# ---- helpers used by the steps ----

section() { printf '\n== %s\n' "$*"; }

# try runs a command, saying so when it fails rather than stopping.
try() {
  "$@" 2>&1
  local rc=$?
  [ "$rc" -eq 0 ] || echo "(exit status $rc: $*)"
  return 0
}

note() { echo "$*" >"$dir/note"; }

# highlight keeps its input as what the summary shows of a step that passed.
highlight() { cat >>"$dir/highlights.txt"; }

# tmux_quit keeps the console's last screen ($dir/screen.txt, and with colours screen-ansi.txt),
# presses q, waits up to 10 s for it to exit and prints its exit status (empty: still running). The
# caller's tm runs tmux on its own server.
tmux_quit() {
  tm capture-pane -p -t "$tmux_name" >"$dir/screen.txt"
  tm capture-pane -e -p -t "$tmux_name" >"$dir/screen-ansi.txt"
  tm send-keys -t "$tmux_name" q
  for _ in $(seq 50); do
    [ "$(tm display-message -p -t "$tmux_name" '#{pane_dead}')" = 1 ] && break
    sleep 0.2
  done
  tm display-message -p -t "$tmux_name" '#{pane_dead_status}'
}

# free_port prints a TCP port nothing listens on (for torch's env:// rendezvous).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# gotest_counts FILE prints "P passed, F failed, S skipped" of a -test.v log.
gotest_counts() {
  local p f s
  p=$(grep -c -- '--- PASS' "$1")
  f=$(grep -c -- '--- FAIL' "$1")
  s=$(grep -c -- '--- SKIP' "$1")
  echo "$p passed, $f failed, $s skipped"
}

# ---- the steps: each runs in its own bash (so that a timeout ends it), in the repository root,
# writing into $dir; exit status 77 means skipped ----

step_env() {
  local ok=0
  section nvidia-smi
  if command -v nvidia-smi >/dev/null; then
    try nvidia-smi
    section "nvidia-smi topo -m"
    try nvidia-smi topo -m
    section "GPU"
    try nvidia-smi --query-gpu=name,pci.bus_id,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit,pcie.link.gen.max,pcie.link.width.max --format=csv
  else
    echo "nvidia-smi not found: no NVIDIA driver here"
    ok=1
  fi
  section "driver"
  try cat /proc/driver/nvidia/version
  section "NCCL (system)"
  local h found=""
  for h in /usr/include/nccl.h /usr/local/include/nccl.h /usr/local/cuda/include/nccl.h; do
    if [ -f "$h" ]; then
      echo "$h: $(grep -E '^#define NCCL_(MAJOR|MINOR|PATCH|SUFFIX) ' "$h" | awk '{printf "%s=%s ", $2, $3}')"
      found=1
    fi
  done
  [ -n "$found" ] || echo "nccl.h not found"
  try sh -c "ldconfig -p | grep -E 'libnccl|libcuda\\.so|libnvidia-ml|libcudart'"
  section "torch"
  try python3 -c 'import torch, torch.distributed as d; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else "-", "gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none", "nccl available", d.is_nccl_available())'
  section "host"
  try uname -a
  echo "cores: $(nproc)"
  try free -g
  try df -h /tmp
  section "tools"
  echo "tmux: $(tmux -V 2>/dev/null || echo absent)"
  echo "script: $(command -v script || echo absent)"
  echo "python3: $(python3 --version 2>&1 || echo absent)"
  section "kit"
  try cat "$kit/BUILD"
  try ls -l "$kit"
  local gpu
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
  note "GPU: ${gpu:-none}; torch: $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo absent); tmux: $(command -v tmux >/dev/null && echo yes || echo no)"
  return "$ok"
}

# model_tests are the tests of behaviour the fake driver and fake NCCL (engine/cuda/testdata/
# fakedriver) model from CUDA's and NCCL's documentation rather than from a run: the tests step
# lists each one's result by name, so that a GPU run shows whether the real driver and NCCL agree.
# A test that did not run at all (renamed, or the binary stopped early) fails the step.
model_tests=(
  TestCaptureAndLaunch                       # capture over a fork and join, replayed per cuGraphLaunch
  TestCaptureRefusals/synchronize            # CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then INVALIDATED
  TestCaptureRefusals/outside_event          # CUDA_ERROR_STREAM_CAPTURE_ISOLATION (an event recorded outside)
  TestCaptureRefusals/event_of_another_capture # CUDA_ERROR_STREAM_CAPTURE_MERGE
  TestCaptureRefusals/allocation             # cuMemAlloc on the capturing thread: UNSUPPORTED (seen on an H200)
  TestCaptureRefusals/synchronize_another_stream # likewise (seen on an H200)
  TestCaptureTimingEvents                    # a plain record in a capture is not recorded at launch; an external one is
  TestCaptureNCCLReplays/all-gather          # an NCCL call captured on the stream, fresh results per launch
  TestCaptureNCCLReplays/all-reduce          # the same on two GPUs (skips on one)
)

# model_results FILE prints "STATUS NAME" for each of model_tests in a -test.v log (MISSING if absent).
model_results() {
  local t status
  for t in "${model_tests[@]}"; do
    status=$(awk -v n="$t" '$1 == "---" && $3 == n { s = $2 } END { sub(/:$/, "", s); print s }' "$1")
    echo "${status:-MISSING} $t"
  done
}

step_tests() {
  local rc=0
  (cd engine/cuda && "$kit/cuda.test" -test.v -test.count=1 -test.timeout 55s) >"$dir/engine-cuda.txt" 2>&1 || rc=1
  (cd cmd/xfertop && "$kit/xfertop-cmd.test" -test.run CUDA -test.v -test.count=1 -test.timeout 30s) >"$dir/cmd-xfertop.txt" 2>&1 || rc=1
  for f in engine-cuda cmd-xfertop; do
    section "$f: $(gotest_counts "$dir/$f.txt")"
    grep -E '^( *--- |ok|PASS|FAIL|panic)' "$dir/$f.txt"
    tail -1 "$dir/$f.txt" | grep -qx PASS || { echo "-- its last lines:"; tail -n 30 "$dir/$f.txt"; }
  done
  section "the fake driver's models, on this driver and NCCL"
  model_results "$dir/engine-cuda.txt" | tee "$dir/models.txt"
  grep -q '^MISSING ' "$dir/models.txt" && rc=1
  grep -hE -- '--- (FAIL|SKIP)' "$dir/engine-cuda.txt" "$dir/cmd-xfertop.txt" | highlight
  sed 's/^/model: /' "$dir/models.txt" | highlight
  note "engine/cuda: $(gotest_counts "$dir/engine-cuda.txt"); cmd/xfertop CUDA: $(gotest_counts "$dir/cmd-xfertop.txt"); models: $(awk '{n[$1]++} END {for (k in n) printf "%s%d %s", sep, n[k], k; sep = ", "}' "$dir/models.txt")"
  return "$rc"
}

step_bench() {
  local patterns benchtime rc=0 p
  if [ "${XFER_QUICK:-}" = 1 ]; then
    patterns="${XFER_BENCH:-CopySweep/./^(4096|1048576)\$ SmallCopyOverhead|CommCache|NCCLGroups}"
    benchtime="${XFER_BENCHTIME:-1x}"
  else
    patterns="${XFER_BENCH:-CopySweep/./^(4096|1048576|67108864|1073741824)\$ SmallCopyOverhead|CommCache|NCCLGroups|NVMLvsEngine}"
    benchtime="${XFER_BENCHTIME:-3x}"
  fi
  for p in $patterns; do
    section "cuda.test -test.run '^\$' -test.bench '$p' -test.benchtime $benchtime"
    (cd engine/cuda && "$kit/cuda.test" -test.run '^$' -test.bench "$p" -test.benchtime "$benchtime" -test.timeout 70s) 2>&1 |
      tee -a "$dir/bench.txt" || rc=1
  done
  if [ -n "${XFER_BENCH_CPUPROFILE:-}" ]; then
    # Where the host's time goes, kept for pprof here (the profile is self-symbolised).
    section "cuda.test -test.bench '$XFER_BENCH_CPUPROFILE' -test.cpuprofile cpu.pprof"
    (cd engine/cuda && "$kit/cuda.test" -test.run '^$' -test.bench "$XFER_BENCH_CPUPROFILE" -test.benchtime "$benchtime" \
      -test.cpuprofile "$dir/cpu.pprof" -test.timeout 60s) 2>&1 | tee -a "$dir/bench.txt" || rc=1
  fi
  grep '^Benchmark' "$dir/bench.txt" | highlight
  note "$(grep -c '^Benchmark' "$dir/bench.txt") benchmark lines, -test.benchtime $benchtime"
  return "$rc"
}

# step_ab: an earlier build's benchmarks against the kit's, alternated in one run (the figures of
# two device calls may come from different machines of the same kind).
step_ab() {
  local old="${XFER_AB_OLD:-.device/cuda-old.test}" pat="${XFER_AB_BENCH:-SmallCopyOverhead}" round which bin
  [ -x "$old" ] || { echo "no earlier build at $old (XFER_AB_OLD)"; note "skipped: no earlier build"; return 77; }
  for round in $(seq "${XFER_AB_ROUNDS:-3}"); do
    for which in old new; do
      bin="$kit/cuda.test"
      [ "$which" = old ] && bin="$root/$old"
      section "round $round: $which"
      (cd engine/cuda && "$bin" -test.run '^$' -test.bench "$pat" -test.benchtime "${XFER_BENCHTIME:-3x}" -test.timeout 60s) 2>&1 |
        grep '^Benchmark' | sed "s/^/$which /" | tee -a "$dir/ab.txt"
    done
  done
  highlight <"$dir/ab.txt"
  note "$(grep -c . "$dir/ab.txt") lines, $pat, old $old"
}

# scenario_knobs prints the --set flags of XFER_QUICK=1 for a scenario (those of cmd/xfertop's
# TestCUDAReportHasSimKeys).
scenario_knobs() {
  [ "${XFER_QUICK:-}" = 1 ] || return 0
  case $1 in
    pipeline) echo "--steps 1 --set activation_bytes=1MiB --set compute=1ms --set microbatches=2" ;;
    copy-sweep) echo "--set max_bytes=1MiB --set iters=2" ;;
    allreduce-sweep) echo "--set max_bytes=64KiB --set iters=1" ;;
    crosshost) echo "--steps 2" ;;
  esac
}

step_scenarios() {
  local rc=0 s backend t0 r runs=0 good=0
  for s in pipeline copy-sweep allreduce-sweep crosshost; do
    for backend in cuda sim; do
      local args=(run --headless --json --scenario "$s" --backend "$backend")
      [ "$backend" = cuda ] && args+=(--fit)
      # shellcheck disable=SC2207 # the knobs are words without spaces
      args+=($(scenario_knobs "$s"))
      t0=$(date +%s%N)
      timeout -k 2 "$([ "$backend" = cuda ] && echo 25 || echo 10)" "$kit/xfertop" "${args[@]}" \
        >"$dir/$s-$backend.json" 2>"$dir/$s-$backend.err"
      r=$?
      runs=$((runs + 1))
      if [ "$r" -eq 0 ]; then good=$((good + 1)); else rc=1; fi
      echo "xfertop ${args[*]}: exit $r, $((($(date +%s%N) - t0) / 1000000)) ms"
      [ "$r" -eq 0 ] || tail -3 "$dir/$s-$backend.err"
    done
  done
  section "digest (from the JSON reports)"
  digest "$dir"/*.json | tee "$dir/digest.txt"
  highlight <"$dir/digest.txt"
  note "$good of $runs runs exited 0"
  return "$rc"
}

# digest prints a few figures of each report: time, transfers by kind, collectives, alerts.
digest() {
  command -v python3 >/dev/null || { echo "python3 absent: no digest"; return 0; }
  python3 - "$@" <<'PY'
import json, os, sys
for path in sys.argv[1:]:
    name = os.path.basename(path)[:-5]
    try:
        r = json.load(open(path))
    except Exception as e:
        print("%-26s unreadable: %s" % (name, e))
        continue
    kinds = ", ".join("%s %d (%s GB/s)" % (k, v["count"], v["gbps"]) for k, v in sorted(r["transfers"]["by_kind"].items()) if v["count"])
    print("%-26s %s, %d devices, %.3f s, %d events, %d alert(s)%s%s" % (
        name, r.get("topology"), r.get("devices", 0), r["duration_ns"] / 1e9, r["events"], r["alert_count"],
        ", ended: " + r["ended"] if r.get("ended") else "", ", mapping " + r["mapping"] if r.get("mapping") else ""))
    print("%-26s   transfers: %s" % ("", kinds or "none"))
    for c in r["collectives"][-3:]:
        print("%-26s   %s x%d on %d ranks, %d B: algbw %s busbw %s GB/s (%s)" % (
            "", c["op"], c["count"], c["ranks"], c["bytes"], c["algbw_gbps"], c["busbw_gbps"], c["algo_proto"]))
PY
}

step_console() {
  local cmd=("$kit/xfertop" run --backend cuda --fit --scenario pipeline --steps 100000)
  # shellcheck disable=SC2206 # extra flags, words without spaces
  cmd+=(${XFER_CONSOLE_ARGS:-})
  if command -v tmux >/dev/null; then
    local at=0 t status
    # A tmux server of its own, so that no other tmux use can end it (a global: the EXIT trap
    # runs after this function has returned).
    tmux_name="xfertop-device-$$"
    tm() { command tmux -L "$tmux_name" "$@"; }
    tm new-session -d -s "$tmux_name" -x 160 -y 48
    trap 'tm kill-server 2>/dev/null || true' EXIT
    tm set-option -t "$tmux_name" remain-on-exit on >/dev/null
    tm respawn-pane -k -t "$tmux_name" "cd $(printf '%q' "$root") && exec $(printf '%q ' "${cmd[@]}")"
    echo "console: ${cmd[*]} in tmux, 160x48, frames at 5, 20, 40 and 60 s"
    for t in 5 20 40 60; do
      sleep $((t - at))
      at=$t
      if [ "$(tm display-message -p -t "$tmux_name" '#{pane_dead}')" = 1 ]; then
        echo "the console exited before $t s, status $(tm display-message -p -t "$tmux_name" '#{pane_dead_status}')"
        tm capture-pane -p -t "$tmux_name" >"$dir/screen.txt"
        cat "$dir/screen.txt"
        note "the console exited before $t s"
        return 1
      fi
      { echo "---- frame at $t s ----"; tm capture-pane -p -t "$tmux_name"; } >>"$dir/frames.txt"
    done
    status=$(tmux_quit)
    echo "the console ran live for 60 s; after q it exited with status ${status:-? (still running)}"
    section "the last frame"
    cat "$dir/screen.txt"
    note "ran live 60 s under tmux; exit ${status:-none} after q; frames in frames.txt"
    [ "$status" = 0 ]
  elif command -v script >/dev/null; then
    echo "tmux is not installed here: the console runs under script(1) for 60 s instead (raw terminal output in typescript.txt), ended by SIGINT"
    script -qec "stty rows 48 cols 160; timeout --preserve-status -s INT 60 $(printf '%q ' "${cmd[@]}")" "$dir/typescript.txt" >/dev/null
    local r=$?
    echo "exit status $r (130: ended by the interrupt, as meant)"
    note "tmux absent: ran under script(1), exit $r; see typescript.txt"
    [ "$r" -eq 130 ] || [ "$r" -eq 0 ]
  else
    echo "neither tmux nor script(1) is installed: the console step is skipped"
    note "skipped: no tmux, no script(1)"
    return 77
  fi
}

# need_torch says whether torch is here (exit status 0); when not, it notes the step skipped.
need_torch() {
  local err
  if ! err=$(python3 -c 'import torch, torch.distributed' 2>&1); then
    echo "torch is not installed here (python3 -c 'import torch': $(tail -1 <<<"$err")): the $step step is skipped"
    note "skipped: torch absent"
    return 1
  fi
}

# start_attach SOCKET [FLAGS...]: xfertop attach --headless --json on SOCKET, into $dir/attach*.json
# (its pid in apid); waits until it listens.
start_attach() {
  local s=$1 name=${ATTACH_NAME:-attach}
  "$kit/xfertop" attach --headless --json --socket "$s" --linger 3s "${@:2}" >"$dir/$name.json" 2>"$dir/$name.err" &
  apid=$!
  for _ in $(seq 100); do [ -S "$s" ] && break; sleep 0.1; done
  [ -S "$s" ] && return 0
  echo "xfertop attach did not listen on $s:"
  cat "$dir/$name.err"
  return 1
}

# stop_attach: attach ends when no rank has been connected for --linger; if none ever came, it is
# told to stop. Prints and returns its exit status.
stop_attach() {
  for _ in $(seq 100); do kill -0 "$apid" 2>/dev/null || break; sleep 0.1; done
  kill -INT "$apid" 2>/dev/null
  wait "$apid"
  local ar=$?
  apid=""
  return "$ar"
}

# run_ranks WORLD TAG PLUGIN SOCKET [JOB FLAGS...]: the job's ranks, as torchrun would start them,
# with the plugin (PLUGIN=yes: streaming to SOCKET, and recording into $dir/xfr when XFR=1) or
# without it; each rank's list is $dir/issued-TAG-rank<R>.json, its log $dir/job-TAG-rank<R>.txt.
# Returns 1 if a rank failed.
run_ranks() {
  local world=$1 tag=$2 plugin=$3 s=$4 r jr rc=0 port pids=() extra=() env_plugin=() hosts=()
  port=$(free_port)
  [ "$world" -gt 1 ] && extra=(NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1) hosts=(--fake-hosts)
  if [ "$plugin" = yes ]; then
    env_plugin=(NCCL_PROFILER_PLUGIN="$kit/libnccl-profiler-xfertop.so" XFERTOP_ATTACH="$s")
    [ "${XFR:-}" = 1 ] && { mkdir -p "$dir/xfr"; env_plugin+=(XFERTOP_RECORD_DIR="$dir/xfr"); }
  fi
  for ((r = 0; r < world; r++)); do
    env RANK="$r" WORLD_SIZE="$world" LOCAL_RANK="$r" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
      NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV PYTHONUNBUFFERED=1 "${env_plugin[@]}" "${extra[@]}" \
      timeout -k 5 120 python3 scripts/device/torch_job.py --out "$dir/issued-$tag-rank$r.json" \
      "${hosts[@]}" "${@:5}" >"$dir/job-$tag-rank$r.txt" 2>&1 &
    pids+=($!)
  done
  for ((r = 0; r < world; r++)); do
    wait "${pids[$r]}"
    jr=$?
    echo "rank $r ($tag): exit status $jr; $(grep -m1 '^torch_job:' "$dir/job-$tag-rank$r.txt" || tail -1 "$dir/job-$tag-rank$r.txt")"
    [ "$jr" -eq 0 ] || rc=1
  done
  return "$rc"
}

# torch_step N: the job's N ranks (N > 1: as N NCCL hosts on one GPU) with the plugin, attach
# watching, then the check; what the job wrote is kept: a Kineto trace per rank, the Flight
# Recorder's dumps, the plugin's .xfr recordings, NCCL's version string.
torch_step() {
  local world=$1 rc=0 jobrc=0 ar
  need_torch || return 77
  sockdir=$(mktemp -d /tmp/xa.XXXXXX) # a global, for the EXIT trap
  trap 'kill "$apid" 2>/dev/null; rm -rf "$sockdir"' EXIT
  start_attach "$sockdir/s" || { note "attach did not start"; return 1; }
  echo "job: $world rank(s)$([ "$world" -gt 1 ] && echo " as $world NCCL hosts on one GPU"), NCCL_PROFILER_PLUGIN=$kit/libnccl-profiler-xfertop.so XFERTOP_ATTACH=$sockdir/s XFERTOP_RECORD_DIR=$dir/xfr"
  XFR=1 run_ranks "$world" job yes "$sockdir/s" --iters 3 --profile "$dir/kineto-rank%R.json" --fr-dir "$dir/fr" || jobrc=1
  stop_attach
  ar=$?
  echo "attach: exit status $ar"
  cat "$dir/attach.err"
  section "NCCL on the plugin (rank 0)"
  grep -iE 'profiler|NCCL version' "$dir/job-job-rank0.txt" | head -20
  grep -m1 -oE 'NCCL version [^ ]+' "$dir/job-job-rank0.txt" >"$dir/nccl-version.txt"
  section "what the job wrote"
  ls -l "$dir"/kineto-rank*.json "$dir/fr" "$dir/xfr" 2>&1
  python3 -c 'import json, sys
for p in sys.argv[1:]:
    r = json.load(open(p))
    for a in r.get("artifacts", []): print(p.split("/")[-1], a)' "$dir"/issued-job-rank*.json 2>&1
  section "check_attach.py --report attach.json issued-job-rank*.json"
  local issued=("$dir"/issued-job-rank*.json) check="no issued list"
  if [ -f "${issued[0]}" ]; then
    python3 scripts/device/check_attach.py --report "$dir/attach.json" "${issued[@]}" | tee "$dir/check.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    check=$(tail -1 "$dir/check.txt")
    highlight <"$dir/check.txt"
  else
    echo "the job wrote no list of what it issued"
    rc=1
  fi
  note "job exit $jobrc, attach exit $ar, check: $check; $(cat "$dir/nccl-version.txt" 2>/dev/null)"
  [ "$jobrc" -eq 0 ] && [ "$ar" -eq 0 ] || rc=1
  return "$rc"
}

step_torch() { torch_step 1; }
step_torch2() { torch_step 2; }

# ras_status FILE [json]: NCCL RAS's status of the job on this host (its client protocol, as
# importers/ras speaks it), as text or JSON.
ras_status() {
  python3 - "$@" <<'PY'
import socket, sys
out, fmt = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "text"
try:
    c = socket.create_connection(("127.0.0.1", 28028), timeout=10)
    f = c.makefile("rwb")
    def say(line):
        f.write(line.encode() + b"\n"); f.flush()
        return f.readline().decode().strip()
    hello = say("CLIENT PROTOCOL 2")
    if fmt == "json":
        say("SET FORMAT json")
    f.write(b"VERBOSE STATUS\n"); f.flush()
    body = f.read()
    open(out, "wb").write(body)
    print("RAS (%s): %s, %d bytes of status" % (fmt, hello, len(body)))
except OSError as e:
    print("RAS (%s): %s" % (fmt, e))
PY
}

# step_watch: the console attached to the two-rank job, live under tmux (frames at 10, 20, 30 s).
step_watch() {
  need_torch || return 77
  command -v tmux >/dev/null || { echo "tmux is not installed here"; note "skipped: no tmux"; return 77; }
  local s=/tmp/xfertop-watch-$$.sock status jobrc=0
  tmux_name="xfertop-watch-$$"
  tm() { command tmux -L "$tmux_name" "$@"; }
  tm new-session -d -s "$tmux_name" -x 160 -y 48
  trap 'tm kill-server 2>/dev/null || true; rm -f "$s"' EXIT
  tm set-option -t "$tmux_name" remain-on-exit on >/dev/null
  tm respawn-pane -k -t "$tmux_name" "cd $(printf '%q' "$root") && exec $(printf '%q ' "$kit/xfertop" attach --socket "$s")"
  for _ in $(seq 100); do [ -S "$s" ] && break; sleep 0.1; done
  echo "console: xfertop attach --socket $s in tmux 160x48; the two-rank job runs 35 s"
  run_ranks 2 watch yes "$s" --min-seconds 35 >"$dir/ranks.txt" 2>&1 &
  local job=$! at=0 t
  for t in 10 20 30; do
    sleep $((t - at))
    at=$t
    { echo "---- frame at $t s ----"; tm capture-pane -p -t "$tmux_name"; } >>"$dir/frames.txt"
    [ "$t" = 10 ] && { ras_status "$dir/ras-status.json" json; ras_status "$dir/ras-status.txt"; }
  done
  wait "$job" || jobrc=1
  cat "$dir/ranks.txt"
  status=$(tmux_quit)
  echo "the console ran live while the job ran; after q it exited with status ${status:-? (still running)}"
  section "the frame at 30 s"
  sed -n '/^---- frame at 30 s/,$p' "$dir/frames.txt"
  section "after the job"
  cat "$dir/screen.txt"
  note "job exit $jobrc; console exit ${status:-none} after q; frames.txt, ras-status.*"
  [ "$jobrc" -eq 0 ] && [ "$status" = 0 ]
}

# step_overhead: the two-rank job with the plugin (streaming to attach) and without it, alternated,
# 40 iterations each; each iteration's wall time compared, and the plugin's own measure of its cost.
step_overhead() {
  need_torch || return 77
  local round mode rc=0
  sockdir=$(mktemp -d /tmp/xo.XXXXXX)
  trap 'kill "$apid" 2>/dev/null; rm -rf "$sockdir"' EXIT
  for round in 1 2; do
    for mode in with without; do
      if [ "$mode" = with ]; then
        ATTACH_NAME=attach-$round start_attach "$sockdir/s$round" || { rc=1; continue; }
        run_ranks 2 "$mode-$round" yes "$sockdir/s$round" --iters 40 || rc=1
        stop_attach || rc=1
      else
        run_ranks 2 "$mode-$round" no "" --iters 40 || rc=1
      fi
    done
  done
  python3 - "$dir" <<'PY' | tee "$dir/overhead.txt"
import glob, json, os, statistics, sys
d = sys.argv[1]
def iters(tag):
    out = []
    for p in sorted(glob.glob(os.path.join(d, "issued-%s-rank*.json" % tag))):
        out.append(json.load(open(p))["iter_seconds"][5:])  # the first iterations warm up
    # an iteration ends when both ranks are done with it: the slower rank's time
    return [max(v) for v in zip(*out)] if out else []
rows = []
for rnd in (1, 2):
    w, wo = iters("with-%d" % rnd), iters("without-%d" % rnd)
    if w and wo:
        mw, mwo = statistics.median(w), statistics.median(wo)
        rows.append(mw / mwo)
        print("round %d: median iteration %.3f ms with the plugin, %.3f ms without: with/without %.3f (%d iterations each)"
              % (rnd, mw * 1e3, mwo * 1e3, mw / mwo, len(w)))
    for p in sorted(glob.glob(os.path.join(d, "attach-%d.json" % rnd))):
        try:
            cost = json.load(open(p)).get("profiler_cost") or []
        except ValueError as e:
            print("%s: %s" % (p, e)); continue
        for c in cost:
            print("round %d: plugin's own measure, rank %d: %s callbacks, %.1f ns a callback, %s %% of NCCL op time"
                  % (rnd, c["device"], c["callbacks"], c["ns_per_callback"], c["overhead_pct"]))
if rows:
    print("with/without, per round: %s" % ", ".join("%.3f" % r for r in rows))
PY
  highlight <"$dir/overhead.txt"
  note "$(tail -1 "$dir/overhead.txt")"
  return "$rc"
}

# ---- one step, in a bash of its own: run.sh __step STEP DIR KIT ----
if [ "${1:-}" = __step ]; then
  step=$2 dir=$3 kit=$4
  trap 'exit 143' TERM INT
  "step_$step"
  exit $?
fi

# ---- the steps asked for ----
[ $# -gt 0 ] || usage
[ -n "${OUT:-}" ] || { echo "run.sh: OUT is not set: where should the results go?" >&2; exit 2; }
steps=()
for a in "$@"; do
  case $a in
    all) steps+=("${steps_all[@]}") ;;
    gpu) steps+=("${steps_gpu[@]}") ;;
    -h | --help) usage ;;
    *)
      [ -n "${limits[$a]:-}" ] || { echo "run.sh: unknown step $a (steps: ${steps_all[*]}, all)" >&2; exit 2; }
      steps+=("$a")
      ;;
  esac
done

kit_tgz="${XFER_KIT:-.device/kit.tar.gz}"
kit="${XFER_KIT_DIR:-/tmp/xfertop-kit}"
[ -f "$kit_tgz" ] || { echo "run.sh: $kit_tgz not found: build it with scripts/device/build.sh and carry .device" >&2; exit 2; }
if ! [ -f "$kit/BUILD" ] || [ "$(tar -xzOf "$kit_tgz" ./BUILD)" != "$(cat "$kit/BUILD")" ]; then
  if ! { rm -rf "$kit" && mkdir -p "$kit" && tar -xzf "$kit_tgz" -C "$kit"; }; then
    echo "run.sh: cannot unpack $kit_tgz into $kit" >&2
    exit 1
  fi
fi
echo "kit: $(head -1 "$kit/BUILD") ($kit)"

work="${XFER_WORK:-/tmp/xfertop-device}"
mkdir -p "$work" "$OUT"
: >"$work/summary.txt"
failed=0
ran=()
for step in "${steps[@]}"; do
  dir="$work/$step"
  rm -rf "$dir" && mkdir -p "$dir"
  var="XFER_TIMEOUT_$step"
  limit="${!var:-${limits[$step]}}"
  t0=$(date +%s)
  timeout -k 10 "$limit" bash "$self" __step "$step" "$dir" "$kit" >"$dir/stdout.txt" 2>"$dir/stderr.txt"
  rc=$?
  echo "$rc" >"$dir/rc"
  case $rc in
    0) status=PASS ;;
    77) status=SKIP ;;
    124 | 137) status=TIMEOUT failed=1 ;;
    *) status=FAIL failed=1 ;;
  esac
  line=$(printf '%-10s %-7s rc=%-3d %4ds  %s' "$step" "$status" "$rc" $(($(date +%s) - t0)) "$(head -1 "$dir/note" 2>/dev/null)")
  [ "$status" = TIMEOUT ] && line+=" (timeout ${limit}s)"
  echo "$line" | tee -a "$work/summary.txt"
  ran+=("$step")
  cp "$work/summary.txt" "$OUT/summary.txt"
  tar -C "$work" -czf "$OUT/.results.tar.gz" summary.txt "${ran[@]}" && mv "$OUT/.results.tar.gz" "$OUT/results.tar.gz"
done

for step in "${ran[@]}"; do
  case $(cat "$work/$step/rc") in
    0 | 77)
      if [ -s "$work/$step/highlights.txt" ]; then
        printf '\n==== %s\n' "$step"
        head -n 60 "$work/$step/highlights.txt"
      fi
      ;;
    *)
      printf '\n==== %s: the last lines of stdout and stderr\n' "$step"
      tail -n 25 "$work/$step/stdout.txt"
      tail -n 15 "$work/$step/stderr.txt"
      ;;
  esac
done
printf '\n==== summary\n'
cat "$work/summary.txt"
echo "results: $OUT/summary.txt, $OUT/results.tar.gz ($(du -k "$OUT/results.tar.gz" | cut -f1) KiB; tar -xzf it); working folders under $work"
exit $failed
