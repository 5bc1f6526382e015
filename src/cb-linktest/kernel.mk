# cb-linktest: needs MPI (mpicc). Its schedule (schedule.c) and results-file
# writer (npz.c) are plain C without MPI: the unit tests build them with $(CC).
# The MPI program is split by stage (linktest.h lists the files).
# Its report, `cobalt-bench linktest-report` (also `cb-linktest-report`), is in the Python
# package: python/cobalt_bench/linktest_report.py.
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

ifneq ($(MPICC),)
KERNELS += cb-linktest
LINKTEST_MPI_OBJ := $(patsubst %,$(BUILD)/cb-linktest/%.o,cb-linktest options plan setup exchange \
	retest results report)
$(LINKTEST_MPI_OBJ): $(BUILD)/cb-linktest/%.o: src/cb-linktest/%.c src/cb-linktest/linktest.h \
		src/cb-linktest/schedule.h src/cb-linktest/npz.h $(wildcard src/common/*.h) VERSION
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -c -o $@ $<
$(BIN)/cb-linktest: $(LINKTEST_MPI_OBJ) $(LINKTEST_OBJ) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(MPICC) $(CFLAGS) -o $@ $^ $(LDLIBS)
else
SKIPPED += "cb-linktest: mpicc not found (Debian: libopenmpi-dev)"
endif
