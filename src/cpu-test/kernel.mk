# cpu-test: needs only pthreads and libm (threads bound with sched_setaffinity, no
# hwloc), so it is built everywhere, cross builds included. Its unit test
# (tests/c/test_cputest.c) covers the FMA streams and their verification, the ISA
# table, the cores per core list, the spread and the drop, and the option table.
# Its description (src/describe/): its command line, and the objects it needs.
DESCRIBED_CMDS += ct_cmd
DESCRIBED_OBJ += cpu-test/options
KERNELS += cpu-test
CPUTEST_OBJ := $(patsubst %,$(BUILD)/cpu-test/%.o,options isa fma cpus clock stats run report)
$(BUILD)/cpu-test/%.o: src/cpu-test/options.h src/cpu-test/isa.h src/cpu-test/cpus.h \
	src/cpu-test/stats.h src/cpu-test/run.h src/cpu-test/report.h
$(BIN)/cpu-test: $(BUILD)/cpu-test/cpu-test.o $(CPUTEST_OBJ) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/test_cputest: tests/c/test_cputest.c tests/c/cb_test.h $(CPUTEST_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -o $@ $< $(CPUTEST_OBJ) $(COMMON_LIB) $(LDLIBS)
CTESTS += $(BUILD)/tests/test_cputest
