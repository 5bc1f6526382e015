# shellcheck shell=bash
# cobalt-bench: what the OSU job scripts (jobs/osu_*.slurm) share. Sourced, not run:
#
#   osu_job BENCHMARK    e.g. osu_job osu_latency
#
# loads the modules, finds the OSU binary, runs it on the job's tasks and keeps its
# output. Environment (sbatch hands the submitting shell's environment to the job):
#   OSU_MODULE            OSU module(s) to load, e.g. the SJTU document's
#                         "osu-micro-benchmarks/5.7.1-gcc-11.2.0-openmpi" (several: space
#                         separated; they load in order). Unset: osu-micro-benchmarks if
#                         the module system has it; set but empty: no module.
#   COBALT_OSU_PATH       where an OSU build is (install prefix or build tree, OSU 5.x or
#                         7.x layout; colon-separated list); when set, it wins over PATH
#   OSU_LAUNCHER          srun (default) or mpirun
#   OSU_SRUN_MPI          srun's MPI plugin (srun --mpi=...): pmix for Debian's Open MPI,
#                         pmi2 on the SJTU ARM cluster; default: Slurm's MpiDefault
#   OSU_LAUNCHER_OPTS     more launcher options
#   OSU_OPTS              options for the benchmark (e.g. "-m 1:65536 -i 1000");
#                         default none: OSU's own, as the document runs it
#   COBALT_BENCH_RESULTS  results directory: OSU's output goes to
#                         $COBALT_BENCH_RESULTS/slurm/<benchmark>-<jobid>.txt
#                         (default: $SLURM_SUBMIT_DIR/results/slurm/)
#   COBALT_BENCH_ROOT     a cobalt-bench tree whose modulefiles/ to use
# Exit code: the launcher's (0: OSU ran and printed its table); 1 if OSU exited 0 without
# a table; 3 when it cannot run (no OSU, a module that does not load, not in a job).

# Subdirectories of an OSU tree that hold the MPI benchmarks: install prefix (5.x and
# 7.x), 5.x build tree, 7.x build tree; and the directory itself.
_OSU_SUBDIRS=". libexec/osu-micro-benchmarks/mpi/pt2pt
libexec/osu-micro-benchmarks/mpi/collective mpi/pt2pt mpi/collective
c/mpi/pt2pt/standard c/mpi/collective/blocking"

_osu_say() { echo "${_osu_me:-osu}: $*"; }

