# shellcheck shell=bash
# cobalt-bench: what every job script (jobs/*.slurm, and jobs/lib/osu-common.sh) shares.
# Sourced, not run. After defining say(), a job script calls:
#
#   cb_job_environment [PROGRAM]            the cobalt-bench module loaded (exit 3 if not)
#   results=$(cb_results_dir [SUBDIR]) || exit 3
#
# The smaller pieces (cb_init_modules, cb_find_modulefiles, cb_load_cobalt_bench) are for
# jobs that do not need cobalt-bench's programs (the OSU jobs); cb_python_module is for
# jobs that run a module of the Python package (the Dolphin jobs). CB_JOBS_DIR is the
# absolute path of the jobs/ directory this file is in.
#
# Finding this file. Slurm runs a copy of the batch script from its spool directory, so a
# job script cannot find its tree from its own location, and the logic that finds this file
# cannot live in it. Each jobs/*.slurm therefore starts with the same two lines (the OSU
# scripts source lib/osu-common.sh, which sources this file beside itself):
#
#   for d in "${COBALT_BENCH_JOBS:-}" "${SLURM_JOB_ID:+$(scontrol show job "$SLURM_JOB_ID" | sed -n 's|^ *Command=\([^ ]*\)/.*|\1|p')}" "$(dirname "$0")" "${SLURM_SUBMIT_DIR:-.}/jobs"; do [ -r "$d/lib/cobalt-job.sh" ] && break; done
#   . "$d/lib/cobalt-job.sh" || { echo "cannot find cobalt-bench's jobs/lib/ (load the cobalt-bench module)" >&2; exit 3; }
#
# that is, the first jobs/ directory that holds lib/cobalt-job.sh, of:
#   1. $COBALT_BENCH_JOBS: set by `module load cobalt-bench` (either module: the tree's
#      modulefiles/ or Spack's), and sbatch hands it to the job;
#   2. the directory of the script as submitted, which Slurm records (Command= in
#      `scontrol show job`: jobs/ of a checkout, share/cobalt-bench/jobs/ of an install
#      tree); asked only inside a job, since scontrol without a cluster waits a minute;
#   3. the script's own directory: a script run without Slurm (bash jobs/mem-test.slurm);
#   4. jobs/ in the submission directory ($SLURM_SUBMIT_DIR, else the current one).
# None: the job fails with exit code 3 and says so. jobs/README.md explains this to users.

#
# Time limit. #SBATCH lines cannot be sourced, so every kernel's script (mem-test, gpu-copy,
# eth-test, cb-linktest, smp-mad-stress) carries `#SBATCH --signal=TERM@30` itself: SIGTERM
# to the job's steps only, 30 to 60 s before the limit, so that the kernel writes its
# document marked "interrupted" and the script ends on its own. At the limit Slurm signals
# the batch shell and srun as well, and srun on SIGTERM kills its step at once: the
# document was lost. See jobs/README.md and docs/kernel-contract.md (Interrupted).

CB_JOBS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The ARM partition's limits, as the OSU document's ARM cluster and the site configs' arm
# partitions (ReFrame prepare_cmds) set them: locked memory and stack unlimited. Applied on
# aarch64 nodes when this file is sourced, so every job (the OSU jobs too) carries them,
# and so do ReFrame's jobs on site-configs/local-slurm's arm partition, whose prepare_cmds
# source this file; a limit the node's hard limit does not allow is said on stderr, not
# fatal.
cb_arm_limits() {
    ulimit -l unlimited 2>/dev/null ||
        echo "cobalt-job: cannot raise ulimit -l (hard limit $(ulimit -H -l))" >&2
    ulimit -s unlimited 2>/dev/null ||
        echo "cobalt-job: cannot raise ulimit -s (hard limit $(ulimit -H -s))" >&2
}
[ "$(uname -m)" != aarch64 ] || cb_arm_limits

