# The kernels described for the Python package: python/cobalt_bench/kernels/described.json
# (git ignores it; `make` writes it, `make install` installs it with the package), every
# kernel's --describe in one object. The Python descriptors take each metric's unit from
# it: a unit is written once, in its kernel's C table. describe-kernels links only the
# kernels' option and metrics tables and the plain-C files they call, so it is made where
# a kernel itself cannot be (no hwloc, MPI, CUDA or libibumad); a cross build makes none
# (the native build's description serves both).
DESCRIBED := python/cobalt_bench/kernels/described.json
DESCRIBE_OBJ := $(patsubst %,$(BUILD)/%.o,describe/describe-kernels mem-test/options \
	mem-test/workload cb-linktest/options eth-test/send_options eth-test/receive_options \
	eth-test/eth_net gpu-copy/options gpu-copy/plan smp-mad-stress/options cpu-test/options)
$(BUILD)/describe/describe-kernels: $(DESCRIBE_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(DESCRIBED): $(BUILD)/describe/describe-kernels
	$< > $@.tmp && mv $@.tmp $@
ifeq ($(CROSS),)
all: $(DESCRIBED)
endif
