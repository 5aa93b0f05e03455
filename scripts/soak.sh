#!/usr/bin/env bash
# Soak test of the console (not run by CI): runs the default console unpaced (`xfertop --speed 0`,
# the pipeline scenario on 16 simulated GPUs, without end) in a tmux pane for a while, samples its
# memory, and fails if memory grew or an alert or error appeared.
#
#   scripts/soak.sh [-d DURATION] [-i INTERVAL] [-o DIR] [-g GROWTH] [-- XFERTOP FLAGS...]
#
#   -d  how long to run: 3600, 90s, 10m, 1h (default 1h)
#   -i  how often to sample RSS and the screen (default 10s); the heap is sampled every second
#   -o  where to keep the results (default: a new folder under /tmp)
#   -g  the growth allowed, in percent: the median of the last quarter of the samples may exceed
#       the median of the second quarter by at most this much (default 10). The first quarter is
#       warm-up: the console's event window (about 80 MB) and its aggregates fill during it.
#
# Judged: the live heap, the heap objects and RSS (the Go total is shown only). Results in DIR:
# memstats.tsv (the heap figures xfertop writes when XFERTOP_MEMSTATS names a file: live heap after
# the last GC, heap objects, Go total, GC cycles, goroutines), rss.tsv (unix_ms and VmRSS in kB
# from /proc/PID/status), screen.txt (the last screen), summary.txt (what is printed).
# Exit status: 0 flat and quiet; 1 memory grew, an alert or error showed, or xfertop exited.
set -euo pipefail

duration=1h interval=10s out="" growth=10
while getopts "d:i:o:g:h" opt; do
  case $opt in
    d) duration=$OPTARG ;;
    i) interval=$OPTARG ;;
    o) out=$OPTARG ;;
    g) growth=$OPTARG ;;
    *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

# seconds converts 90, 90s, 10m or 1h to seconds.
seconds() {
  case $1 in
    *h) echo $((${1%h} * 3600)) ;;
    *m) echo $((${1%m} * 60)) ;;
    *s) echo $((${1%s})) ;;
    *[!0-9]* | "") echo "soak: bad duration $1 (give 90, 90s, 10m or 1h)" >&2; exit 2 ;;
    *) echo "$1" ;;
  esac
}
total=$(seconds "$duration")
every=$(seconds "$interval")
command -v tmux >/dev/null || { echo "soak: needs tmux" >&2; exit 2; }

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${out:-$(mktemp -d /tmp/xfertop-soak.XXXXXX)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
(cd "$root" && go build -o "$out/xfertop" ./cmd/xfertop)

name="xfertop-soak-$$"
# A tmux server of its own (its own socket), so no one else's tmux use can end the run.
tmux() { command tmux -L "$name" "$@"; }
# Keep the pane when xfertop exits, so its last screen and exit status can be read.
tmux new-session -d -s "$name" -x 160 -y 48
trap 'tmux kill-server 2>/dev/null || true' EXIT
tmux set-option -t "$name" remain-on-exit on >/dev/null
flags=""
for a in "$@"; do flags+=" $(printf '%q' "$a")"; done
tmux respawn-pane -k -t "$name" \
  "exec env XFERTOP_MEMSTATS=$(printf '%q' "$out/memstats.tsv") $(printf '%q' "$out/xfertop") --speed 0$flags"
sleep 1
pid=$(tmux display-message -p -t "$name" '#{pane_pid}')

echo -e "unix_ms\trss_kb" >"$out/rss.tsv"
failed=""
start=$(date +%s)
# bad says what on the screen means the run is not healthy: an alert, an error, a stopped or
# finished run (the console runs without end), or no running state at all.
bad() {
  local scr=$1
  grep -Eo 'Alerts \([0-9]+\)|error: .*|✖ stopped|■ done' <<<"$scr" | head -1 && return 0
  grep -q '▶ running' <<<"$scr" || { echo "the header does not say running"; return 0; }
  return 1
}
while :; do
  now=$(date +%s)
  dead=$(tmux display-message -p -t "$name" '#{pane_dead}' 2>/dev/null || echo gone)
  if [ "$dead" = gone ]; then
    failed="the tmux session went away after $((now - start)) s"
    break
  fi
  if [ "$dead" = 1 ]; then
    failed="xfertop exited with status $(tmux display-message -p -t "$name" '#{pane_dead_status}') after $((now - start)) s"
    break
  fi
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [ -n "$rss" ] && echo -e "$(date +%s%3N)\t$rss" >>"$out/rss.tsv"
  scr=$(tmux capture-pane -p -t "$name" 2>/dev/null || true)
  if why=$(bad "$scr"); then
    failed="after $((now - start)) s the screen shows: $why"
    break
  fi
  [ $((now - start)) -ge "$total" ] && break
  left=$((total - (now - start)))
  sleep $((every < left ? every : left))
done
tmux capture-pane -p -t "$name" >"$out/screen.txt" 2>/dev/null || true
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo "?")
tmux send-keys -t "$name" q 2>/dev/null || true
sleep 1

# quarters FILE COLUMN prints the median of the second and of the last quarter of a column's
# samples, and how many samples there are.
quarters() {
  awk -F'\t' -v c="$2" 'NR > 1 { v[n++] = $c }
    function med(lo, hi,   i, j, k, t, a) {
      k = 0; for (i = lo; i < hi; i++) a[k++] = v[i]
      for (i = 1; i < k; i++) { t = a[i]; for (j = i - 1; j >= 0 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return k % 2 ? a[int(k / 2)] : (a[k / 2 - 1] + a[k / 2]) / 2 }
    END { q = int(n / 4); if (q < 1) q = 1; printf "%d %d %d\n", med(q, 2 * q), med(n - q, n), n }' "$1"
}
elapsed=$(($(date +%s) - start))
{
  echo "soak of xfertop --speed 0$flags: $elapsed s of $total s wall, results in $out"
  echo "the console's header: $(grep -m1 'xfertop' "$out/screen.txt" | sed 's/  */ /g')"
  # The Go total is shown, not judged: it counts heap the runtime has returned to the OS but
  # keeps mapped, which RSS does not.
  for spec in "memstats.tsv 2 yes live heap (B)" "memstats.tsv 3 yes heap objects (B)" "rss.tsv 2 yes RSS (kB)" "memstats.tsv 4 no Go total (B)"; do
    read -r file col judged label <<<"$spec"
    read -r first last n <<<"$(quarters "$out/$file" "$col")"
    verdict=ok
    if [ "$judged" = no ]; then
      verdict="shown only"
    elif [ "$n" -lt 8 ]; then
      verdict="too few samples ($n)"
      failed="${failed:-too few samples of $label}"
    elif [ "$last" -gt $((first + first * growth / 100)) ]; then
      verdict="GREW by more than $growth%"
      failed="${failed:-$label grew from $first to $last}"
    fi
    echo "$label: second-quarter median $first, last-quarter median $last ($n samples): $verdict"
  done
  echo "peak RSS (VmHWM): $hwm kB; goroutines at the end: $(tail -1 "$out/memstats.tsv" | cut -f6); GC cycles: $(tail -1 "$out/memstats.tsv" | cut -f5)"
  if [ -n "$failed" ]; then echo "FAIL: $failed"; else echo "PASS: memory flat, no alert"; fi
} | tee "$out/summary.txt"
[ -z "$failed" ]
