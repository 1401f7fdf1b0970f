# lispmcp - build, run and test.
#
#   make              build build/lispmcp and the worker image
#   make run          install what is missing, build, serve HTTP on 127.0.0.1:8765
#   make check        every test: C unit tests and end-to-end tests
#   make check-asan   the same under AddressSanitizer and UBSan
#   make bench        the benchmarks, with their figures
#   make soak         random hostile programs in many sessions (SOAK_SECONDS)
#   make fuzz         the libFuzzer targets (FUZZ_SECONDS each)
#   make clean        remove everything built

CC      ?= cc
BUILD   ?= build
CFLAGS  ?= -O2 -g
PKGS     = jansson libuv libmicrohttpd
WARN     = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wformat=2 -Wvla -Wpointer-arith
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(SANITIZE) \
             $(shell pkg-config --cflags $(PKGS))
LDLIBS   = $(shell pkg-config --libs $(PKGS)) -lm
SBCL    ?= sbcl

SRC      = $(wildcard src/*.c)
OBJ      = $(patsubst src/%.c,$(BUILD)/obj/%.o,$(SRC))
LIB_OBJ  = $(filter-out $(BUILD)/obj/main.o,$(OBJ))
UNIT     = $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))

.PHONY: all run check check-asan conformance bench soak deps clean fuzz

all: $(BUILD)/lispmcp $(BUILD)/lispmcp-worker.core

$(BUILD)/obj $(BUILD)/tests:
	mkdir -p $@

$(BUILD)/obj/%.o: src/%.c | $(BUILD)/obj
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/lispmcp: $(OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(OBJ) $(LDLIBS)

$(BUILD)/lispmcp-worker.core: lisp/agent.lisp | $(BUILD)/obj
	$(SBCL) --noinform --non-interactive --no-sysinit --no-userinit \
	    --load lisp/agent.lisp --eval '(lispmcp-agent:save-core "$@")' >/dev/null

$(BUILD)/tests/%: tests/unit/%.c $(LIB_OBJ) | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -MMD -MP -Isrc $(shell pkg-config --cflags check) -o $@ $< $(LIB_OBJ) \
	    $(LDLIBS) $(shell pkg-config --libs check)

deps:
	@scripts/install-deps.sh

node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

run: deps
	@$(MAKE) --no-print-directory all
	exec $(BUILD)/lispmcp --http 127.0.0.1:8765

check: deps
	@$(MAKE) --no-print-directory all $(UNIT) node_modules/.package-lock.json
	@BUILD=$(BUILD) tests/run-all.sh $(UNIT)

# The official MCP conformance suite over HTTP (also run by check).
conformance: all node_modules/.package-lock.json
	@BUILD=$(BUILD) tests/conformance/run.sh

# Benchmarks: they print their figures (not part of check).
$(BUILD)/floor: bench/floor.c | $(BUILD)/obj
	$(CC) $(ALL_CFLAGS) -o $@ $<

BENCH_SRC = $(wildcard bench/*.c)
$(BUILD)/bench: $(filter-out bench/floor.c,$(BENCH_SRC)) bench/*.h | $(BUILD)/obj
	$(CC) $(ALL_CFLAGS) -pthread -o $@ $(filter %.c,$^) $(LDLIBS)

bench: all $(BUILD)/bench $(BUILD)/floor node_modules/.package-lock.json
	@scripts/install-deps.sh gnuplot-nox
	$(BUILD)/bench $(BUILD)/lispmcp $(BUILD)/floor
	node bench/plot.mjs bench/results.json bench/results.png
	node bench/http-load.mjs

# Random hostile programs in many sessions for SOAK_SECONDS (not part of check).
soak: all node_modules/.package-lock.json
	node tests/soak/soak.mjs

check-asan:
	@$(MAKE) --no-print-directory check BUILD=build-asan CFLAGS="-O1 -g" \
	    SANITIZE="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"

clean:
	rm -rf build build-asan build-fuzz

-include $(OBJ:.o=.d) $(UNIT:=.d)

# Fuzzing (clang's libFuzzer): each target runs FUZZ_SECONDS on a copy of its
# seed corpus in fuzz/corpus/, so new inputs never dirty the repository.
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS   = -std=c11 -D_GNU_SOURCE -g -O1 -Isrc -fsanitize=fuzzer,address,undefined \
                $(shell pkg-config --cflags $(PKGS))
FUZZ_SRC      = $(filter-out src/main.c,$(SRC))

build-fuzz/fuzz_%: fuzz/fuzz_%.c $(FUZZ_SRC)
	@mkdir -p build-fuzz
	clang $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_SRC) $(LDLIBS)

fuzz: build-fuzz/fuzz_mcp build-fuzz/fuzz_frame
	@for t in mcp frame; do \
	    rm -rf build-fuzz/corpus-$$t && cp -r fuzz/corpus/$$t build-fuzz/corpus-$$t && \
	    build-fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
	        -artifact_prefix=build-fuzz/crash-$$t- build-fuzz/corpus-$$t || exit 1; \
	done
