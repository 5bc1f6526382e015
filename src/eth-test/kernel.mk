# eth-test-send / eth-test-receive: Linux sockets only (sendmmsg/recvmmsg), no other
# dependency; always built.
KERNELS += eth-test-send eth-test-receive
ETH_OBJ := $(BUILD)/eth-test/eth_proto.o $(BUILD)/eth-test/eth_net.o
$(BUILD)/eth-test/%.o: src/eth-test/eth_proto.h src/eth-test/eth_net.h
$(BIN)/eth-test-send: $(BUILD)/eth-test/eth-test-send.o $(ETH_OBJ) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(BIN)/eth-test-receive: $(BUILD)/eth-test/eth-test-receive.o $(ETH_OBJ) $(COMMON_LIB)
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# C unit tests: the format and the accounting; the parser under random and mutated input.
$(BUILD)/tests/test_eth_proto: tests/c/test_eth_proto.c tests/c/cb_test.h $(ETH_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -o $@ $< $(ETH_OBJ) $(COMMON_LIB) $(LDLIBS)
# The fuzz test compiles the parser itself, with AddressSanitizer and UBSan where the
# compiler has them, so that a read past a datagram's end fails the test.
ETH_FUZZ_SAN := $(shell echo 'int main(void){return 0;}' | $(CC) -fsanitize=address,undefined \
                  -x c - -o /dev/null >/dev/null 2>&1 && echo -fsanitize=address,undefined -fno-sanitize-recover=all)
$(BUILD)/tests/test_eth_fuzz: tests/c/test_eth_fuzz.c tests/c/cb_test.h src/eth-test/eth_proto.c src/eth-test/eth_proto.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ETH_FUZZ_SAN) -Isrc -o $@ $< src/eth-test/eth_proto.c $(LDLIBS)
CTESTS += $(BUILD)/tests/test_eth_proto $(BUILD)/tests/test_eth_fuzz
