# cobalt-bench: build the kernels whose dependencies are present, install,
# test, run. `make help` lists the targets.
PREFIX  ?= /usr/local
VERSION := $(shell cat VERSION)
CC      ?= cc
CFLAGS  ?= -O3 -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -pthread -DCB_VERSION='"$(VERSION)"'
LDLIBS  += -pthread -lm
# The Python with the package's dependencies (requirements.txt): the checkout's .venv
# (bootstrap.sh), else python3. `make install` installs the cobalt_bench package with it,
# and the installed console scripts run with it.
PYTHON  ?= $(if $(wildcard .venv/bin/python),$(abspath .venv/bin/python),python3)
# `make install REFRAME_MODULE=reframe/4.7.3`: the site's ReFrame module, which the
# installed cobalt-bench module loads (docs/running-at-a-site.md); empty: none.
REFRAME_MODULE ?=

# ---- the target architecture: native, or a cross build (make CC=aarch64-linux-gnu-gcc) --
# ARCH is the compiler's target (x86_64, aarch64). A cross build gets its own build and bin
# directories, build/ARCH and bin/ARCH, so that both coexist in one checkout (the
# modulefile puts bin/`uname -m` first on PATH); `make install PREFIX=` of a cross build
# puts its kernels in PREFIX/bin/ARCH.
CC_TRIPLET := $(shell $(CC) -dumpmachine 2>/dev/null)
ARCH       := $(firstword $(subst -, ,$(CC_TRIPLET)))
CROSS      := $(if $(filter-out $(shell uname -m),$(ARCH)),yes)
ifeq ($(CROSS),yes)
# The target's libraries, not this machine's: pkg-config searches PKG_CONFIG_LIBDIR (the
# target's multiarch directory, or scripts/arm64-root's root: eval "$$(scripts/arm64-root
# env)"), else the target's pkg-config wrapper; nothing found means the kernels that need
# the library are skipped. The MPI and CUDA compilers on PATH build for this machine:
# name the target's with MPICC=, NVCC=.
PKG_CONFIG ?= $(or $(if $(PKG_CONFIG_LIBDIR),pkg-config),$(shell command -v $(CC_TRIPLET)-pkg-config 2>/dev/null),false)
MPICC      ?=
NVCC       ?=
BUILD := build/$(ARCH)
BIN   := bin/$(ARCH)
ifeq ($(origin CXX),default)
CXX := $(CC_TRIPLET)-g++
endif
# SYSROOT: a root file system of the target (scripts/arm64-root's) whose libc and libraries
# the compiler and linker use.
ifneq ($(SYSROOT),)
CFLAGS += --sysroot=$(SYSROOT)
endif
else
BUILD := build
BIN   := bin
endif
PKG_CONFIG ?= pkg-config

# ---- dependency detection: one line per kernel that is skipped ------------
HWLOC_OK     := $(shell $(PKG_CONFIG) --exists hwloc 2>/dev/null && echo yes)
HWLOC_CFLAGS := $(shell $(PKG_CONFIG) --cflags hwloc 2>/dev/null)
HWLOC_LIBS   := $(shell $(PKG_CONFIG) --libs hwloc 2>/dev/null)

# Each kernel's src/<kernel>/kernel.mk adds itself to KERNELS (with its link
# rule) when its dependencies are present, or a "name: reason" to SKIPPED.
KERNELS :=
SKIPPED :=
CTESTS  :=

# src/common: libcbcommon.a needs only libc; the hwloc wrapper (cb_topo.c) is its own
# object, TOPO_OBJ, linked by the kernels that place threads and memory (HWLOC_OK=yes).
COMMON_SRC := $(filter-out src/common/cb_topo.c,$(wildcard src/common/*.c))
COMMON_OBJ := $(COMMON_SRC:src/%.c=$(BUILD)/%.o)
COMMON_LIB := $(BUILD)/libcbcommon.a
TOPO_OBJ   := $(BUILD)/common/cb_topo.o

.DEFAULT_GOAL := all
include $(sort $(wildcard src/*/kernel.mk))

# ---- optional parts: packagers choose (Spack's +mpi +cuda +ibumad) ----------
# WITH_MPI, WITH_CUDA, WITH_IBUMAD: unset = build what the machine has; no = leave out
# every kernel that needs it; yes = its kernel must be built (stop if it cannot be).
# MPICC, NVCC and NVCC_ARCH (nvcc -gencode flags) name the tools the kernels use.
REQUIRES_MPI    := cb-linktest
REQUIRES_CUDA   := gpu-copy
REQUIRES_IBUMAD := smp-mad-stress
NEEDS_MPI       := cb-linktest smp-mad-stress-mpi
NEEDS_CUDA      := gpu-copy
NEEDS_IBUMAD    := smp-mad-stress smp-mad-stress-mpi
define optional_part
ifeq ($$(WITH_$1),no)
SKIPPED += $$(foreach k,$$(filter $$(NEEDS_$1),$$(KERNELS)),"$$k: left out (WITH_$1=no)")
KERNELS := $$(filter-out $$(NEEDS_$1),$$(KERNELS))
else ifeq ($$(WITH_$1),yes)
ifneq ($$(filter-out $$(KERNELS),$$(REQUIRES_$1)),)
$$(error WITH_$1=yes but $$(REQUIRES_$1) cannot be built here: run make without WITH_$1 to see why)
endif
endif
endef
$(foreach p,MPI CUDA IBUMAD,$(eval $(call optional_part,$p)))
ifeq ($(CROSS)-$(HWLOC_OK),yes-)
SKIPPED += "(cross build for $(ARCH): hwloc for $(ARCH) not found; eval \"\$$(scripts/arm64-root env)\" or install libhwloc-dev:arm64)"
endif
ifeq ($(CROSS)-$(MPICC),yes-)
SKIPPED += "(cross build for $(ARCH): the mpicc on PATH builds for this machine; MPICC= names $(ARCH)'s)"
endif

