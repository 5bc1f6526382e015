-- -*- lua -*-
-- cobalt-bench: HPC acceptance benchmarks (mem-test, gpu-copy, eth-test, OSU wrappers).
--
-- One file serves a source checkout (ROOT/modulefiles/cobalt-bench/0.1.0.lua, kernels in
-- ROOT/bin, jobs/checks/site configs in ROOT) and a `make install PREFIX=ROOT` tree
-- (ROOT/modulefiles/cobalt-bench/0.1.0.lua, ROOT/bin, ROOT/share/cobalt-bench/...):
-- the root is computed from this file's own (real) path, three directory levels up.
--
--   module use /path/to/cobalt-bench/modulefiles
--   module load cobalt-bench

local version = myModuleVersion()

-- This file's real path: a site may link it (or its directory) into a central
-- MODULEPATH, and the root is where the file really lives.
local file = myFileName()
local real = subprocess("readlink -f '" .. file:gsub("'", "'\\''") .. "' 2>/dev/null")
real = (real or ""):gsub("%s+$", "")
if real ~= "" then file = real end

local root = file:gsub("/[^/]*$", ""):gsub("/[^/]*$", ""):gsub("/[^/]*$", "")
if root == "" then root = "/" end

-- Data files (Slurm jobs, ReFrame checks, site configs): an install tree keeps them in
-- ROOT/share/cobalt-bench, a checkout at ROOT itself.
local data = pathJoin(root, "share", "cobalt-bench")
if not isDir(pathJoin(data, "reframe_checks")) then
    data = root
end

help(string.format([[
cobalt-bench %s: HPC acceptance benchmarks.

Kernels (mem-test, ...) are in %s.
Slurm batch scripts:  $COBALT_BENCH_JOBS      (sbatch $COBALT_BENCH_JOBS/mem-test.slurm)
ReFrame checks:       $COBALT_BENCH_CHECKS
Site configurations:  $COBALT_BENCH_SITE_CONFIGS
  reframe -C $COBALT_BENCH_SITE_CONFIGS/local/config.py -c $COBALT_BENCH_CHECKS -r
]], version, pathJoin(root, "bin")))

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
