# eth-test-send / eth-test-receive: Linux sockets only (sendmmsg/recvmmsg), no other
# dependency (no hwloc: they link libcbcommon.a only, never $(TOPO_OBJ)); always built.
# Its description (src/describe/): its command line, and the objects it needs.
DESCRIBED_CMDS += send_cmd recv_cmd
DESCRIBED_OBJ += eth-test/send_options eth-test/receive_options eth-test/eth_net
KERNELS += eth-test-send eth-test-receive
ETH_OBJ := $(BUILD)/eth-test/eth_proto.o $(BUILD)/eth-test/eth_net.o
# Each program: its main file with its stages, and its option table.
ETH_SEND_OBJ := $(patsubst %,$(BUILD)/eth-test/%.o,eth-test-send send_options)
ETH_RECEIVE_OBJ := $(patsubst %,$(BUILD)/eth-test/%.o,eth-test-receive receive_options receive_plan \
	receive_thread receive_report)
$(BUILD)/eth-test/%.o: src/eth-test/eth_proto.h src/eth-test/eth_net.h src/eth-test/send_options.h \
	src/eth-test/receive_options.h src/eth-test/receive.h

# The preflight's sysctl tips have one list, read by `cobalt-bench preflight` too:
# python/cobalt_bench/data/net-sysctls.tsv (name TAB minimum TAB note). It becomes
# ET_NET_SYSCTL("name", "minimum") rows for eth_net.c; a malformed row stops the build.
ETH_SYSCTLS_TSV := python/cobalt_bench/data/net-sysctls.tsv
ETH_SYSCTLS_H   := $(BUILD)/eth-test/net_sysctls.h
$(ETH_SYSCTLS_H): $(ETH_SYSCTLS_TSV) src/eth-test/kernel.mk
	@mkdir -p $(dir $@)
	awk -F'\t' 'BEGIN { print "/* Generated from $< by src/eth-test/kernel.mk: do not edit. */" } \
	  /^#/ || /^[ \t]*$$/ { next } \
	  $$1 !~ /^[a-z0-9_.]+$$/ || $$2 !~ /^[0-9]+( [0-9]+)*$$/ { \
	    printf "%s:%d: malformed sysctl row\n", FILENAME, FNR > "/dev/stderr"; bad = 1; exit 1 } \
	  { printf "ET_NET_SYSCTL(\"%s\", \"%s\")\n", $$1, $$2; n++ } \
	  END { if (!bad && !n) { print "no sysctl rows in " FILENAME > "/dev/stderr"; exit 1 } }' \
	  $< > $@.tmp && mv $@.tmp $@
$(BUILD)/eth-test/eth_net.o: $(ETH_SYSCTLS_H)
$(BUILD)/eth-test/eth_net.o: CFLAGS += -I$(BUILD)/eth-test

$(BIN)/eth-test-send: $(ETH_SEND_OBJ) $(ETH_OBJ) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(BIN)/eth-test-receive: $(ETH_RECEIVE_OBJ) $(ETH_OBJ) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# C unit tests: the format and the accounting; the parser under random and mutated input.
# What only the tests need (et_stream_free) is in tests/c/test_eth.h.
$(BUILD)/tests/test_eth_proto: tests/c/test_eth_proto.c tests/c/test_eth.h tests/c/cb_test.h $(ETH_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -o $@ $< $(ETH_OBJ) $(COMMON_LIB) $(LDLIBS)
# The fuzz test compiles the parser itself, with AddressSanitizer and UBSan where the
# compiler has them, so that a read past a datagram's end fails the test.
ETH_FUZZ_SAN := $(shell echo 'int main(void){return 0;}' | $(CC) -fsanitize=address,undefined \
                  -x c - -o /dev/null >/dev/null 2>&1 && echo -fsanitize=address,undefined -fno-sanitize-recover=all)
$(BUILD)/tests/test_eth_fuzz: tests/c/test_eth_fuzz.c tests/c/test_eth.h tests/c/cb_test.h src/eth-test/eth_proto.c src/eth-test/eth_proto.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ETH_FUZZ_SAN) -Isrc -o $@ $< src/eth-test/eth_proto.c $(LDLIBS)
CTESTS += $(BUILD)/tests/test_eth_proto $(BUILD)/tests/test_eth_fuzz
