# cobalt-bench: the `cobalt-bench` command (report, preflight, runs), Python in python/;
# bin/cobalt-bench is a launcher generated from cobalt-bench.in. Needs python3 (the venv's,
# with matplotlib from requirements.txt, for `report`).
ifneq ($(shell command -v $(PYTHON) 2>/dev/null),)
KERNELS += cobalt-bench
$(BIN)/cobalt-bench: src/cobalt-bench/cobalt-bench.in src/cobalt-bench/kernel.mk
	@mkdir -p $(BIN)
	sed -e 's|@PYTHON@|$(if $(wildcard .venv/bin/python),$(abspath .venv/bin/python),python3)|' $< > $@.tmp
	chmod 755 $@.tmp
	mv $@.tmp $@
else
SKIPPED += "cobalt-bench: python3 not found (Debian: python3)"
endif
