# dmindex — build of the PostgreSQL extension (PGXS) and of the standalone
# programs that share src/dm/: the memnode daemon, the C tests, benchmarks.
#
#   make                 everything (extension, memnode, tests, benchmarks)
#   make install         extension into PostgreSQL, memnode onto PATH
#   make check-unit      C unit + transport tests (no PostgreSQL needed)
#   test/run-tests.sh    every test, the way CI runs them

PG_CONFIG ?= /usr/lib/postgresql/15/bin/pg_config
BINDIR ?= /usr/local/bin

DM_SRCS := $(sort $(wildcard src/dm/*.c))
AM_SRCS := $(sort $(wildcard src/pg/*.c))

# ---- standalone programs (no PostgreSQL headers) --------------------------
BUILD := build
SA_CFLAGS ?= -O2 -g
SA_CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -fPIC -pthread -Isrc/dm
# libcrypto: HMAC-SHA-256 of the authentication handshake (src/dm/dm_auth.c)
SA_LIBS := -pthread -lm -lcrypto
# Sanitized build of the standalone programs into a build directory of its own
# (CI: test/run-tests.sh):
#   make standalone BUILD=build/asan SANITIZE="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
#   BUILD_DIR=build/asan test/run-c-tests.sh
SANITIZE ?=
SA_CFLAGS += $(SANITIZE)
SA_LIBS += $(SANITIZE)

DM_SA_OBJS := $(patsubst src/dm/%.c,$(BUILD)/dm/%.o,$(DM_SRCS))
MEMNODE_SRCS := $(sort $(wildcard memnode/*.c))
MEMNODE_OBJS := $(patsubst memnode/%.c,$(BUILD)/memnode/%.o,$(MEMNODE_SRCS))
# A test or benchmark is one file (test/integ/NAME.c) or, when it outgrew one,
# a folder of files with a private header (test/integ/NAME/*.c); either way
# it becomes one binary, build/test/integ/NAME.
TEST_SRCS := $(sort $(wildcard test/unit/*.c test/integ/*.c))
TEST_DIRS := $(sort $(patsubst %/,%,$(dir $(wildcard test/unit/*/*.c test/integ/*/*.c))))
TEST_LIB_SRCS := $(sort $(wildcard test/lib/*.c))
TEST_LIB_OBJS := $(patsubst test/lib/%.c,$(BUILD)/test/lib/%.o,$(TEST_LIB_SRCS))
TEST_BINS := $(patsubst test/%.c,$(BUILD)/test/%,$(TEST_SRCS)) $(patsubst test/%,$(BUILD)/test/%,$(TEST_DIRS))
BENCH_SRCS := $(sort $(wildcard bench/*.c))
BENCH_DIRS := $(sort $(patsubst %/,%,$(dir $(wildcard bench/*/*.c))))
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS)) $(patsubst bench/%,$(BUILD)/bench/%,$(BENCH_DIRS))

STANDALONE := $(BUILD)/dmindex-memnode $(TEST_BINS) $(BENCH_BINS)

all: standalone
standalone: $(STANDALONE)

