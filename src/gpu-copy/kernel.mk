# gpu-copy: needs hwloc and nvcc (the CUDA toolkit; the binary links the CUDA runtime
# statically and needs only the NVIDIA driver where it runs). Its link arithmetic,
# sysfs reader, plan and their unit tests are plain C and need neither; the program
# places its threads and buffers with hwloc (src/common/cb_topo.c, $(TOPO_OBJ)).
# cb-pcie-links (pcie-links.c + pcie.c, the one PCIe link rule that gpu-copy and
# `cobalt-bench preflight` use) needs neither: it is built everywhere.
#   make NVCC=/opt/cuda/bin/nvcc NVCC_ARCH=-arch=sm_90   (defaults: PATH, /usr/local/cuda;
#                                                        every major architecture)
# Its description (src/describe/): its command line, and the objects it needs.
DESCRIBED_CMDS += gc_cmd
DESCRIBED_OBJ += gpu-copy/options gpu-copy/plan
ifeq ($(origin NVCC),undefined)
NVCC := $(or $(shell command -v nvcc 2>/dev/null),/usr/local/cuda/bin/nvcc)
endif
NVCC_OK := $(shell command -v '$(NVCC)' >/dev/null 2>&1 && echo yes)
NVCC_ARCH  ?= -arch=all-major
NVCCFLAGS  ?= -O3
NVCCFLAGS  += -std=c++17 $(NVCC_ARCH) -Xcompiler -Wall,-Wextra,-Wno-unused-parameter \
              -DCB_VERSION='"$(VERSION)"'

GPUCOPY_HDR := $(wildcard src/gpu-copy/*.h)
GPUCOPY_LIB := $(BUILD)/gpu-copy/pcie.o $(BUILD)/gpu-copy/plan.o

KERNELS += cb-pcie-links
$(BUILD)/gpu-copy/pcie.o $(BUILD)/gpu-copy/pcie-links.o: src/gpu-copy/pcie.h
$(BIN)/cb-pcie-links: $(BUILD)/gpu-copy/pcie-links.o $(BUILD)/gpu-copy/pcie.o $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The program's host side: the stages over the run state (run.h), the options, the links,
# the phases' results.
GPUCOPY_PROG := $(patsubst %,$(BUILD)/gpu-copy/%.o,gpu-copy options links explain report results)
$(GPUCOPY_LIB) $(GPUCOPY_PROG): $(GPUCOPY_HDR)

# The plain-C parts' unit tests (links, sysfs, the one link rule, the plan): no hwloc.
$(BUILD)/tests/test_gpu_copy: tests/c/test_gpu_copy.c tests/c/cb_test.h $(GPUCOPY_LIB) $(GPUCOPY_HDR) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -DGC_TEST_DATA='"$(CURDIR)/tests/data/gpu-copy"' \
	    -o $@ $< $(GPUCOPY_LIB) $(COMMON_LIB) $(LDLIBS)
CTESTS += $(BUILD)/tests/test_gpu_copy

ifeq ($(HWLOC_OK),yes)
# gpu-copy with a host-memory stand-in for CUDA (tests/c/test_gpu_copy_fake_cuda.h): the
# real program end to end without a GPU, for tests/kernels/gpu_copy/. Built with ctest.
$(BUILD)/tests/gpu-copy-sim: src/gpu-copy/engine.cu tests/c/test_gpu_copy_fake_cuda.h $(GPUCOPY_PROG) $(GPUCOPY_LIB) $(TOPO_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CXX) -O2 -g -std=c++17 -Wall -Wextra -Wno-unused-parameter -pthread -DGC_FAKE_CUDA \
	    -include tests/c/test_gpu_copy_fake_cuda.h -x c++ -c -o $@-engine.o $<
	$(CXX) -pthread -o $@ $(GPUCOPY_PROG) $@-engine.o $(GPUCOPY_LIB) $(TOPO_OBJ) $(COMMON_LIB) $(HWLOC_LIBS) -lm
$(BUILD)/tests/test_gpu_copy: $(BUILD)/tests/gpu-copy-sim

ifeq ($(NVCC_OK),yes)
KERNELS += gpu-copy
$(BUILD)/gpu-copy/engine.o: src/gpu-copy/engine.cu $(GPUCOPY_HDR) $(wildcard src/common/*.h) VERSION
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c -o $@ $<

$(BIN)/gpu-copy: $(GPUCOPY_PROG) $(BUILD)/gpu-copy/engine.o $(GPUCOPY_LIB) $(TOPO_OBJ) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(NVCC) $(NVCC_ARCH) -o $@ $^ $(HWLOC_LIBS) -lpthread -lm
else
SKIPPED += "gpu-copy: nvcc (CUDA toolkit) not found on PATH or in /usr/local/cuda/bin (make NVCC=/path/to/nvcc)"
endif
else
SKIPPED += "gpu-copy: hwloc development files not found (Debian: libhwloc-dev)"
endif
