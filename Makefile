# lispmcp - build, run and test.
#
#   make              build build/lispmcp and the worker image
#   make run          install what is missing, build, start the server (stdio)
#   make check        every test: C unit tests and end-to-end tests
#   make check-asan   the same under AddressSanitizer and UBSan
#   make clean        remove everything built

CC      ?= cc
BUILD   ?= build
CFLAGS  ?= -O2 -g
PKGS     = jansson libuv
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

.PHONY: all run check check-asan unit e2e deps clean

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
	$(CC) $(ALL_CFLAGS) -Isrc $(shell pkg-config --cflags check) -o $@ $< $(LIB_OBJ) \
	    $(LDLIBS) $(shell pkg-config --libs check)

deps:
	@scripts/install-deps.sh

node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

run: deps
	@$(MAKE) --no-print-directory all
	exec $(BUILD)/lispmcp

check: deps
	@$(MAKE) --no-print-directory all $(UNIT) node_modules/.package-lock.json
	@BUILD=$(BUILD) tests/run-all.sh $(UNIT)

check-asan:
	@$(MAKE) --no-print-directory check BUILD=build-asan CFLAGS="-O1 -g" \
	    SANITIZE="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"

clean:
	rm -rf build build-asan

-include $(OBJ:.o=.d)
