# shellcheck shell=bash
# cobalt-bench: the single-node pack of jobs/node-sweep.slurm, run once on every node of
# its allocation (srun --ntasks-per-node=1): the node's inventory, preflight, mem-test, its
# memory capacity (mem-capacity: mem-test --max, compared with the peers by the report), its
# cores' compute rate (cpu-test, compared with the peers too) and, where the node has an
# NVIDIA GPU, gpu-copy, one after the other, each document written into DIR/<node>/ and
# its end recorded and judged (cb_judge: by the site when the job names one). DIR/<node>/plan
# lists the tests the node is to run.
#   bash node-pack.sh DIR
# Exit code: the worst of the tests' (0 all met, 1 one did not, 3 one could not run).

set -u
CB_JOBS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
node=${SLURMD_NODENAME:-$(hostname -s)}
say() { echo "node-pack $node: $*"; }
# shellcheck source=cobalt-job.sh
. "$CB_JOBS_DIR/lib/cobalt-job.sh" || exit 3
# shellcheck source=capacity.sh
. "$CB_JOBS_DIR/lib/capacity.sh" || exit 3
# shellcheck source=shared-host.sh
. "$CB_JOBS_DIR/lib/shared-host.sh" || exit 3

dir=${1:?usage: node-pack.sh DIR}/$node
mkdir -p "$dir" || exit 3
jobid=${SLURM_JOB_ID:-$$}
# One task per node: its start mark names this node, not the whole allocation.
# shellcheck disable=SC2034  # read by cb_job_started
SLURM_JOB_NODELIST=$node
# The sweep's report exports all nodes at once (cb_export), not each node's documents.
export CB_NODE_PACK=1
worst=0
worse() { if [ "$1" -gt "$worst" ]; then worst=$1; fi; }

# The node's plan, before any test: the report holds each planned test to a judged result
# (a test without one is a failure of this node), and a node that wrote no plan at all
# (its directory could not be made, its task never started) is one too.
plan=()
for test in ${NODE_SWEEP_TESTS:-inventory preflight mem-test mem-capacity cpu-test gpu-copy}; do
    if [ "$test" = gpu-copy ] && [ ! -d /proc/driver/nvidia/gpus ]; then
        say "gpu-copy: no NVIDIA GPU on this node, not run"
        continue
    fi
    plan+=("$test")
done
printf '%s\n' "${plan[@]}" > "$dir/.plan.tmp" && mv -f "$dir/.plan.tmp" "$dir/plan" ||
    say "cannot write $dir/plan"

for test in "${plan[@]}"; do
    json="$dir/$test-$jobid.json"
    program=$test
    case $test in
        inventory)
            # What the node is (CPUs usable, memory, kernel, firmware): the report groups
            # the nodes into configuration classes and names where one differs. No result
            # to judge: a document, or a failure of the node (its plan lists it).
            cobalt-bench inventory --quiet --json "$dir/inventory-$jobid.json" ||
                { say "inventory: exit code $?"; worse 1; }
            continue ;;
        preflight)
            # Recorded with the site's partition as the Preflight check of a ReFrame run is;
            # a setting that fails is a finding for the report (the likely why of an
            # outlier), required or not by the site's compliance.yaml.
            cb_job_started "$json" preflight
            cobalt-bench preflight --quiet --json "$json"
            cb_judge "$json" "$?" "cobalt-bench preflight --json $json" > /dev/null
            worse $?
            continue ;;
        mem-test) read -r -a opts <<< "${MEM_TEST_OPTS:-}"
            cb_typed_options mem-test opts || { worse $?; continue; } ;;
        mem-capacity)
            # Unpaced: what the node's memory and the CPUs the job got can do, for the
            # report to hold against its peers (no reference judges it).
            program=mem-test
            read -r -a opts <<< "--max ${MEM_CAPACITY_OPTS---duration 5}" ;;
        gpu-copy) read -r -a opts <<< "${GPU_COPY_OPTS:-}"
            cb_typed_options gpu-copy opts || { worse $?; continue; } ;;
        cpu-test)
            # Unpaced too: each core's FMA rate, held against the peers' by the report.
            read -r -a opts <<< "${CPU_TEST_OPTS---duration 3}"
            cb_typed_options cpu-test opts || { worse $?; continue; } ;;
        *) say "unknown test '$test' in NODE_SWEEP_TESTS (inventory preflight mem-test mem-capacity cpu-test gpu-copy)"
           worse 2; continue ;;
    esac
    cb_job_started "$json" "$test"
    # The unpaced tests, and the metric whose median run each keeps.
    case $test in
        mem-capacity) CB_CAPACITY_METRIC=measured_speed ;;
        cpu-test) CB_CAPACITY_METRIC=node_gflops ;;
        *) CB_CAPACITY_METRIC= ;;
    esac
    if [ -n "$CB_CAPACITY_METRIC" ] && [ -n "${NODE_SWEEP_SHARED_HOST:-}" ]; then
        # Nodes that are one machine (node-sweep.slurm found it): in turns, lib/shared-host.sh.
        cb_capacity_in_turns "$1" "$test" "$node" "$json" "$dir/$test-$jobid.out" "$program" "${opts[@]}"
    elif [ -n "$CB_CAPACITY_METRIC" ]; then
        # Its median of CB_CAPACITY_ROUNDS runs (lib/capacity.sh).
        cb_capacity_rounds "$json" "$dir/$test-$jobid.out" "$program" "${opts[@]}"
    else
        "$program" "${opts[@]}" --json "$json" > "$dir/$test-$jobid.out" 2>&1
    fi
    cb_judge "$json" "$?" "$program ${opts[*]} --json $json"
    worse $?
    say "$test: log $dir/$test-$jobid.out"
done
# For the sweep's watchdog (lib/batch-watch.sh): this node's pack is over.
: > "$1/.pack-done-$node"
exit "$worst"
