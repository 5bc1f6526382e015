# mem-test: needs hwloc (and pthreads, libm). Its unit test (tests/c/test_memtest.c)
# covers the workload model, the memory operations, their verification and the option
# table; it does not place threads or memory, so it links neither cb_topo.o nor hwloc.
# Its description (src/describe/): its command line, and the objects it needs.
DESCRIBED_CMDS += mt_cmd
DESCRIBED_OBJ += mem-test/options mem-test/workload
$(BUILD)/mem-test/mem-test.o: CFLAGS += $(HWLOC_CFLAGS)
ifeq ($(HWLOC_OK),yes)
KERNELS += mem-test
MEMTEST_OBJ := $(BUILD)/mem-test/memops.o $(BUILD)/mem-test/workload.o $(BUILD)/mem-test/options.o
$(BUILD)/mem-test/%.o: src/mem-test/memops.h src/mem-test/workload.h src/mem-test/options.h
$(BIN)/mem-test: $(BUILD)/mem-test/mem-test.o $(MEMTEST_OBJ) $(TOPO_OBJ) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) -o $@ $^ $(HWLOC_LIBS) $(LDLIBS)

$(BUILD)/tests/test_memtest: tests/c/test_memtest.c tests/c/cb_test.h $(MEMTEST_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -o $@ $< $(MEMTEST_OBJ) $(COMMON_LIB) $(LDLIBS)
CTESTS += $(BUILD)/tests/test_memtest
else
SKIPPED += "mem-test: hwloc development files not found (Debian: libhwloc-dev)"
endif
