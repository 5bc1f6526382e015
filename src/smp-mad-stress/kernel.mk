# smp-mad-stress: needs libibumad (Debian: libibumad-dev); pthreads.
# smp-mad-stress-mpi (its MPI mode) also needs mpicc.
# The window logic and the simulation transport (--simulate) need neither, so
# their unit tests are built everywhere. Test-only helpers live in tests/c/.
# Its description (src/describe/): its command line, and the objects it needs.
DESCRIBED_CMDS += smt_cmd
DESCRIBED_OBJ += smp-mad-stress/options
SMT_SRC_DIR := src/smp-mad-stress
SMT_CORE    := $(BUILD)/smp-mad-stress/smp_mad.o $(BUILD)/smp-mad-stress/window.o \
               $(BUILD)/smp-mad-stress/sim_transport.o
SMT_HEADERS := $(wildcard $(SMT_SRC_DIR)/*.h)
# rdma-core installs a pkg-config file (a Spack or /opt prefix then works too)
UMAD_CFLAGS := $(shell pkg-config --cflags libibumad 2>/dev/null)
UMAD_LIBS   := $(or $(shell pkg-config --libs libibumad 2>/dev/null),-libumad)
UMAD_OK     := $(shell echo 'int main(void){return umad_init();}' | \
                 $(CC) $(UMAD_CFLAGS) -x c -include infiniband/umad.h -o /dev/null - $(UMAD_LIBS) \
                 >/dev/null 2>&1 && echo yes)
MPICC       ?= mpicc
SMT_MPI_OK  := $(shell command -v $(MPICC) >/dev/null 2>&1 && echo yes)

$(BUILD)/smp-mad-stress/%.o: $(SMT_HEADERS)

ifeq ($(UMAD_OK),yes)
KERNELS += smp-mad-stress
$(BUILD)/smp-mad-stress/umad_transport.o: CFLAGS += $(UMAD_CFLAGS)
$(BIN)/smp-mad-stress: $(BUILD)/smp-mad-stress/smp-mad-stress.o $(BUILD)/smp-mad-stress/options.o \
                       $(BUILD)/smp-mad-stress/umad_transport.o $(SMT_CORE) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) -o $@ $^ $(UMAD_LIBS) $(LDLIBS)

ifeq ($(SMT_MPI_OK),yes)
KERNELS += smp-mad-stress-mpi
# compiled apart with mpicc: the MPI build of the main program only; its option table
# (its name and help differ) with SMT_WITH_MPI too, needing no MPI
$(BUILD)/smp-mad-stress-mpi/smp-mad-stress.o: $(SMT_SRC_DIR)/smp-mad-stress.c $(SMT_HEADERS) \
                                              $(wildcard src/common/*.h) VERSION
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -DSMT_WITH_MPI -c -o $@ $<
$(BUILD)/smp-mad-stress-mpi/options.o: $(SMT_SRC_DIR)/options.c $(SMT_HEADERS) $(wildcard src/common/*.h) VERSION
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DSMT_WITH_MPI -c -o $@ $<
$(BIN)/smp-mad-stress-mpi: $(BUILD)/smp-mad-stress-mpi/smp-mad-stress.o $(BUILD)/smp-mad-stress-mpi/options.o \
                           $(BUILD)/smp-mad-stress/umad_transport.o $(SMT_CORE) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(MPICC) $(CFLAGS) -o $@ $^ $(UMAD_LIBS) $(LDLIBS)
else
SKIPPED += "smp-mad-stress-mpi: mpicc not found (Debian: libopenmpi-dev)"
endif
else
SKIPPED += "smp-mad-stress: libibumad development files not found (Debian: libibumad-dev)"
endif

$(BUILD)/tests/test_smp_mad: tests/c/test_smp_mad.c tests/c/cb_test.h $(SMT_CORE) $(SMT_HEADERS) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -o $@ $< $(SMT_CORE) $(COMMON_LIB) $(LDLIBS)
$(BUILD)/tests/test_smp_mad_window: tests/c/test_smp_mad_window.c tests/c/cb_test.h tests/c/smp_sim_counts.h $(SMT_CORE) $(SMT_HEADERS) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -o $@ $< $(SMT_CORE) $(COMMON_LIB) $(LDLIBS)
CTESTS += $(BUILD)/tests/test_smp_mad $(BUILD)/tests/test_smp_mad_window
