# Rebound: a durable job server with exact retry semantics.
# `make` builds build/rebound; `make check` runs the unit and server suites on
# both backends and the README sequence (minutes); `make check-full` adds the
# sanitized build, long runs, package, browser, interop, fuzz and quick benches;
# `make run` starts the server on ./rebound.db; `make bench` runs the benchmarks
# (`make bench-pg`: distributed mode beside PostgreSQL job queues).

CC      ?= cc
O       ?= build
PKGS    := libevent libevent_pthreads libevent_openssl sqlite3 libpq jansson openssl
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter -Wno-format-truncation
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -pthread $(WARN) -Iinclude -Isrc -MMD -MP
LDFLAGS += -pthread
SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

LIB_SRC    := $(sort $(wildcard src/common/*.c src/policy/*.c src/config/*.c \
                 src/engine/*.c src/backend/sqlite/*.c src/backend/pg/*.c src/server/*.c \
                 src/client/*.c))
POLICY_SRC := $(sort $(wildcard src/common/*.c src/policy/*.c))
CLI_SRC    := $(sort $(wildcard src/cli/*.c))
TEST_SRC   := $(sort $(wildcard tests/unit/test_*.c tests/server/test_*.c))
TOOL_SRC   := $(sort $(wildcard tests/tools/*.c))
FAULT_SRC  := $(sort $(wildcard tests/faults/test_*.c))
BENCH_SRC  := $(sort $(wildcard bench/*.c))
WEB_FILES  := $(sort $(wildcard web/*))

# What check, bench and fuzz run once their prerequisites are built.
TEST_RUNNER  ?= scripts/run-tests.sh
BENCH_RUNNER ?= bench/run.sh
FUZZ_RUNNER  ?= fuzz/run.sh

obj   = $(patsubst %.c,$(1)/obj/%.o,$(2))
TESTS = $(patsubst %.c,$(1)/%,$(notdir $(TEST_SRC)))

all: $(O)/rebound $(O)/librebound_policy.a tools

# Debian packages first. The goals on the command line choose which sets
# scripts/deps.sh installs (build always; test for `check` and test binaries;
# bench; fuzz), and make runs it while reading this file: before any rule, so
# before any compile, link or script that needs a package, with -j too. When it
# fails (not root, no network) make stops here and nothing is compiled.
# `make clean` and dry runs (-n) install nothing. DEPS replaces the script
# (tests/scripts/deps_order.sh records the calls with a stub).
DEPS      ?= scripts/deps.sh
DEPS_SETS := build
ifneq ($(filter check check-faults pg-schema %/tests,$(MAKECMDGOALS))$(findstring /tests/,$(MAKECMDGOALS)),)
DEPS_SETS += test
endif
ifneq ($(filter check-full,$(MAKECMDGOALS)),)
DEPS_SETS += test full
endif
ifneq ($(filter bench,$(MAKECMDGOALS)),)
DEPS_SETS += bench
endif
ifneq ($(filter bench-pg,$(MAKECMDGOALS)),)
DEPS_SETS += bench-pg
endif
ifneq ($(filter fuzz,$(MAKECMDGOALS)),)
DEPS_SETS += fuzz
endif
ifeq ($(filter-out clean,$(MAKECMDGOALS))$(if $(MAKECMDGOALS),,all),)
else ifneq ($(findstring n,$(firstword -$(MAKEFLAGS))),)
else ifneq ($(MAKE_RESTARTS),)
else ifneq ($(shell $(DEPS) $(DEPS_SETS) >&2 || echo failed),)
$(error $(DEPS) $(DEPS_SETS) failed (above): nothing was built)
endif

# pkg-config's flags, cached for the run (after the install above).
$(O)/deps.mk: scripts/deps.sh Makefile
	@mkdir -p $(O)
	@printf 'PKG_CFLAGS := %s\nPKG_LIBS := %s\n' \
	  "$$(pkg-config --cflags $(PKGS))" "$$(pkg-config --libs $(PKGS)) -lm" > $@
-include $(O)/deps.mk

# The dashboard's files, embedded as C arrays (src/server/assets.h).
$(O)/gen/web_assets.c: $(WEB_FILES) scripts/embed.sh
	@mkdir -p $(@D)
	scripts/embed.sh $(WEB_FILES) > $@

# The PostgreSQL schema's migrations, embedded as C strings
# (src/backend/pg/sql_schema.c); a new NNNN.sql needs no edit here.
PG_SCHEMA := $(sort $(wildcard src/backend/pg/schema/[0-9][0-9][0-9][0-9].sql))
$(O)/gen/pg_schema.c: $(PG_SCHEMA) scripts/embed_schema.sh
	@mkdir -p $(@D)
	sh scripts/embed_schema.sh $(PG_SCHEMA) > $@.tmp && mv $@.tmp $@

define build_tree # $(1)=output dir, $(2)=extra flags
$(1)/obj/%.o: %.c | $(O)/deps.mk
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $(2) $$(PKG_CFLAGS) -c $$< -o $$@
$(1)/obj/gen/web_assets.o: $(O)/gen/web_assets.c | $(O)/deps.mk
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $(2) -c $$< -o $$@
$(1)/obj/gen/pg_schema.o: $(O)/gen/pg_schema.c | $(O)/deps.mk
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $(2) $$(PKG_CFLAGS) -c $$< -o $$@
$(1)/librebound.a: $(call obj,$(1),$(LIB_SRC)) $(1)/obj/gen/web_assets.o $(1)/obj/gen/pg_schema.o
	@rm -f $$@; ar rcs $$@ $$^
$(1)/librebound_policy.a: $(call obj,$(1),$(POLICY_SRC))
	@rm -f $$@; ar rcs $$@ $$^
$(1)/rebound: $(call obj,$(1),$(CLI_SRC)) $(1)/librebound.a
	$$(CC) $(2) $$(LDFLAGS) -o $$@ $$^ $$(PKG_LIBS)
$(1)/tests/%: $(1)/obj/tests/unit/%.o $(1)/obj/tests/common/lsan_runner.o $(1)/librebound.a
	@mkdir -p $$(@D)
	$$(CC) $(2) $$(LDFLAGS) -o $$@ $$^ $$(PKG_LIBS) -lcriterion
$(1)/tests/%: $(1)/obj/tests/server/%.o $(1)/obj/tests/common/lsan_runner.o $(1)/librebound.a
	@mkdir -p $$(@D)
	$$(CC) $(2) $$(LDFLAGS) -o $$@ $$^ $$(PKG_LIBS) -lcriterion
$(1)/faults/%: $(1)/obj/tests/faults/%.o $(1)/obj/tests/common/lsan_runner.o $(1)/librebound.a
	@mkdir -p $$(@D)
	$$(CC) $(2) $$(LDFLAGS) -o $$@ $$^ $$(PKG_LIBS) -lcriterion
$(1)/tools/%: $(1)/obj/tests/tools/%.o $(1)/librebound.a
	@mkdir -p $$(@D)
	$$(CC) $(2) $$(LDFLAGS) -o $$@ $$^ $$(PKG_LIBS)
$(1)/bench/%: $(1)/obj/bench/%.o $(1)/librebound.a
	@mkdir -p $$(@D)
	$$(CC) $(2) $$(LDFLAGS) -o $$@ $$^ $$(PKG_LIBS)
endef
$(eval $(call build_tree,$(O),))
$(eval $(call build_tree,$(O)/asan,$(SAN)))

tools: $(patsubst tests/tools/%.c,$(O)/tools/%,$(TOOL_SRC))
bench-bin: $(patsubst bench/%.c,$(O)/bench/%,$(BENCH_SRC))

# Two tiers (scripts/run-tests.sh): `check`, what a developer runs all day —
# every unit and server suite of the normal build on both backends, the CLI
# and config scripts and the README sequence; `check-full`, what CI runs —
# that, the sanitized build, the long runs and every script suite.
check: all $(call TESTS,$(O)/tests)
	@O=$(O) REBOUND_TIER=check $(TEST_RUNNER)
FAULTS = $(patsubst tests/faults/%.c,$(O)/faults/%,$(FAULT_SRC))
check-full: all bench-bin $(call TESTS,$(O)/tests) $(O)/asan/rebound $(call TESTS,$(O)/asan/tests) \
            $(FAULTS)
	@O=$(O) REBOUND_TIER=full $(TEST_RUNNER)

# The fault suite (tests/faults/, issue 27): distributed mode under network
# faults, on its own (minutes); FAULTS_ARGS="--repeat N" runs it N times.
check-faults: all $(FAULTS)
	@O=$(O) tests/faults/run.sh $(FAULTS_ARGS)

run: $(O)/rebound
	$(O)/rebound serve $(ARGS)

bench: all bench-bin
	@O=$(O) $(BENCH_RUNNER) $(BENCH_ARGS)

# Distributed mode beside graphile-worker and pg-boss on one PostgreSQL
# cluster (issue 17): bench/pg/run.sh, BENCH_PG_ARGS="--jobs N ...".
bench-pg: all bench-bin
	@O=$(O) bench/pg/run.sh $(BENCH_PG_ARGS)
.PHONY: bench-pg

# src/backend/pg/schema/schema.sql, the current schema as a reader sees it,
# from a throwaway cluster's schema migrated from nothing (test_pg_schema
# fails until it matches the migrations).
pg-schema: $(O)/rebound
	sh scripts/pg_schema.sh $(O)/rebound > $(O)/schema.sql.tmp
	mv $(O)/schema.sql.tmp src/backend/pg/schema/schema.sql
.PHONY: pg-schema

fuzz: all
	@O=$(O) $(FUZZ_RUNNER) $(FUZZ_ARGS)

# --- Install (docs/operations.md): the GNU directory variables, with DESTDIR
# for staging (the Debian package). `make uninstall` removes exactly what
# `make install` put there; a config file that was already there, or was
# changed since, is left alone by both.
PREFIX         ?= /usr/local
prefix         ?= $(PREFIX)
exec_prefix    ?= $(prefix)
bindir         ?= $(exec_prefix)/bin
datarootdir    ?= $(prefix)/share
mandir         ?= $(datarootdir)/man
man1dir        ?= $(mandir)/man1
man5dir        ?= $(mandir)/man5
docdir         ?= $(datarootdir)/doc/rebound
# prefix=/usr implies /etc, as GNU packages are installed by distributions
sysconfdir     ?= $(if $(filter /usr /usr/,$(prefix)),/etc,$(prefix)/etc)
systemdunitdir ?= $(prefix)/lib/systemd/system
sysusersdir    ?= $(prefix)/lib/sysusers.d
bashcompdir    ?= $(datarootdir)/bash-completion/completions
INSTALL        ?= install

# The manual pages come from the binary (its command table, each command's
# --help, the configuration schema), so they name every subcommand and
# setting; the installed config is the annotated example, settings commented.
# They name the configuration as /etc/rebound/rebound.toml, the packaged
# place; installing writes $(sysconfdir)'s instead, so the unit, both pages
# and the config's own header agree whatever the variables.
AT_SYSCONF = sed -e 's|/etc/rebound/|$(sysconfdir)/rebound/|g'
MAN_PAGES := $(O)/dist/rebound.1 $(O)/dist/rebound.toml.5
$(O)/dist/rebound.1: $(O)/rebound scripts/man1.sh
	@mkdir -p $(@D)
	sh scripts/man1.sh $(O)/rebound > $@.tmp && mv $@.tmp $@
$(O)/dist/rebound.toml.5: $(O)/rebound
	@mkdir -p $(@D)
	$(O)/rebound config reference --man > $@.tmp && mv $@.tmp $@
$(O)/dist/rebound.toml: rebound.toml dist/etc-config.sh
	@mkdir -p $(@D)
	sh dist/etc-config.sh rebound.toml > $@.tmp && mv $@.tmp $@
man: $(MAN_PAGES)

INSTALLED_CONF := $(DESTDIR)$(sysconfdir)/rebound/rebound.toml
install: $(O)/rebound $(MAN_PAGES) $(O)/dist/rebound.toml
	$(INSTALL) -d $(DESTDIR)$(bindir) $(DESTDIR)$(man1dir) $(DESTDIR)$(man5dir) \
	  $(DESTDIR)$(sysconfdir)/rebound $(DESTDIR)$(docdir)/examples $(DESTDIR)$(systemdunitdir) \
	  $(DESTDIR)$(sysusersdir) $(DESTDIR)$(bashcompdir)
	$(INSTALL) -m 755 $(O)/rebound $(DESTDIR)$(bindir)/rebound
	$(AT_SYSCONF) $(O)/dist/rebound.1 > $(DESTDIR)$(man1dir)/rebound.1
	$(AT_SYSCONF) $(O)/dist/rebound.toml.5 > $(DESTDIR)$(man5dir)/rebound.toml.5
	chmod 644 $(DESTDIR)$(man1dir)/rebound.1 $(DESTDIR)$(man5dir)/rebound.toml.5
	$(INSTALL) -m 644 rebound.toml $(DESTDIR)$(docdir)/examples/rebound.toml
	sed -e 's|@bindir@|$(bindir)|g' -e 's|@sysconfdir@|$(sysconfdir)|g' dist/rebound.service.in \
	  > $(DESTDIR)$(systemdunitdir)/rebound.service
	chmod 644 $(DESTDIR)$(systemdunitdir)/rebound.service
	$(INSTALL) -m 644 dist/rebound.sysusers $(DESTDIR)$(sysusersdir)/rebound.conf
	$(INSTALL) -m 644 dist/rebound.bash $(DESTDIR)$(bashcompdir)/rebound
	@if [ -e $(INSTALLED_CONF) ]; then echo "install: keeping the existing $(INSTALLED_CONF)"; \
	else echo "$(AT_SYSCONF) $(O)/dist/rebound.toml > $(INSTALLED_CONF)"; \
	  $(AT_SYSCONF) $(O)/dist/rebound.toml > $(INSTALLED_CONF) && chmod 644 $(INSTALLED_CONF); fi

uninstall: $(O)/dist/rebound.toml
	rm -f $(DESTDIR)$(bindir)/rebound $(DESTDIR)$(man1dir)/rebound.1 \
	  $(DESTDIR)$(man5dir)/rebound.toml.5 $(DESTDIR)$(docdir)/examples/rebound.toml \
	  $(DESTDIR)$(systemdunitdir)/rebound.service $(DESTDIR)$(sysusersdir)/rebound.conf \
	  $(DESTDIR)$(bashcompdir)/rebound
	@if $(AT_SYSCONF) $(O)/dist/rebound.toml | cmp -s - $(INSTALLED_CONF); then \
	  echo "rm -f $(INSTALLED_CONF)"; \
	  rm -f $(INSTALLED_CONF); \
	elif [ -e $(INSTALLED_CONF) ]; then echo "uninstall: keeping the changed $(INSTALLED_CONF)"; fi
	-rmdir $(DESTDIR)$(sysconfdir)/rebound $(DESTDIR)$(docdir)/examples $(DESTDIR)$(docdir) 2>/dev/null

.PHONY: man install uninstall

clean:
	rm -rf $(O)

.PHONY: all tools bench-bin check check-full check-faults run bench fuzz clean
.SECONDARY:
-include $(shell find $(O) -name '*.d' 2>/dev/null)
