# shellcheck shell=bash
# cobalt-bench: what every job script (jobs/*.slurm, and jobs/lib/osu-common.sh) shares.
# Sourced, not run. A job script finds this file beside the script it was submitted as
# (Slurm runs a copy from its spool directory, so each script locates jobs/lib/ itself),
# defines say(), and then:
#
#   cb_job_environment JOBS_DIR [PROGRAM]   the cobalt-bench module loaded (exit 3 if not)
#   results=$(cb_results_dir [SUBDIR]) || exit 3
#
# The smaller pieces (cb_init_modules, cb_find_modulefiles, cb_load_cobalt_bench) are for
# jobs that do not need cobalt-bench's programs (the OSU jobs).

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

# The modulefiles/ directory that holds cobalt-bench, for the tree whose jobs/ directory is
# $1 (may be empty): $COBALT_BENCH_ROOT/modulefiles; that tree's own (a checkout's
# jobs/../modulefiles, an install tree's share/cobalt-bench/jobs/../../../modulefiles);
# $SLURM_SUBMIT_DIR/modulefiles. Prints nothing when none has it.
cb_find_modulefiles() {
    local jobs_dir=$1 dir
    for dir in "${COBALT_BENCH_ROOT:+$COBALT_BENCH_ROOT/modulefiles}" \
               "${jobs_dir:+$jobs_dir/../modulefiles}" \
               "${jobs_dir:+$jobs_dir/../../../modulefiles}" \
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

# cobalt-bench's programs and variables for the job, from the tree whose jobs/ directory is
# $1: its module where there is a module command (exit 3 if it does not load), else the
# tree's bin/ on PATH. $2: the program the job runs (see cb_load_cobalt_bench).
cb_job_environment() {
    local jobs_dir=$1 program=${2:-} modulepath bindir
    modulepath=$(cb_find_modulefiles "$jobs_dir")
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

# The job's results directory, created: $COBALT_BENCH_RESULTS/slurm (default:
# results/slurm in the submission directory), or its subdirectory $1. Prints its path.
# shellcheck disable=SC2120  # $1 is optional
cb_results_dir() {
    local dir="${COBALT_BENCH_RESULTS:-${SLURM_SUBMIT_DIR:-$PWD}/results}/slurm${1:+/$1}"
    mkdir -p "$dir" || return 3
    echo "$dir"
}