# Lmod: a login shell (#!/bin/bash -l) normally has it; try the usual places otherwise.
# Status 1: no module command.
cb_init_modules() {
    type module >/dev/null 2>&1 && return 0
    local init
    for init in "${LMOD_PKG:-/nonexistent}/init/bash" /usr/share/lmod/lmod/init/bash \
                /opt/apps/lmod/lmod/init/bash; do
        if [ -r "$init" ]; then
            # shellcheck source=/dev/null
            . "$init"
            return 0
        fi
    done
    return 1
}

# The modulefiles/ directory that holds cobalt-bench: $COBALT_BENCH_ROOT/modulefiles; this
# tree's own (a checkout's jobs/../modulefiles, an install tree's
# share/cobalt-bench/jobs/../../../modulefiles); $SLURM_SUBMIT_DIR/modulefiles. Prints
# nothing when none has it.
cb_find_modulefiles() {
    local dir
    for dir in "${COBALT_BENCH_ROOT:+$COBALT_BENCH_ROOT/modulefiles}" \
               "$CB_JOBS_DIR/../modulefiles" \
               "$CB_JOBS_DIR/../../../modulefiles" \
               "${SLURM_SUBMIT_DIR:+$SLURM_SUBMIT_DIR/modulefiles}"; do
        if [ -n "$dir" ] && [ -d "$dir/cobalt-bench" ]; then
            (cd "$dir" && pwd)
            return 0
        fi
    done
}

# `module load cobalt-bench` from modulefiles directory $1 (empty: whatever MODULEPATH
# offers). $2, optional: a program the module puts on PATH. Status: module load's.
cb_load_cobalt_bench() {
    local modulepath=$1 program=${2:-}
    if module is-loaded cobalt-bench 2>/dev/null; then
        # Already loaded in the submitting shell (a Spack-generated module, say): keep it.
        # Loading another tree's modulefile would swap it out together with what it
        # autoloaded (openmpi). The login shell may have reset PATH: reload re-applies it.
        [ -z "$program" ] || command -v "$program" >/dev/null || module reload >/dev/null 2>&1
        return 0
    fi
    [ -n "$modulepath" ] && module use "$modulepath"
    module load cobalt-bench
}

# cobalt-bench's programs and variables for the job, from this tree: its module where there
# is a module command (exit 3 if it does not load), else the tree's bin/ on PATH.
# $1: the program the job runs (see cb_load_cobalt_bench).
# shellcheck disable=SC2120  # $1 is optional
cb_job_environment() {
    local program=${1:-} modulepath bindir
    modulepath=$(cb_find_modulefiles)
    if cb_init_modules; then
        if ! cb_load_cobalt_bench "$modulepath" "$program"; then
            say "cannot load the cobalt-bench module (modulefiles: ${modulepath:-none found})"
            exit 3
        fi
    elif [ -n "$modulepath" ]; then
        bindir="$(dirname "$modulepath")/bin"
        say "no module command; putting $bindir on PATH"
        export PATH="$bindir:$PATH"
    fi
}

# A kernel's typed options from the job's environment: `cb_typed_options KERNEL ARRAY`
# appends to the array named ARRAY the options set as CB_OPT_<KERNEL>_<NAME>=VALUE
# variables (CB_OPT_MEM_TEST_STATIONS=1 CB_OPT_MEM_TEST_DESIRED_RATE=8: --stations 1
# --desired-rate 8), each checked by `cobalt-bench options` against the kernel's own
# description: an unknown option, a value of the wrong type or out of its range returns 2
# (3: cobalt-bench cannot run here) with the option named. The values are arguments,
# one a line, never evaluated. None set: nothing is asked of cobalt-bench.
#   cb_typed_options mem-test opts || exit $?
cb_typed_options() {
    local prefix words word
    local -n _cb_into=$2
    prefix="CB_OPT_$(echo "$1" | tr 'a-z-' 'A-Z_')_"
    [ -n "$(compgen -v "$prefix")" ] || return 0
    if ! cobalt-bench --version >/dev/null 2>&1; then
        say "cobalt-bench cannot run here ($(command -v cobalt-bench || echo 'not found')):" \
            "cannot check the ${prefix}* options"
        return 3
    fi
    words=$(cobalt-bench options --env "$1") || return $?
    [ -z "$words" ] || while IFS= read -r word; do _cb_into+=("$word"); done <<< "$words"
}

