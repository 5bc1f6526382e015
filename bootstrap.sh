#!/bin/bash
# First command of a newcomer on a fresh Debian 12 machine (as root, or with sudo):
# installs what is missing (debian-packages.txt, a Python venv from requirements.txt),
# builds the kernels and runs the suite on this machine with the embedded `local` site.
#
#   ./bootstrap.sh            install, build, run the suite
#   ./bootstrap.sh --no-run   install and build only (what CI and `make test` need)
set -euo pipefail
cd "$(dirname "$0")"

run_suite=1
case "${1:-}" in
    --no-run) run_suite=0 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    '') ;;
    *) echo "bootstrap.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
esac

SUDO=
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "bootstrap.sh: run as root or install sudo" >&2; exit 3; }
    SUDO=sudo
fi

# Debian packages: only the missing ones, so a second run is quick.
mapfile -t wanted < <(grep -v '^\s*\(#\|$\)' debian-packages.txt)
missing=()
for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing Debian packages: ${missing[*]}"
    # A package of another architecture (libc6:arm64) needs it added to dpkg first.
    for arch in $(printf '%s\n' "${missing[@]}" | sed -n 's/^[^:]*:\([a-z0-9]*\)$/\1/p' | sort -u); do
        dpkg --print-foreign-architectures | grep -qx "$arch" || $SUDO dpkg --add-architecture "$arch"
    done
    $SUDO apt-get update -q
    # The packages' own init scripts cannot start daemons here; the local cluster
    # script starts them itself.
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi

# Python side: ReFrame, pytest and the report's libraries, pinned; then the cobalt_bench
# package (pyproject.toml) itself, editable: .venv imports the checkout's python/, and its
# console scripts (cobalt-bench, cb-linktest-report) are in .venv/bin (make links them
# into bin/). Built with the setuptools pinned in requirements.txt, not a fresh download.
if [ ! -x .venv/bin/python ]; then
    echo "== creating .venv"
    python3 -m venv .venv
fi
.venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
.venv/bin/pip install -q --disable-pip-version-check --no-build-isolation --no-deps -e .

echo "== building"
make

if [ $run_suite -eq 1 ]; then
    echo "== running the suite on this machine (site: local)"
    # It ends with the run's report: the verdict line (DEMONSTRATION here: `local` is no
    # compliance definition), its reasons, and the path of the HTML report.
    make --no-print-directory run
fi