.PHONY: all kernels install test ctest run clean help dist
all: kernels
	@for s in $(SKIPPED); do echo "skipped $$s"; done

kernels: $(KERNELS:%=$(BIN)/%)

$(BUILD)/%.o: src/%.c $(wildcard src/common/*.h) VERSION
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<
$(TOPO_OBJ): CFLAGS += $(HWLOC_CFLAGS)

# Made afresh, and again when src/common's list of files changes (the directory's time):
# `ar r` into the old archive would keep the object of a file since renamed or removed,
# a second definition of its functions.
$(COMMON_LIB): $(COMMON_OBJ) src/common
	rm -f $@
	$(AR) rcs $@ $(COMMON_OBJ)

$(BUILD)/tests/test_common: tests/c/test_common.c tests/c/cb_test.h $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -o $@ $< $(COMMON_LIB) $(LDLIBS)
CTESTS += $(BUILD)/tests/test_common
ifeq ($(HWLOC_OK),yes)
$(BUILD)/tests/test_topo: tests/c/test_topo.c tests/c/cb_test.h $(TOPO_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(HWLOC_CFLAGS) -Isrc -DCB_TEST_DATA='"$(CURDIR)/tests/data"' -o $@ $< $(TOPO_OBJ) $(COMMON_LIB) $(HWLOC_LIBS) $(LDLIBS)
CTESTS += $(BUILD)/tests/test_topo
endif

ctest: $(CTESTS)
	@for t in $(CTESTS); do echo "== $$t"; $$t || exit 1; done

# ---- the Python package (pyproject.toml, python/cobalt_bench) ----------------------
# In a checkout bootstrap.sh installs it editable into .venv; bin/ links to its console
# scripts, so that bin/ holds every command (the tests, the module's PATH).
# The venv's `reframe` too: `module load cobalt-bench` then gives a ReFrame that imports
# this checkout's package (docs/running-at-a-site.md).
PY_COMMANDS := cobalt-bench cb-linktest-report
.PHONY: python-commands
ifneq ($(wildcard .venv/bin/cobalt-bench),)
all: python-commands
python-commands:
	@mkdir -p $(BIN)
	@for c in $(PY_COMMANDS) reframe; do ln -sfn $(abspath .venv/bin)/$$c $(BIN)/$$c; done
	@# The package's bytecode, as pip writes it for an installed package: an editable one
	@# has none, and under PYTHONDONTWRITEBYTECODE (CI's, some sites') every command would
	@# compile each module it imports again, half of a node's `cobalt-bench judge`.
	@$(PYTHON) -m compileall -q python/cobalt_bench
else
SKIPPED += "cobalt-bench, cb-linktest-report: the package is not installed in .venv (./bootstrap.sh --no-run)"
endif

# ---- install: a tree that works without the checkout --------------------------
# The package goes to PREFIX/lib/cobalt-bench/python (pip --target: one path whatever the
# Python version; the modulefile puts it on PYTHONPATH), installed with $(PYTHON) (it needs
# pip and setuptools; Spack's python, py-pip and py-setuptools there). pip writes the
# console scripts, which start $(PYTHON), beside the package, and PREFIX/bin links to them:
# Python puts a script's real directory first on sys.path, so PREFIX/bin/cobalt-bench
# imports the installed package, with the module loaded or not. The modulefile gets the
# prefix written into it (@PREFIX@); the checkout's copy finds its root from its own path.
# setuptools builds in ./build/lib whatever BUILD is, and would install a module since
# removed from python/ from there: it starts afresh.
# A cross build's kernels go to PREFIX/bin/ARCH, beside the native ones: one prefix for
# both architectures, the modulefile choosing by `uname -m`.
PREFIX_ARCH := $(if $(CROSS),/$(ARCH))
SHARE := $(PREFIX)/share/cobalt-bench
PYLIB := $(PREFIX)/lib/cobalt-bench/python
install: all
	install -d $(PREFIX)/bin$(PREFIX_ARCH) $(PREFIX)/modulefiles/cobalt-bench $(SHARE)
	for k in $(KERNELS); do install -m 755 $(BIN)/$$k $(PREFIX)/bin$(PREFIX_ARCH)/; done
	rm -rf $(PYLIB) build/lib build/bdist.*
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --no-deps \
		--no-build-isolation --target $(PYLIB) .
	for c in $(PY_COMMANDS); do mv $(PYLIB)/bin/$$c $(PYLIB)/$$c && \
		ln -sfn ../lib/cobalt-bench/python/$$c $(PREFIX)/bin/$$c; done
	rmdir $(PYLIB)/bin
	for f in modulefiles/cobalt-bench/*.lua; do \
		sed -e 's|@PREFIX@|$(abspath $(PREFIX))|' -e 's|@REFRAME_MODULE@|$(REFRAME_MODULE)|' \
			$$f > $(PREFIX)/$$f.tmp && \
		chmod 644 $(PREFIX)/$$f.tmp && mv $(PREFIX)/$$f.tmp $(PREFIX)/$$f; done
	# -L: jobs/lib/osu-search-dirs is a link to the package's one list; the copy is a file.
	cp -RL jobs reframe_checks site-configs $(SHARE)/
	find $(SHARE) -name __pycache__ -prune -exec rm -rf {} +
	install -m 644 VERSION README.md $(SHARE)/
	@echo "installed cobalt-bench $(VERSION) in $(PREFIX); use: module use $(PREFIX)/modulefiles && module load cobalt-bench"

# ---- dist: the release tarball a Spack mirror holds -----------------------------
# cobalt-bench-<version>.tar.gz of one commit (DIST_REF, default HEAD; <version> is that
# commit's VERSION), unpacking to cobalt-bench-<version>/: the file `spack install
# cobalt-bench@<version>` fetches, from a site's mirror at <mirror>/cobalt-bench/ (README,
# Spack). `git archive` (the commit's time on every file) and `gzip -n` make the same bytes
# for the same commit, so the recipe can hold its sha256; a release is therefore a commit
# made before the recipe line that names it (the recipe's RELEASES: version -> commit,
# sha256), e.g. `make dist DIST_REF=v0.1.0` or the commit's hash where tags were not cloned.
DIST ?= dist
DIST_REF ?= HEAD
dist:
	@mkdir -p $(DIST)
	@v=$$(git show $(DIST_REF):VERSION) || { echo "make dist: no VERSION in $(DIST_REF)" >&2; exit 2; }; \
	out=$(DIST)/cobalt-bench-$$v.tar.gz; \
	git archive --format=tar --prefix=cobalt-bench-$$v/ -o $$out.tar $(DIST_REF) && \
	gzip -n -9 < $$out.tar > $$out.tmp && rm $$out.tar && mv $$out.tmp $$out && \
	echo "$$out sha256 $$(sha256sum < $$out | cut -d' ' -f1) commit $$(git rev-parse $(DIST_REF)^{commit})"

# ---- tests and the local suite -----------------------------------------------
# The 30 slowest tests are listed at the end (CI keeps under its hour by them).
# Where the arm64 root is built (make arm), the local cluster's arm partition is its
# aarch64 node: the tests then need the aarch64 kernels too, built against it.
test: all ctest
	@if scripts/arm64-root check >/dev/null 2>&1; then $(MAKE) --no-print-directory arm-kernels; fi
	$(PYTHON) -m pytest -n 5 --dist loadgroup -rs --durations=30 tests

run: all
	scripts/run-suite $(or $(SITE),local)

# ---- the local cluster's arm partition (docs/arm.md) ----------------------------
# The arm64 root (built once, cached outside the checkout; needs root, qemu-user-static and
# mmdebstrap), and the aarch64 kernels and C unit tests (common, mem-test) built against it
# (bin/aarch64; tests/integration/arm/test_arm.py runs them there); OSU for aarch64 into the root, for the
# ARM OSU jobs (from the offline third-party sources, where they are).
.PHONY: arm arm-kernels
arm:
	scripts/arm64-root build
	$(MAKE) --no-print-directory arm-kernels
	scripts/arm64-root osu || [ $$? -eq 3 ]   # 3: no OSU source (../shared/third-party)
arm-kernels:
	eval "$$(scripts/arm64-root env)" && $(MAKE) CC=aarch64-linux-gnu-gcc kernels \
		build/aarch64/tests/test_common build/aarch64/tests/test_memtest

clean:
	rm -rf $(BUILD) $(BIN)

help:
	@echo "make            build every kernel whose dependencies are present"
	@echo "make install PREFIX=DIR   install bin/, the Python package, modulefile, jobs, checks, site configs"
	@echo "make test       C unit tests and pytest (starts the local Slurm cluster)"
	@echo "make run        run the suite with ReFrame on this machine (site 'local')"
	@echo "make dist       the release tarball (DIST=dir, default dist/) for a Spack mirror"
	@echo "make arm        the arm64 root (scripts/arm64-root) and the aarch64 build (bin/aarch64)"
	@echo "make clean      remove build outputs"
