#!/usr/bin/env bash
# simbench.sh OLD NEW [ROUNDS]: the simulator end to end, as a user runs it. Each case is
# `xfertop run --headless` (the analysis and the report included), run by the OLD and the NEW
# binary in turn, ROUNDS times (default 5); the CPU time is the process's user + system time
# (/usr/bin/time), so a loaded machine, which stretches the wall clock, moves the figure less. It
# prints each run's events per CPU second and, per case, the medians, NEW/OLD and each round's
# NEW/OLD (the two runs of a round ran side by side, under the same load). When the two binaries
# record different numbers of events for the same run (an event added to the model), events per
# CPU second are not comparable: the line then gives each one's count and the CPU time's ratio,
# OLD/NEW per round (above 1: NEW costs less for the same run). llm-train at 1,024 GPUs runs for one
# step and for ten: the first step pays for the memory the run touches first, the later ones for
# what a step costs once it is warm (docs/performance.md, "a tenth time").
#
#   git worktree add --detach /tmp/old-sim 6725509 && (cd /tmp/old-sim && go build -o /tmp/xfertop-old ./cmd/xfertop)
#   go build -o bin/xfertop ./cmd/xfertop && scripts/simbench.sh /tmp/xfertop-old bin/xfertop
set -euo pipefail
old=${1:?usage: simbench.sh OLD NEW [ROUNDS]}
new=${2:?usage: simbench.sh OLD NEW [ROUNDS]}
rounds=${3:-5}
cases=(
	"llm-train, 200 steps, 16 GPUs|--scenario llm-train --steps 200"
	"overlap, 2,000 steps, 8 GPUs|--scenario overlap --steps 2000"
	"allreduce-sweep, 1,000 steps, 8 GPUs|--scenario allreduce-sweep --steps 1000"
	"llm-train, 1 step, 1,024 GPUs|--scenario llm-train --steps 1 --topology h100x8x4 --hosts 128"
	"llm-train, 10 steps, 1,024 GPUs|--scenario llm-train --steps 10 --topology h100x8x4 --hosts 128"
	"allreduce-sweep, 2 steps, 1,024 GPUs|--scenario allreduce-sweep --steps 2 --topology h100x8x4 --hosts 128"
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# one BIN ARGS...: prints "events cpu_seconds"
one() {
	local bin=$1
	shift
	/usr/bin/time -f '%U %S' -o "$tmp/time" "$bin" run --headless "$@" >"$tmp/out"
	local events
	events=$(sed -n '2s/.* \([0-9][0-9]*\) events.*/\1/p' "$tmp/out")
	[ -n "$events" ] || { echo "simbench: no event count in the report of $bin $*" >&2; exit 1; }
	awk -v e="$events" '{ print e, $1 + $2 }' "$tmp/time"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for c in "${cases[@]}"; do
	name=${c%%|*}
	read -r -a args <<<"${c#*|}"
	: >"$tmp/old.rates"
	: >"$tmp/new.rates"
	: >"$tmp/old.cpu"
	: >"$tmp/new.cpu"
	for ((r = 1; r <= rounds; r++)); do
		for which in old new; do
			bin=$old
			[ $which = new ] && bin=$new
			read -r events cpu < <(one "$bin" "${args[@]}")
			awk -v e="$events" -v c="$cpu" 'BEGIN { printf "%.3f\n", e / c / 1e6 }' >>"$tmp/$which.rates"
			echo "$cpu" >>"$tmp/$which.cpu"
			printf -v "events_$which" '%s' "$events"
		done
	done
	if [ "$events_old" != "$events_new" ]; then
		printf '%s: old %s events, new %s events: CPU s old %s, new %s; old/new per round %s\n' "$name" "$events_old" "$events_new" \
			"$(sort -g "$tmp/old.cpu" | paste -sd' ')" "$(sort -g "$tmp/new.cpu" | paste -sd' ')" \
			"$(paste -d' ' "$tmp/old.cpu" "$tmp/new.cpu" | awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 / $2 }')"
	fi
	mo=$(median <"$tmp/old.rates")
	mn=$(median <"$tmp/new.rates")
	printf '%s (%s events): old %s, new %s M events/cpu-s; medians %s → %s, new/old %s; per round %s\n' "$name" "$events" \
		"$(sort -g "$tmp/old.rates" | paste -sd' ')" "$(sort -g "$tmp/new.rates" | paste -sd' ')" "$mo" "$mn" \
		"$(awk -v a="$mo" -v b="$mn" 'BEGIN { printf "%.2f", b / a }')" \
		"$(paste -d' ' "$tmp/old.rates" "$tmp/new.rates" | awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $2 / $1 }')"
done
