# shellcheck shell=bash
# cobalt-bench: the single-node pack of jobs/node-sweep.slurm, run once on every node of
# its allocation (srun --ntasks-per-node=1): preflight, mem-test and, where the node has an
# NVIDIA GPU, gpu-copy, one after the other, each document written into DIR/<node>/ and
# judged by the site (cb_judge) when the job names one.
#   bash node-pack.sh DIR
# Exit code: the worst of the tests' (0 all met, 1 one did not, 3 one could not run).

set -u
CB_JOBS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
node=${SLURMD_NODENAME:-$(hostname -s)}
say() { echo "node-pack $node: $*"; }
# shellcheck source=cobalt-job.sh
. "$CB_JOBS_DIR/lib/cobalt-job.sh" || exit 3

dir=${1:?usage: node-pack.sh DIR}/$node
mkdir -p "$dir" || exit 3
jobid=${SLURM_JOB_ID:-$$}
# One task per node: its start mark names this node, not the whole allocation.
# shellcheck disable=SC2034  # read by cb_job_started
SLURM_JOB_NODELIST=$node
worst=0
worse() { if [ "$1" -gt "$worst" ]; then worst=$1; fi; }

for test in ${NODE_SWEEP_TESTS:-preflight mem-test gpu-copy}; do
    json="$dir/$test-$jobid.json"
    case $test in
        preflight)
            cb_job_started "$json" preflight
            cobalt-bench preflight --quiet --json "$json"
            rc=$?
            say "preflight exit code $rc (0 every setting passes, 1 one fails or is unknown)"
            # Recorded with the site's partition as the Preflight check of a ReFrame run is;
            # a setting that fails is a finding for the report (the likely why of an
            # outlier), required or not by the site's compliance.yaml: not this verdict.
            cb_judge "$json" "$rc" "cobalt-bench preflight --json $json" > /dev/null
            [ "$rc" -le 1 ] || worse "$rc"
            continue ;;
        mem-test) read -r -a opts <<< "${MEM_TEST_OPTS:-}" ;;
        gpu-copy)
            if [ ! -d /proc/driver/nvidia/gpus ]; then
                say "gpu-copy: no NVIDIA GPU on this node, not run"
                continue
            fi
            read -r -a opts <<< "${GPU_COPY_OPTS:-}" ;;
        *) say "unknown test '$test' in NODE_SWEEP_TESTS (preflight mem-test gpu-copy)"
           worse 2; continue ;;
    esac
    cb_job_started "$json" "$test"
    "$test" "${opts[@]}" --json "$json" > "$dir/$test-$jobid.out" 2>&1
    rc=$?
    say "$test exit code $rc (0 compliant, 1 not compliant, 2 usage, 3 cannot run);" \
        "log $dir/$test-$jobid.out"
    cb_judge "$json" "$rc" "$test ${opts[*]} --json $json"
    worse $?
done
exit "$worst"