# Lmod: a login shell (#!/bin/bash -l) normally has it; try the usual places otherwise.
_osu_init_modules() {
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

# `module load cobalt-bench` from the tree the job belongs to ($1: its jobs/ directory).
# OSU does not need it; a job that cannot load it says so and goes on.
_osu_load_cobalt_bench() {
    local jobs_dir=$1 dir
    for dir in "${COBALT_BENCH_ROOT:+$COBALT_BENCH_ROOT/modulefiles}" \
               "${jobs_dir:+$jobs_dir/../modulefiles}" \
               "${jobs_dir:+$jobs_dir/../../../modulefiles}" \
               "${SLURM_SUBMIT_DIR:+$SLURM_SUBMIT_DIR/modulefiles}"; do
        if [ -n "$dir" ] && [ -d "$dir/cobalt-bench" ]; then
            module use "$(cd "$dir" && pwd)"
            break
        fi
    done
    module load cobalt-bench 2>/dev/null ||
        _osu_say "note: no cobalt-bench module (not needed to run OSU)"
}

# The OSU module(s): OSU_MODULE, or osu-micro-benchmarks where the module system has it.
_osu_load_osu_modules() {
    local mod
    if [ -z "${OSU_MODULE+set}" ]; then
        if module is-avail osu-micro-benchmarks 2>/dev/null; then
            OSU_MODULE="osu-micro-benchmarks"
        else
            _osu_say "no osu-micro-benchmarks module; looking on PATH and COBALT_OSU_PATH"
            return 0
        fi
    fi
    for mod in $OSU_MODULE; do
        if ! module load "$mod"; then
            _osu_say "cannot load module $mod (OSU_MODULE=\"$OSU_MODULE\")"
            return 3
        fi
    done
    [ -z "$OSU_MODULE" ] || _osu_say "modules: $OSU_MODULE"
}

# The path of OSU benchmark $1: under COBALT_OSU_PATH when set (an explicit choice), else
# on PATH (where modules put it). The same order as the ReFrame checks (osu_install.py).
_osu_find() {
    local bench=$1 root sub path
    local -a roots
    IFS=: read -r -a roots <<< "${COBALT_OSU_PATH:-}"
    for root in "${roots[@]}"; do
        [ -n "$root" ] || continue
        for sub in $_OSU_SUBDIRS; do
            path=$root/$sub/$bench
            [ "$sub" = . ] && path=$root/$bench
            [ -f "$path" ] && [ -x "$path" ] && { echo "$path"; return 0; }
        done
    done
    command -v "$bench"
}

osu_job() {
    local bench=$1 jobs_dir=${2:-}
    _osu_me="$bench.slurm"

    if [ -z "${SLURM_JOB_ID:-}" ]; then
        _osu_say "not in a Slurm job: submit it with sbatch"
        return 3
    fi

    if _osu_init_modules; then
        _osu_load_cobalt_bench "$jobs_dir"
        _osu_load_osu_modules || return 3
    elif [ -n "${OSU_MODULE:-}" ]; then
        _osu_say "OSU_MODULE=\"$OSU_MODULE\" given, but there is no module command"
        return 3
    fi

    local osu
    if ! osu=$(_osu_find "$bench"); then
        _osu_say "$bench not found: not on PATH${OSU_MODULE:+ after module load $OSU_MODULE}," \
                 "nor under COBALT_OSU_PATH (${COBALT_OSU_PATH:-not set}). Install the OSU" \
                 "micro-benchmarks and name their module in OSU_MODULE, or set" \
                 "COBALT_OSU_PATH to an OSU install prefix or build tree."
        return 3
    fi

    local -a launcher opts
    case "${OSU_LAUNCHER:-srun}" in
        srun) launcher=(srun ${OSU_SRUN_MPI:+--mpi=$OSU_SRUN_MPI}) ;;
        mpirun) launcher=(mpirun) ;;
        *) _osu_say "OSU_LAUNCHER must be srun or mpirun, not '$OSU_LAUNCHER'"; return 3 ;;
    esac
    read -r -a opts <<< "${OSU_LAUNCHER_OPTS:-}"
    launcher+=("${opts[@]}")
    read -r -a opts <<< "${OSU_OPTS:-}"

    local results="${COBALT_BENCH_RESULTS:-${SLURM_SUBMIT_DIR:-$PWD}/results}/slurm"
    mkdir -p "$results" || return 3
    local out="$results/$bench-$SLURM_JOB_ID.txt"

    _osu_say "job $SLURM_JOB_ID: $SLURM_NTASKS tasks on ${SLURM_JOB_NUM_NODES:-?} nodes" \
             "(${SLURM_JOB_NODELIST:-?}, tasks per node ${SLURM_TASKS_PER_NODE:-?})"
    _osu_say "running: ${launcher[*]} $osu ${opts[*]}"
    _osu_say "output: $out"

    set -o pipefail
    "${launcher[@]}" "$osu" "${opts[@]}" | tee "$out"
    local rc=$?
    set +o pipefail

    if [ $rc -eq 0 ] && ! grep -qE '^[0-9]+[[:space:]]+[0-9.]+' "$out"; then
        _osu_say "$bench exited 0 but printed no results table"
        rc=1
    fi
    _osu_say "$(sed -n 's/^# \(OSU .*\)$/\1/p' "$out" | head -n 1)${osu:+ ($osu)}, exit code $rc"
    return $rc
}
