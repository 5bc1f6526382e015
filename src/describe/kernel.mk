# The kernels described for the Python package: python/cobalt_bench/kernels/described.json
# (git ignores it; `make` writes it, `make install` installs it with the package), every
# kernel's --describe in one object. The Python descriptors take each metric's unit from
# it: a unit is written once, in its kernel's C table. describe-kernels links only the
# kernels' option and metrics tables and the plain-C files they call, so it is made where
# a kernel itself cannot be (no hwloc, MPI, CUDA or libibumad); a cross build makes none
# (the native build's description serves both).
DESCRIBED := python/cobalt_bench/kernels/described.json
# Each kernel's kernel.mk names what describes it: DESCRIBED_CMDS (its cb_cmd) and
# DESCRIBED_OBJ (the objects of its option table and what they call, as src/<dir>/<file>
# without .o). The kernel.mk files are read in name order, some after this one, so the
# lists are expanded at the rules' second expansion.
.SECONDEXPANSION:
DESCRIBE_OBJ = $(patsubst %,$(BUILD)/%.o,describe/describe-kernels $(DESCRIBED_OBJ))
$(BUILD)/describe/describe-kernels.o: CFLAGS += \
	-DCB_DESCRIBED_CMDS='$(foreach c,$(DESCRIBED_CMDS),X($(c)))'
$(BUILD)/describe/describe-kernels.o: $(wildcard src/*/kernel.mk)
$(BUILD)/describe/describe-kernels: $$(DESCRIBE_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(DESCRIBED): $(BUILD)/describe/describe-kernels
	$< > $@.tmp && mv $@.tmp $@
ifeq ($(CROSS),)
all: $(DESCRIBED)
endif