# The job's results directory, created: $COBALT_BENCH_RESULTS/slurm (default:
# results/slurm in the submission directory), or its subdirectory $1. Prints its path.
# shellcheck disable=SC2120  # $1 is optional
cb_results_dir() {
    local dir="${COBALT_BENCH_RESULTS:-${SLURM_SUBMIT_DIR:-$PWD}/results}/slurm${1:+/$1}"
    mkdir -p "$dir" || return 3
    echo "$dir"
}

# A kernel's run under way: `cb_job_started JSON KERNEL` before the kernel starts writes
# <JSON without .json>.started (the kernel, the job id, its nodes, when); `cobalt-bench
# judge` removes it once it has recorded the job's end. A job killed before that (its node
# failed, its time limit came without the signal, scancel --signal=KILL) leaves the mark,
# and `cobalt-bench report` names the job that left no document, with Slurm's state of it,
# instead of forgetting it.
cb_job_started() {
    printf 'kernel %s\njob %s\nnodes %s\nstarted %s\n' "$2" "${SLURM_JOB_ID:-$$}" \
        "${SLURM_JOB_NODELIST:-$(hostname)}" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
        > "${1%.json}.started" || say "cannot write ${1%.json}.started"
}

# The job's end, judged: every exit status of the kernel (0, 1, 2, 3, a signal's 128+N, a
# crash's) goes to `cobalt-bench judge --exit-status`, the one judge (the shell reads no
# exit code). It records the end beside the document (<name>.judged.json, which `cobalt-bench
# report` reads, even where the kernel was killed before it wrote the document) and, when
# the submitting shell names a site (COBALT_BENCH_SITE: a name under site-configs/, or a
# site directory; sbatch hands it to the job), judges the document by that site's
# references.yaml, the same file and rule a ReFrame run of the site is judged by. Its exit
# status is the job's: 0 met, 1 did not (or was killed, or crashed), 2 usage, 3 cannot run;
# without a site, the kernel's own verdict (its built-in threshold). Where cobalt-bench
# cannot run (a tree with the kernels only, a node of another architecture) the kernel's
# status is passed on as it is, unjudged. Partition: $COBALT_BENCH_PARTITION, else the
# Slurm partition where the site has one of that name, else the site's only one.
#   cb_judge JSON KERNEL_EXIT_STATUS COMMAND_LINE; rc=$?
cb_judge() {
    local json=$1 status=$2 command=$3 judged
    # cobalt-bench is a Python program: on a node of another architecture (the local
    # cluster's emulated aarch64 node) or without its Python, it is there but cannot run.
    if ! cobalt-bench --version >/dev/null 2>&1; then
        # Nothing to judge with: the kernel's status as it is, its start mark left for the
        # report to find.
        say "cobalt-bench cannot run here ($(command -v cobalt-bench || echo 'not found')):" \
            "the end of $json is not recorded nor judged (kernel exit status $status," \
            "passed on; load the cobalt-bench module)"
        return "$status"
    fi
    cobalt-bench judge --exit-status "$status" \
        ${COBALT_BENCH_SITE:+--site "$COBALT_BENCH_SITE"} \
        ${COBALT_BENCH_PARTITION:+--partition "$COBALT_BENCH_PARTITION"} \
        ${SLURMD_NODENAME:+--node "$SLURMD_NODENAME"} \
        --command "$command" "$json"
    judged=$?
    # A job's own result for the site's monitoring; a node sweep's pack leaves it to the
    # sweep's report (one file for all nodes).
    [ -n "${CB_NODE_PACK:-}" ] || cb_export "$json" \
        "cobalt_bench_$(basename "${json%-*}")_${SLURMD_NODENAME:-$(hostname -s)}.prom"
    say "verdict of $json${COBALT_BENCH_SITE:+ by site $COBALT_BENCH_SITE}: exit code $judged" \
        "(0 met the site's references, 1 did not or the kernel was killed or crashed, 2" \
        "usage, 3 cannot run); the kernel's own (built-in threshold): exit code $status"
    return "$judged"
}

