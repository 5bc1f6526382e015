# shellcheck shell=bash
# cobalt-bench: the node pack's capacity test where several nodes of a sweep are one machine
# (several slurmd on one host: the local cluster; jobs/node-sweep.slurm finds it and sets
# NODE_SWEEP_SHARED_HOST). An unpaced test run on all of them at once measures how they
# share the machine, and one node at a time measures the machine's drift over the minute
# the turns take. So: every node waits for the others to finish their other tests, then
# they take turns in the allocation's order, ROUNDS rounds of them, and each node keeps its
# median run (a run that failed, killed or unverified, is kept instead: a failure is never
# dropped); the judgements wait until every turn is done. Nothing here is used on a
# cluster of separate machines.
#   cb_capacity_in_turns SWEEP_DIR NODE JSON LOG PROGRAM [OPTIONS...]; rc=$?

CB_CAPACITY_ROUNDS=${CB_CAPACITY_ROUNDS:-3}
CB_TURN_TIMEOUT_S=${CB_TURN_TIMEOUT_S:-300}

# Wait (at most CB_TURN_TIMEOUT_S) until the sweep's turn counter reaches $2.
_cb_wait_turn() {
    local waited=0
    while [ "$(cat "$1/.turn" 2>/dev/null || echo 0)" -lt "$2" ]; do
        [ "$waited" -ge $((CB_TURN_TIMEOUT_S * 10)) ] && return 1
        sleep 0.1
        waited=$((waited + 1))
    done
}

cb_capacity_in_turns() {
    local sweep=$1 node=$2 json=$3 log=$4 n i r rc turn best
    shift 4
    mapfile -t alloc < "$sweep/allocation"
    n=${#alloc[@]}
    for i in "${!alloc[@]}"; do [ "${alloc[$i]}" = "$node" ] && break; done
    : > "$sweep/.ready-$node"
    for _ in $(seq 120); do
        [ "$(find "$sweep" -maxdepth 1 -name '.ready-*' | wc -l)" -ge "$n" ] && break
        sleep 1
    done
    local runs=()
    : > "$log"
    for ((r = 0; r < CB_CAPACITY_ROUNDS; r++)); do
        turn=$((r * n + i))
        _cb_wait_turn "$sweep" "$turn" ||
            echo "shared host: turn $turn not reached in ${CB_TURN_TIMEOUT_S} s (a node lost?): running" >> "$log"
        "$@" --json "$json.round$r" >> "$log" 2>&1
        rc=$?
        runs+=("$rc $json.round$r")
        echo $((turn + 1)) > "$sweep/.turn.$node" && mv -f "$sweep/.turn.$node" "$sweep/.turn"
    done
    _cb_wait_turn "$sweep" $((CB_CAPACITY_ROUNDS * n)) || true
    best=$(printf '%s\n' "${runs[@]}" | python3 -c '
import json, sys
runs = [line.split(" ", 1) for line in sys.stdin.read().splitlines()]
failed = [(rc, path) for rc, path in runs if rc not in ("0", "1")]
if failed:                                  # a failure is kept, never a median
    print(*failed[0]); sys.exit()
speeds = []
for rc, path in runs:
    try:
        speeds.append((json.load(open(path))["metrics"]["measured_speed"]["value"], rc, path))
    except (OSError, ValueError, KeyError, TypeError):
        print(rc, path); sys.exit()          # unreadable: that one, for the judge to name
speeds.sort()
print(*speeds[len(speeds) // 2][1:])')
    rc=${best%% *}
    echo "shared host: $CB_CAPACITY_ROUNDS rounds in turns; kept ${best#* } (exit status $rc)" >> "$log"
    [ -e "${best#* }" ] && mv -f "${best#* }" "$json"
    rm -f "$json".round*
    return "$rc"
}
