# cb-linktest: needs MPI (mpicc). Its schedule (schedule.c) and results-file
# writer (npz.c) are plain C without MPI: the unit tests build them with $(CC).
# The MPI program is split by stage, a header per layer (run.h lists the files).
# Its report, `cobalt-bench linktest-report` (also `cb-linktest-report`), is in the Python
# package: python/cobalt_bench/linktest_report.py.
# Its description (src/describe/): its command line, and the objects it needs.
DESCRIBED_CMDS += lt_cmd
DESCRIBED_OBJ += cb-linktest/options
MPICC ?= $(shell command -v mpicc 2>/dev/null)
LINKTEST_OBJ := $(BUILD)/cb-linktest/schedule.o $(BUILD)/cb-linktest/npz.o
$(LINKTEST_OBJ): src/cb-linktest/schedule.h src/cb-linktest/npz.h

# The unit tests link npz.c built with its ZIP64 test switch (-DLT_NPZ_TEST_ZIP64,
# set by tests/c/test_linktest.c); the product's npz.o has none.
$(BUILD)/tests/linktest_npz.o: src/cb-linktest/npz.c src/cb-linktest/npz.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DLT_NPZ_TEST_ZIP64 -c -o $@ $<
$(BUILD)/tests/test_linktest: tests/c/test_linktest.c tests/c/cb_test.h $(BUILD)/cb-linktest/schedule.o \
		$(BUILD)/tests/linktest_npz.o $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -o $@ $< $(BUILD)/cb-linktest/schedule.o $(BUILD)/tests/linktest_npz.o \
		$(COMMON_LIB) $(LDLIBS)
CTESTS += $(BUILD)/tests/test_linktest

# --use-gpu-memory: gpu.c calls the CUDA runtime where nvcc (the CUDA toolkit) is found, as
# gpu-copy does (NVCC=, or PATH, or /usr/local/cuda), linking it statically (the binary then
# needs only the NVIDIA driver where it runs); elsewhere, or with WITH_CUDA=no, gpu.c's
# stubs make --use-gpu-memory exit 3 saying this build has no CUDA.
# (a cross build uses only an NVCC= it is given: the one on PATH builds for this machine)
LT_NVCC := $(if $(CROSS),$(NVCC),$(or $(NVCC),$(shell command -v nvcc 2>/dev/null),/usr/local/cuda/bin/nvcc))
LT_CUDA_HOME := $(abspath $(dir $(LT_NVCC))..)
LT_CUDA_OK := $(if $(filter no,$(WITH_CUDA)),,$(shell test -x '$(LT_NVCC)' && \
	test -f '$(LT_CUDA_HOME)/include/cuda_runtime_api.h' && echo yes))
ifeq ($(LT_CUDA_OK),yes)
LT_CUDA_LIBDIR := $(firstword $(wildcard $(LT_CUDA_HOME)/lib64 $(LT_CUDA_HOME)/lib $(LT_CUDA_HOME)/targets/*/lib))
LT_GPU_CFLAGS := -DLT_CUDA -I$(LT_CUDA_HOME)/include
LT_GPU_LIBS := -L$(LT_CUDA_LIBDIR) -lcudart_static -ldl -lrt -lpthread -lstdc++
endif

ifneq ($(MPICC),)
KERNELS += cb-linktest
LINKTEST_MPI_OBJ := $(patsubst %,$(BUILD)/cb-linktest/%.o,cb-linktest options plan mpi setup buffers exchange \
	monitor retest results report)
$(LINKTEST_MPI_OBJ): $(BUILD)/cb-linktest/%.o: src/cb-linktest/%.c $(wildcard src/cb-linktest/*.h) \
		$(wildcard src/common/*.h) VERSION
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -c -o $@ $<
$(BUILD)/cb-linktest/gpu.o: src/cb-linktest/gpu.c src/cb-linktest/gpu.h $(wildcard src/common/*.h) VERSION
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LT_GPU_CFLAGS) -c -o $@ $<
$(BIN)/cb-linktest: $(LINKTEST_MPI_OBJ) $(BUILD)/cb-linktest/gpu.o $(LINKTEST_OBJ) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(MPICC) $(CFLAGS) -o $@ $^ $(LT_GPU_LIBS) $(LDLIBS)
else
SKIPPED += "cb-linktest: mpicc not found (Debian: libopenmpi-dev)"
endif
