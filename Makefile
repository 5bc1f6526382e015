# cobalt-bench: build the kernels whose dependencies are present, install,
# test, run. `make help` lists the targets.
PREFIX  ?= /usr/local
VERSION := $(shell cat VERSION)
CC      ?= cc
CFLAGS  ?= -O3 -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -pthread -DCB_VERSION='"$(VERSION)"'
LDLIBS  += -pthread -lm
PYTHON  ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)

BUILD := build
BIN   := bin

# ---- dependency detection: one line per kernel that is skipped ------------
HWLOC_OK     := $(shell pkg-config --exists hwloc 2>/dev/null && echo yes)
HWLOC_CFLAGS := $(shell pkg-config --cflags hwloc 2>/dev/null)
HWLOC_LIBS   := $(shell pkg-config --libs hwloc 2>/dev/null)

# Each kernel's src/<kernel>/kernel.mk adds itself to KERNELS (with its link
# rule) when its dependencies are present, or a "name: reason" to SKIPPED.
KERNELS :=
SKIPPED :=
CTESTS  :=

COMMON_SRC := $(wildcard src/common/*.c)
COMMON_OBJ := $(COMMON_SRC:src/%.c=$(BUILD)/%.o)
COMMON_LIB := $(BUILD)/libcbcommon.a

.DEFAULT_GOAL := all
include $(sort $(wildcard src/*/kernel.mk))

# ---- optional parts: packagers choose (Spack's +mpi +cuda +ibumad) ----------
# WITH_MPI, WITH_CUDA, WITH_IBUMAD: unset = build what the machine has; no = leave out
# every kernel that needs it; yes = its kernel must be built (stop if it cannot be).
# MPICC, NVCC and NVCC_ARCH (nvcc -gencode flags) name the tools the kernels use.
REQUIRES_MPI    := cb-linktest
REQUIRES_CUDA   := gpu-copy
REQUIRES_IBUMAD := smp-mad-stress
NEEDS_MPI       := cb-linktest cb-linktest-report smp-mad-stress-mpi
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

.PHONY: all kernels install test ctest run clean help
all: kernels
	@for s in $(SKIPPED); do echo "skipped $$s"; done

kernels: $(KERNELS:%=$(BIN)/%)

$(BUILD)/%.o: src/%.c $(wildcard src/common/*.h) VERSION
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(HWLOC_CFLAGS) -c -o $@ $<

$(COMMON_LIB): $(COMMON_OBJ)
	$(AR) rcs $@ $^

$(BUILD)/tests/test_common: tests/c/test_common.c tests/c/cb_test.h $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(HWLOC_CFLAGS) -Isrc -o $@ $< $(COMMON_LIB) $(HWLOC_LIBS) $(LDLIBS)
CTESTS += $(BUILD)/tests/test_common

ctest: $(CTESTS)
	@for t in $(CTESTS); do echo "== $$t"; $$t || exit 1; done

# ---- install: a tree that works without the checkout --------------------------
SHARE := $(PREFIX)/share/cobalt-bench
install: all
	install -d $(PREFIX)/bin $(PREFIX)/modulefiles/cobalt-bench $(SHARE)
	for k in $(KERNELS); do install -m 755 $(BIN)/$$k $(PREFIX)/bin/; done
	install -m 644 modulefiles/cobalt-bench/*.lua $(PREFIX)/modulefiles/cobalt-bench/
	cp -R jobs reframe_checks site-configs python $(SHARE)/
	find $(SHARE) -name __pycache__ -prune -exec rm -rf {} +
	install -m 644 VERSION README.md $(SHARE)/
	@echo "installed cobalt-bench $(VERSION) in $(PREFIX); use: module use $(PREFIX)/modulefiles && module load cobalt-bench"

# ---- tests and the local suite -----------------------------------------------
test: all ctest
	$(PYTHON) -m pytest tests

run: all
	scripts/run-suite $(or $(SITE),local)

clean:
	rm -rf $(BUILD) $(BIN)

help:
	@echo "make            build every kernel whose dependencies are present"
	@echo "make install PREFIX=DIR   install bin/, modulefile, jobs, checks, site configs"
	@echo "make test       C unit tests and pytest (starts the local Slurm cluster)"
	@echo "make run        run the suite with ReFrame on this machine (site 'local')"
	@echo "make clean      remove build outputs"
