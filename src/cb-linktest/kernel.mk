# cb-linktest: needs MPI (mpicc). Its schedule (schedule.c) and results-file
# writer (npz.c) are plain C without MPI: the unit tests build them with $(CC).
# cb-linktest-report (Python: numpy, matplotlib) is installed beside it.
MPICC ?= $(shell command -v mpicc 2>/dev/null)
LINKTEST_OBJ := $(BUILD)/cb-linktest/schedule.o $(BUILD)/cb-linktest/npz.o
$(LINKTEST_OBJ): src/cb-linktest/schedule.h src/cb-linktest/npz.h

$(BIN)/cb-linktest-report: src/cb-linktest/cb-linktest-report VERSION
	@mkdir -p $(BIN)
	sed 's/@VERSION@/$(VERSION)/' $< > $@.tmp && chmod 755 $@.tmp && mv $@.tmp $@
KERNELS += cb-linktest-report

$(BUILD)/tests/test_linktest: tests/c/test_linktest.c tests/c/cb_test.h $(LINKTEST_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -o $@ $< $(LINKTEST_OBJ) $(COMMON_LIB) $(LDLIBS)
CTESTS += $(BUILD)/tests/test_linktest

ifneq ($(MPICC),)
KERNELS += cb-linktest
$(BUILD)/cb-linktest/cb-linktest.o: src/cb-linktest/cb-linktest.c src/cb-linktest/schedule.h \
		src/cb-linktest/npz.h $(wildcard src/common/*.h) VERSION
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -c -o $@ $<
$(BIN)/cb-linktest: $(BUILD)/cb-linktest/cb-linktest.o $(LINKTEST_OBJ) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(MPICC) $(CFLAGS) -o $@ $^ $(LDLIBS)
else
SKIPPED += "cb-linktest: mpicc not found (Debian: libopenmpi-dev)"
endif