# The judgement of RESULT (a document, a sweep's directory) where the site's monitoring
# reads it (docs/prometheus.md): when $COBALT_BENCH_PROMETHEUS_DIR names node_exporter's
# textfile directory (the site's module or the submitting shell sets it), written there
# as NAME, whole. Nothing happens without it; a failed export is said, and changes no
# exit status (the verdict is the job's).
#   cb_export RESULT NAME.prom
cb_export() {
    [ -n "${COBALT_BENCH_PROMETHEUS_DIR:-}" ] || return 0
    cobalt-bench export prometheus "$1" --textfile-dir "$COBALT_BENCH_PROMETHEUS_DIR" \
        --file-name "$2" ${COBALT_BENCH_SITE:+--site "$COBALT_BENCH_SITE"} ||
        say "could not export $1 to $COBALT_BENCH_PROMETHEUS_DIR (exit code $?)"
    return 0
}

# Makes `python3 -m MODULE` work for MODULE of this tree's Python package cobalt_bench
# (e.g. cobalt_bench.tools.dolphin, the Dolphin jobs' verdicts): the module put the
# package on PYTHONPATH; without a module command, this tree's own (a checkout's python/,
# an install tree's lib/cobalt-bench/python/) goes on PYTHONPATH. Status 3, saying so,
# when python3 cannot import it.
cb_python_module() {
    local module=$1 dir
    python3 -c "import $module" 2>/dev/null && return 0
    for dir in "$CB_JOBS_DIR/../python" "$CB_JOBS_DIR/../../../lib/cobalt-bench/python"; do
        if [ -f "$dir/cobalt_bench/__init__.py" ]; then
            PYTHONPATH="$(cd "$dir" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
            export PYTHONPATH
            python3 -c "import $module" 2>/dev/null && return 0
        fi
    done
    say "python3 cannot import $module (load the cobalt-bench module)"
    return 3
}

# A single-node kernel's whole job (mem-test.slurm, cpu-test.slurm): one task with every
# CPU of the node, the kernel's options string ($2: split like its *_OPTS variable) and its
# typed CB_OPT_<KERNEL>_<NAME> options after it, its document in the results directory,
# the end recorded and judged. Status: the judge's (cb_judge).
#   cb_whole_node_kernel KERNEL "$KERNEL_OPTS"; exit $?
cb_whole_node_kernel() {
    local kernel=$1 results json rc
    local -a opts
    if ! command -v "$kernel" >/dev/null; then
        say "$kernel not found (build it with make, or set COBALT_BENCH_ROOT)"
        return 3
    fi
    results=$(cb_results_dir) || return 3
    json="$results/$kernel-${SLURM_JOB_ID:-$$}.json"
    read -r -a opts <<< "$2"
    cb_typed_options "$kernel" opts || return $?

    say "job ${SLURM_JOB_ID:-none} on $(hostname), $(command -v "$kernel")"
    say "options: ${opts[*]:-($kernel defaults)}; JSON: $json"
    cb_job_started "$json" "$kernel"
    if [ -n "${SLURM_JOB_ID:-}" ]; then
        # All CPUs of the node for the one task (srun does not inherit them from sbatch).
        srun --ntasks=1 --cpus-per-task="${SLURM_CPUS_ON_NODE:-1}" \
            "$kernel" "${opts[@]}" --json "$json"
    else
        "$kernel" "${opts[@]}" --json "$json"
    fi
    rc=$?
    say "$kernel exit code $rc (0 compliant, 1 not compliant, 2 usage, 3 cannot run)"
    cb_judge "$json" "$rc" "$kernel ${opts[*]} --json $json"
}
