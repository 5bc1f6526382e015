# shellcheck shell=bash
# cobalt-bench: the watchdog of a node sweep's batch host, run by jobs/node-sweep.slurm as
# a step of its own on another node of the allocation (srun --overlap). A sweep is
# submitted --no-kill, so that a lost node stops neither the job nor the others' tests; but
# when the node that runs the batch script is lost, nothing is left to end the job: it held
# the other nodes until its time limit. This watches Slurm's state of the batch host every
# CB_WATCH_INTERVAL_S seconds (default 10); once it is DOWN, FAIL or NOT_RESPONDING it
# names it in DIR/batch-host-lost (which the report reads: a failure of that node), waits
# (at most CB_WATCH_GRACE_S, default 300) for the other nodes' packs to end (each writes
# DIR/.pack-done-NODE, lib/node-pack.sh), writes the
# sweep's report as the batch script would have, and cancels the job. While the batch
# host lives it only sleeps; the batch script ends it with the job.
#   bash batch-watch.sh DIR BATCH_HOST
set -u
sweep=${1:?usage: batch-watch.sh DIR BATCH_HOST} host=${2:?usage: batch-watch.sh DIR BATCH_HOST}
interval=${CB_WATCH_INTERVAL_S:-10} grace=${CB_WATCH_GRACE_S:-300}
job=${SLURM_JOB_ID:?not in a Slurm job}
say() { echo "node-sweep watchdog on ${SLURMD_NODENAME:-$(hostname -s)}: $*" >> "$sweep/node-sweep.log"; }
# Watching: the batch script starts the pack on this mark.
: > "$sweep/.watching"

while sleep "$interval"; do
    state=$(scontrol show node -o "$host" 2>/dev/null | sed -n 's/.* State=\([^ ]*\).*/\1/p')
    case "+$state+" in
        *+DOWN*|*+FAIL+*|*+NOT_RESPONDING+*|*'*'*) break ;;
    esac
done
say "the batch host $host is lost (Slurm: $state): the sweep ends here"
printf '%s %s %s\n' "$host" "$state" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$sweep/.batch-host-lost.tmp" &&
    mv -f "$sweep/.batch-host-lost.tmp" "$sweep/batch-host-lost"
# The packs of the live nodes: each ends with DIR/.pack-done-NODE; or the grace time.
for _ in $(seq $((grace / 5))); do
    left=$(grep -vx "$host" "$sweep/allocation" | while read -r n; do
               [ -e "$sweep/.pack-done-$n" ] || echo "$n"; done | wc -l)
    [ "$left" -eq 0 ] && break
    sleep 5
done
if command -v cobalt-bench >/dev/null; then
    cobalt-bench report "$sweep" ${COBALT_BENCH_SITE:+--site "$COBALT_BENCH_SITE"} >> "$sweep/node-sweep.log" 2>&1
    say "report: $sweep/report (exit code $?), written by the watchdog"
fi
say "cancelling job $job"
scancel "$job"
