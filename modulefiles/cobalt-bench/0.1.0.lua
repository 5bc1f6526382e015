-- -*- lua -*-
-- cobalt-bench: HPC acceptance benchmarks (mem-test, cpu-test, gpu-copy, eth-test, OSU wrappers).
--
-- One file serves a source checkout (ROOT/modulefiles/cobalt-bench/0.1.0.lua, kernels and
-- the command links in ROOT/bin, the Python package in ROOT/python, jobs/checks/site
-- configs in ROOT) and a `make install PREFIX=ROOT` tree (ROOT/bin,
-- ROOT/lib/cobalt-bench/python, ROOT/share/cobalt-bench/...).
--
-- Where ROOT is: `make install` (and the Spack recipe, which runs it) writes the install
-- prefix into `installed` below; a checkout's copy keeps the placeholder and computes its
-- root from this file's own (real) path, three directory levels up. Python code finds the
-- tree in cobalt_bench/paths.py, from where the package is (or $COBALT_BENCH_ROOT, set
-- here): no third way.
--
--   module use /path/to/cobalt-bench/modulefiles
--   module load cobalt-bench

local version = myModuleVersion()

local installed = "@PREFIX@"
local root, data, pylib
if installed:sub(1, 1) == "/" then
    root = installed
    data = pathJoin(root, "share", "cobalt-bench")
    pylib = pathJoin(root, "lib", "cobalt-bench", "python")
else
    -- A checkout. This file's real path: a site may link it (or its directory) into a
    -- central MODULEPATH, and the root is where the file really lives.
    local file = myFileName()
    local real = subprocess("readlink -f '" .. file:gsub("'", "'\\''") .. "' 2>/dev/null")
    real = (real or ""):gsub("%s+$", "")
    if real ~= "" then file = real end
    root = file:gsub("/[^/]*$", ""):gsub("/[^/]*$", ""):gsub("/[^/]*$", "")
    if root == "" then root = "/" end
    data = root
    pylib = pathJoin(root, "python")
end

help(string.format([[
cobalt-bench %s: HPC acceptance benchmarks.

Kernels (mem-test, ...) are in %s.
Slurm batch scripts:  $COBALT_BENCH_JOBS      (sbatch $COBALT_BENCH_JOBS/mem-test.slurm)
ReFrame checks:       $COBALT_BENCH_CHECKS
Site configurations:  $COBALT_BENCH_SITE_CONFIGS
  reframe -c $COBALT_BENCH_CHECKS -r     (any ReFrame configuration, or none)
  reframe -C $COBALT_BENCH_SITE_CONFIGS/local/config.py -c $COBALT_BENCH_CHECKS -r
Python package cobalt_bench (PYTHONPATH): %s
  cobalt-bench report|preflight|runs|linktest-report
]], version, pathJoin(root, "bin"), pylib))

whatis("Name: cobalt-bench")
whatis("Version: " .. version)
whatis("Category: benchmark")
whatis("Description: HPC acceptance benchmarks (memory, GPU copy, Ethernet, interconnect)")

-- Only one cobalt-bench at a time (a checkout and an install tree, or two versions).
family("cobalt_bench")  -- Lmod family names become shell variables: no "-"

setenv("COBALT_BENCH_ROOT", root)
setenv("COBALT_BENCH_VERSION", version)
setenv("COBALT_BENCH_JOBS", pathJoin(data, "jobs"))
setenv("COBALT_BENCH_CHECKS", pathJoin(data, "reframe_checks"))
setenv("COBALT_BENCH_SITE_CONFIGS", pathJoin(data, "site-configs"))
prepend_path("PATH", pathJoin(root, "bin"))
-- The node's architecture picks the build: Lmod evaluates this file on the node that loads
-- it, and a build for another architecture is in bin/<arch> (a checkout's
-- `make CC=aarch64-linux-gnu-gcc`, an install's `make install` of that build), put ahead of
-- bin/ so that an aarch64 node runs aarch64 kernels. bin/ keeps the Python commands.
local arch = (subprocess("uname -m 2>/dev/null") or ""):gsub("%s+$", "")
if arch ~= "" and isDir(pathJoin(root, "bin", arch)) then
    prepend_path("PATH", pathJoin(root, "bin", arch))
end
setenv("COBALT_BENCH_ARCH", arch)
-- The site configurations and checks import cobalt_bench: any ReFrame (and python3 -m
-- cobalt_bench...) finds the package of this tree.
prepend_path("PYTHONPATH", pylib)
-- `reframe`: a checkout's bin/ links the .venv's (bootstrap.sh); an install loads the
-- ReFrame module its site named (`make install REFRAME_MODULE=reframe/4.7.3`), and a
-- Spack install has its own py-reframe dependency. docs/running-at-a-site.md.
local reframe_module = "@REFRAME_MODULE@"
if reframe_module ~= "" and reframe_module:sub(1, 1) ~= "@" then
    depends_on(reframe_module)
end
