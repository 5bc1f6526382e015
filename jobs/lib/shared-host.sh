# shellcheck shell=bash
# cobalt-bench: the node pack's capacity test where several nodes of a sweep are one machine
# (several slurmd on one host: the local cluster; jobs/node-sweep.slurm finds it and sets
# NODE_SWEEP_SHARED_HOST). An unpaced test run on all of them at once measures how they
# share the machine, and one node at a time measures the machine's drift over the minute
# the turns take. So: every node waits until the others are done with their other tests
# (or are lost: DOWN in Slurm), the first one done writes the order of turns (DIR/.order),
# and they take turns in that order, CB_TURN_ROUNDS rounds (default 5); each node keeps
# its median run as on a machine of its own (lib/capacity.sh: a failed run is kept
# instead), and the judgements wait until every turn is done. Five rounds, not the three
# of a machine of its own: what else runs on the one machine slows a stretch of
# consecutive turns (CI saw two of one node's three rounds 20 % down, and named it), and
# five rounds spread each node's runs over minutes. A node that arrives late runs after
# the turns. Each unpaced test of the pack (mem-capacity, cpu-test) takes its own turns,
# their state in SWEEP_DIR/.turns-TEST/. Nothing here is used on a cluster of separate
# machines.
#   cb_capacity_in_turns SWEEP_DIR TEST NODE JSON LOG PROGRAM [OPTIONS...]; rc=$?
# (lib/capacity.sh is sourced first: cb_capacity_keep.)
CB_TURN_ROUNDS=${CB_TURN_ROUNDS:-5}
CB_TURN_TIMEOUT_S=${CB_TURN_TIMEOUT_S:-60}
CB_READY_TIMEOUT_S=${CB_READY_TIMEOUT_S:-120}

# Wait (at most CB_TURN_TIMEOUT_S) until the sweep's turn counter reaches $2. The nodes
# waiting poll ten times a second while one of them measures: with bash's own `read` (the
# counter, and a tenth of a second's wait on a pipe no one writes), not a `cat` and a
# `sleep` each time: seven nodes waiting started 200 processes a second on the machine
# being measured.
_cb_wait_turn() {
    local waited=0 turn
    [ -n "${_cb_tick:-}" ] || exec {_cb_tick}<> <(:)
    while :; do
        turn=0
        read -r turn 2>/dev/null < "$1/.turn"
        [ "${turn:-0}" -ge "$2" ] 2>/dev/null && return 0
        [ "$waited" -ge $((CB_TURN_TIMEOUT_S * 10)) ] && return 1
        read -r -t 0.1 -u "$_cb_tick" _
        waited=$((waited + 1))
    done
}

# Set the turn counter to $2 unless it is already past it.
_cb_pass_turn() {
    local turn=0
    read -r turn 2>/dev/null < "$1/.turn"
    [ "${turn:-0}" -ge "$2" ] 2>/dev/null && return 0
    echo "$2" > "$1/.turn.$3" && mv -f "$1/.turn.$3" "$1/.turn"
}

# The nodes of the allocation not yet ready that Slurm has lost: DOWN, FAIL, NOT_RESPONDING,
# or no longer in the job. (Slurm removes a failed node from a --no-kill job, and a node
# set down whose slurmd still answers may be back in service at once, IDLE, with
# ReturnToService=2: the others waited CB_READY_TIMEOUT_S for it.)
_cb_lost() {
    local n state nodelist='' in_job=''
    [ -n "${SLURM_JOB_ID:-}" ] &&
        nodelist=$(scontrol show job -o "$SLURM_JOB_ID" 2>/dev/null |
                   sed -n 's/.* NodeList=\([^ ]*\).*/\1/p')
    case $nodelist in ''|'(null)') ;; *) in_job=$(scontrol show hostnames "$nodelist" 2>/dev/null) ;; esac
    for n in "$@"; do
        if [ -n "$in_job" ] && ! grep -qxF -- "$n" <<< "$in_job"; then
            echo "$n"
            continue
        fi
        state=$(scontrol show node -o "$n" 2>/dev/null | sed -n 's/.* State=\([^ ]*\).*/\1/p')
        case "+$state+" in *+DOWN*|*+FAIL+*|*+NOT_RESPONDING+*) echo "$n" ;; esac
    done
}

# Until every node of the allocation ($1/allocation) is ready or lost (or
# CB_READY_TIMEOUT_S): then the order of turns (the ready nodes, in the allocation's order)
# is written once, into the turns' directory $2.
_cb_order() {
    local sweep=$1 turns=$2 waited=0 missing
    while :; do
        missing=()
        while read -r n; do [ -e "$turns/.ready-$n" ] || missing+=("$n"); done < "$sweep/allocation"
        [ ${#missing[@]} -eq 0 ] && break
        [ "$waited" -ge "$CB_READY_TIMEOUT_S" ] && break
        if [ $((waited % 5)) -eq 0 ] && [ -z "$(comm -23 <(printf '%s\n' "${missing[@]}" | sort) \
                <(_cb_lost "${missing[@]}" | sort))" ]; then
            break
        fi
        sleep 1
        waited=$((waited + 1))
    done
    while read -r n; do [ -e "$turns/.ready-$n" ] && echo "$n"; done < "$sweep/allocation" \
        > "$turns/.order.$$" && { ln "$turns/.order.$$" "$turns/.order" 2>/dev/null || true; }
    rm -f "$turns/.order.$$"
}

cb_capacity_in_turns() {
    local sweep=$1 turns=$1/.turns-$2 node=$3 json=$4 log=$5 n i=-1 k r rc turn
    shift 5
    mkdir -p "$turns" || return 3
    : > "$turns/.ready-$node"
    [ -e "$turns/.order" ] || _cb_order "$sweep" "$turns"
    mapfile -t order < "$turns/.order"
    n=${#order[@]}
    for k in "${!order[@]}"; do [ "${order[$k]}" = "$node" ] && i=$k; done
    local runs=()
    : > "$log"
    [ "$i" -ge 0 ] || { echo "shared host: late for the turns: runs after them" >> "$log"
                        _cb_wait_turn "$turns" $((CB_TURN_ROUNDS * n)); }
    for ((r = 0; r < CB_TURN_ROUNDS; r++)); do
        if [ "$i" -ge 0 ]; then
            turn=$((r * n + i))
            _cb_wait_turn "$turns" "$turn" ||
                echo "shared host: turn $turn not reached in ${CB_TURN_TIMEOUT_S} s (a node lost?)" >> "$log"
        fi
        "$@" --json "$json.round$r" >> "$log" 2>&1
        rc=$?
        runs+=("$rc $json.round$r")
        [ "$i" -lt 0 ] || _cb_pass_turn "$turns" $((turn + 1)) "$node"
    done
    _cb_wait_turn "$turns" $((CB_TURN_ROUNDS * n)) || true
    echo "shared host: $CB_TURN_ROUNDS rounds in turns" >> "$log"
    cb_capacity_keep "$json" "$log" "${runs[@]}"
}