$(BUILD)/dm/%.o: src/dm/%.c $(wildcard src/dm/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(SA_CFLAGS) -c -o $@ $<

$(BUILD)/memnode/%.o: memnode/%.c $(wildcard memnode/*.h src/dm/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(SA_CFLAGS) -Imemnode -c -o $@ $<

$(BUILD)/dmindex-memnode: $(MEMNODE_OBJS) $(DM_SA_OBJS)
	$(CC) -o $@ $^ $(SA_LIBS) -lnuma

$(BUILD)/test/lib/%.o: test/lib/%.c $(wildcard test/lib/*.h src/dm/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(SA_CFLAGS) -Itest/lib -c -o $@ $<

$(BUILD)/test/%: test/%.c $(DM_SA_OBJS) $(TEST_LIB_OBJS) $(wildcard test/lib/*.h src/dm/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(SA_CFLAGS) -Itest/lib -o $@ $< $(DM_SA_OBJS) $(TEST_LIB_OBJS) $(SA_LIBS)

$(BUILD)/bench/%: bench/%.c $(DM_SA_OBJS) $(TEST_LIB_OBJS) $(wildcard src/dm/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(SA_CFLAGS) -Itest/lib -o $@ $< $(DM_SA_OBJS) $(TEST_LIB_OBJS) $(SA_LIBS)

# A program in a folder (bench/NAME/, test/integ/NAME/): all its .c files, one binary.
define folder_prog
$(BUILD)/$(1): $(wildcard $(1)/*.c $(1)/*.h) $(DM_SA_OBJS) $(TEST_LIB_OBJS) $(wildcard test/lib/*.h src/dm/*.h)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(SA_CFLAGS) -Itest/lib -o $$@ $$(filter %.c,$$^) $$(DM_SA_OBJS) $$(TEST_LIB_OBJS) $$(SA_LIBS)
endef
$(foreach d,$(TEST_DIRS) $(BENCH_DIRS),$(eval $(call folder_prog,$(d))))

check-unit: standalone
	test/run-c-tests.sh

# ---- libFuzzer targets (test/fuzz/README; clang) ----------------------------
#   make fuzz              build build/fuzz/fuzz_{frame,batch,handshake}
#   test/run-fuzz.sh [S]   run each for S seconds (default 20) from its corpus
FUZZ_CC ?= clang
FUZZ_CFLAGS ?= -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_TARGETS := $(patsubst test/fuzz/%.c,$(BUILD)/fuzz/%,$(filter-out test/fuzz/fuzz_memnode.c,$(wildcard test/fuzz/fuzz_*.c)))
# the executor and what it uses: memnode/main.c, server.c and clock.c are replaced by fuzz_memnode.c
# exec.c runs the offload executor (memnode/offload.c), which is the tree code: all of src/dm
FUZZ_SRCS := test/fuzz/fuzz_memnode.c memnode/exec.c memnode/auth.c memnode/log.c memnode/offload.c \
	$(DM_SRCS)

fuzz: $(FUZZ_TARGETS)
$(BUILD)/fuzz/%: test/fuzz/%.c $(FUZZ_SRCS) $(wildcard src/dm/*.h memnode/*.h test/fuzz/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -std=gnu11 -Isrc/dm -Imemnode -Itest/fuzz -pthread -o $@ $< $(FUZZ_SRCS) -lcrypto -lm

install: install-memnode
install-memnode: $(BUILD)/dmindex-memnode
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(BUILD)/dmindex-memnode $(DESTDIR)$(BINDIR)/dmindex-memnode

clean: clean-standalone
clean-standalone:
	rm -rf $(BUILD)

.PHONY: standalone check-unit install-memnode clean-standalone fuzz

# ---- the extension (PGXS) --------------------------------------------------
MODULE_big = dmindex
OBJS = $(AM_SRCS:.c=.o) $(DM_SRCS:.c=.o)
EXTENSION = dmindex
DATA = $(wildcard sql/dmindex--*.sql)
PGFILEDESC = "dmindex - B+-tree index on disaggregated memory"
REGRESS = $(shell cat test/regress-schedule 2>/dev/null)
REGRESS_OPTS = --inputdir=. --load-extension=dmindex
# The library's version is the control file's default_version, compiled in so
# dmindex_version() can tell an administrator when ALTER EXTENSION UPDATE is due.
DMINDEX_VERSION := $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" dmindex.control)
PG_CPPFLAGS = -Isrc/pg -Isrc/dm -DDMINDEX_VERSION='"$(DMINDEX_VERSION)"'
PG_CFLAGS = -std=gnu11 -Wno-declaration-after-statement
# ICU: sort keys of strings under ICU collations (src/pg/dmkeyenc.c)
SHLIB_LINK = -lcrypto $(ICU_LIBS)

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: rebuild on any header change, or an
# object compiled against an old struct layout ends up in dmindex.so.
$(OBJS): $(wildcard src/pg/*.h src/dm/*.h)
