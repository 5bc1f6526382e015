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
#   OSU_LAUNCHER          srun (default), or the mpirun/mpiexec of the MPI OSU was built
#                         with, by name or path: plain mpirun is whatever PATH holds
#                         (Debian: Open MPI's); mpiexec.mpich is Debian's MPICH (hydra,
#                         which starts its proxies with srun)
#   OSU_SRUN_MPI          srun's MPI plugin (srun --mpi=...): pmix for Debian's Open MPI,
#                         pmi2 for MPICH and on the SJTU ARM cluster; default: Slurm's
#                         MpiDefault (docs/mpi.md)
#   OSU_LAUNCHER_OPTS     more launcher options
#   OSU_OPTS              options for the benchmark (e.g. "-m 1:65536 -i 1000");
#                         default none: OSU's own, as the document runs it
#   COBALT_BENCH_RESULTS  results directory: OSU's output goes to
#                         $COBALT_BENCH_RESULTS/slurm/<benchmark>-<jobid>.txt
#                         (default: $SLURM_SUBMIT_DIR/results/slurm/)
#   COBALT_BENCH_ROOT     a cobalt-bench tree whose modulefiles/ to use
# Exit code: the launcher's (0: OSU ran and printed its table); 1 if OSU exited 0 without
# a table; 3 when it cannot run (no OSU, a module that does not load, not in a job).

# Subdirectories of an OSU tree that hold the MPI benchmarks (install prefix, build tree,
# the directory itself): the package's one list, python/cobalt_bench/data/osu-search-dirs.
_OSU_SUBDIRS=$(grep -v '^#' "$(dirname "${BASH_SOURCE[0]}")/osu-search-dirs")

_osu_say() { echo "${_osu_me:-osu}: $*"; }

# Modules and the results directory: what every job script shares.
# shellcheck source-path=SCRIPTDIR source=cobalt-job.sh
. "$(dirname "${BASH_SOURCE[0]}")/cobalt-job.sh"

# The OSU module(s): OSU_MODULE, or osu-micro-benchmarks where the module system has it.
_osu_load_osu_modules() {
    local mod
    # An OSU the loaded modules already put on PATH (cobalt-bench's Spack module loads its
    # own OSU) is kept: loading the default osu-micro-benchmarks module could swap it out.
    if [ -z "${OSU_MODULE+set}" ] && command -v "${_osu_me%.slurm}" >/dev/null 2>&1; then
        _osu_say "using $(command -v "${_osu_me%.slurm}") (on PATH from the loaded modules)"
        return 0
    fi
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
# on PATH (where modules put it). The same order as the ReFrame checks (cobalt_bench.tools.osu_install).
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
    local bench=$1
    _osu_me="$bench.slurm"

    if [ -z "${SLURM_JOB_ID:-}" ]; then
        _osu_say "not in a Slurm job: submit it with sbatch"
        return 3
    fi

    if cb_init_modules; then
        # OSU does not need cobalt-bench's module; a job that cannot load it says so and
        # goes on.
        cb_load_cobalt_bench "$(cb_find_modulefiles)" 2>/dev/null ||
            _osu_say "note: no cobalt-bench module (not needed to run OSU)"
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
        # An MPI's own launcher inside the allocation, by name (mpirun, mpiexec.mpich) or path:
        # where several MPIs are installed, plain mpirun may not be OSU's.
        mpirun|mpiexec|mpirun.*|mpiexec.*|*/mpirun|*/mpiexec|*/mpirun.*|*/mpiexec.*)
            launcher=("$OSU_LAUNCHER") ;;
        *) _osu_say "OSU_LAUNCHER must be srun, or an mpirun or mpiexec (e.g. mpiexec.mpich)," \
                    "not '$OSU_LAUNCHER'"; return 3 ;;
    esac
    read -r -a opts <<< "${OSU_LAUNCHER_OPTS:-}"
    launcher+=("${opts[@]}")
    read -r -a opts <<< "${OSU_OPTS:-}"

    local results
    results=$(cb_results_dir) || return 3
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
