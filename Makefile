# AgentNest build. See README.md.  `make help` lists targets.
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
LIBDIR    ?= $(PREFIX)/lib
INCDIR    ?= $(PREFIX)/include
DATADIR   ?= $(PREFIX)/share/agentnest
MANDIR    ?= $(PREFIX)/share/man
BUILD     ?= build
VERSION   := 0.1.0

PKGS      := libseccomp libcap libnl-3.0 libnl-route-3.0 libarchive yajl libnftables libcrypto yaml-0.1 ldns libmicrohttpd
CC        ?= cc
WARN      := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wformat=2 -Wvla
HARDEN    := -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIC -fno-strict-overflow
OPT       ?= -O2 -g
SANFLAGS  ?=
CFLAGS    += -std=gnu11 -D_GNU_SOURCE $(OPT) $(WARN) $(HARDEN) $(SANFLAGS) -Iinclude -Isrc \
             -DAN_VERSION='"$(VERSION)"' -DAN_DATADIR='"$(DATADIR)"' $(shell pkg-config --cflags $(PKGS))
LDFLAGS   += $(SANFLAGS) -Wl,-z,relro,-z,now
ALL_LIBS  := $(shell pkg-config --libs $(PKGS))
# Lazy binding (src/util/lazylib.c): on x86_64 only libseccomp, libcap and yajl
# are linked; the functions used from the other libraries are stubs, generated
# from src/util/lazylib/<name>.syms, that dlopen() the library on first call.
# Elsewhere, or with `make LAZYLIB=0`, every library is linked normally.
EAGER_PKGS:= libseccomp libcap yajl
LAZYLIB_NAMES := archive nftables crypto ldns microhttpd yaml nl-route-3 nl-3
LAZYLIB   ?= $(if $(filter x86_64-%,$(shell $(CC) -dumpmachine)),1,0)
ifeq ($(LAZYLIB),1)
LIBS      := $(shell pkg-config --libs $(EAGER_PKGS))
PC_PKGS   := $(EAGER_PKGS)
LAZY_OBJ  := $(LAZYLIB_NAMES:%=$(BUILD)/lazylib/%.o)
LAZY_CHECK:= $(BUILD)/lazylib/check.stamp
else
LIBS      := $(ALL_LIBS)
PC_PKGS   := $(PKGS)
endif
CFLAGS    += -DAN_LAZYLIB=$(LAZYLIB)

LIB_SRC   := $(sort $(wildcard src/util/*.c src/engine/*.c src/image/*.c src/sandbox/*.c \
                               src/net/*.c src/api/*.c src/mcp/*.c src/server/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
C_LIB_OBJ := $(LIB_OBJ)
LIB_OBJ   += $(LAZY_OBJ)
CLI_SRC   := $(sort $(wildcard src/cli/agentnest/*.c src/cli/common/*.c))
OCI_SRC   := $(sort $(wildcard src/cli/oci/*.c src/cli/common/*.c))
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/%.o)
OCI_OBJ   := $(OCI_SRC:%.c=$(BUILD)/%.o)
TLIB_SRC  := $(sort $(wildcard tests/lib/*.c))
TLIB_OBJ  := $(TLIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC  := $(sort $(wildcard tests/unit/*.c tests/integration/*.c tests/escapes/*.c))
TEST_BIN  := $(TEST_SRC:%.c=$(BUILD)/%)
HELPER_SRC:= $(sort $(wildcard tests/helpers/*.c))
HELPER_BIN:= $(HELPER_SRC:%.c=$(BUILD)/%)

# The flags and install paths a build was made with, rewritten only when they
# change: everything compiled depends on it, so `make install PREFIX=/usr`
# after a plain `make` rebuilds what bakes the paths in (AN_DATADIR, the .pc)
# instead of installing /usr/local ones.
FLAGS_STAMP := $(BUILD)/flags.stamp
FLAGS_NOW := $(CC) $(OPT) $(SANFLAGS) $(LAZYLIB) $(VERSION) $(PREFIX) $(BINDIR) $(LIBDIR) $(INCDIR) $(DATADIR)
$(shell mkdir -p $(BUILD) && { [ "$$(cat $(FLAGS_STAMP) 2>/dev/null)" = '$(FLAGS_NOW)' ] || echo '$(FLAGS_NOW)' > $(FLAGS_STAMP); })

.PHONY: all deps install check check-all check-asan check-cgroupv2 check-engines test-bins images demo bench bench-quick clean help fuzz
all: $(BUILD)/libagentnest.a $(BUILD)/libagentnest.so $(BUILD)/agentnest $(BUILD)/agentnest-oci $(BUILD)/agentnest-init $(BUILD)/agentnest.pc

help:
	@echo "make deps          install every Debian package the build, tests and image tools need"
	@echo "make               build libagentnest (static+shared), agentnest, agentnest-oci"
	@echo "make images        build (or reuse cached) the busybox, python, python-tests, debian and browser images"
	@echo "make demo          deps + build + images + import of the default image + the narrated demo job"
	@echo "make check         run all tests (as root)"
	@echo "make check-all     check + check-asan + check-cgroupv2 + check-engines + fuzz + bench-quick (what CI runs)"
	@echo "make check-asan    run all tests under AddressSanitizer + UBSan"
	@echo "make check-cgroupv2 run the cgroup tests inside a pure cgroup v2 VM"
	@echo "make check-engines podman, Docker and containerd with agentnest-oci vs runc (tests/engines/)"
	@echo "make bench         benchmark against crun and runc"
	@echo "make bench-quick   the benchmark's CI smoke mode (~2 min, asserts numbers exist, not speed)"
	@echo "make install PREFIX=/usr/local"

deps:
	./rootfs-tools/install-deps.sh

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# the Python session helper is embedded with .incbin (session_helper_src.c)
$(BUILD)/src/sandbox/session_helper_src.o: src/sandbox/session_helper.py

# Lazy-binding stubs (src/util/lazylib.c), and the check that every function
# the code imports from those libraries is listed (and no data symbol is).
LAZY_SO = "$$(readlink -f "$$($(CC) -print-file-name=lib$(1).so)")"
$(BUILD)/lazylib/%.S: src/util/lazylib/%.syms scripts/lazylib-gen.sh
	@mkdir -p $(dir $@)
	scripts/lazylib-gen.sh $* $(call LAZY_SO,$*) $< > $@.tmp && mv $@.tmp $@

$(BUILD)/lazylib/%.o: $(BUILD)/lazylib/%.S
	$(CC) -c $< -o $@

$(LAZY_CHECK): $(C_LIB_OBJ) $(CLI_OBJ) $(OCI_OBJ) $(LAZYLIB_NAMES:%=src/util/lazylib/%.syms) scripts/lazylib-check.sh
	scripts/lazylib-check.sh src/util/lazylib $(foreach l,$(LAZYLIB_NAMES),$(l)=$(call LAZY_SO,$(l))) \
	  -- $(sort $(filter %.o,$^))
	touch $@

$(BUILD)/libagentnest.a: $(LIB_OBJ) | $(LAZY_CHECK)
	@mkdir -p $(dir $@)
	rm -f $@; ar rcs $@ $^

$(BUILD)/libagentnest.so: $(LIB_OBJ) | $(LAZY_CHECK)
	$(CC) -shared -Wl,-soname,libagentnest.so.0 $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/agentnest: $(CLI_OBJ) $(BUILD)/libagentnest.a | $(LAZY_CHECK)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libagentnest.a $(LIBS)

$(BUILD)/agentnest-oci: $(OCI_OBJ) $(BUILD)/libagentnest.a | $(LAZY_CHECK)
	$(CC) $(LDFLAGS) -o $@ $(OCI_OBJ) $(BUILD)/libagentnest.a $(LIBS)

# agentnest-init: static, no libraries; bind-mounted into every sandbox as pid 1.
$(BUILD)/agentnest-init: $(sort $(wildcard src/cli/init/*.c))
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -static $(WARN) -o $@ $^

$(BUILD)/agentnest.pc: agentnest.pc.in Makefile $(FLAGS_STAMP)
	sed -e 's|@PREFIX@|$(PREFIX)|;s|@LIBDIR@|$(LIBDIR)|;s|@INCDIR@|$(INCDIR)|;s|@VERSION@|$(VERSION)|;s|@PKGS@|$(PC_PKGS)|' $< > $@

$(BUILD)/tests/helpers/%: tests/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -static -Wall -Wextra -Werror -o $@ $<

# -MMD: a test binary and a tests/lib object are rebuilt when a header they
# include changes; .SECONDARY: make keeps the tests/lib objects (they are
# only prerequisites of a pattern rule, which would make them intermediate).
# Tests link every library (ALL_LIBS): some call libarchive, ldns... directly.
$(BUILD)/tests/%: tests/%.c $(TLIB_OBJ) $(BUILD)/libagentnest.a $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/lib -MMD -MP -MT $@ -MF $@.d -o $@ $< $(TLIB_OBJ) $(BUILD)/libagentnest.a $(LDFLAGS) $(ALL_LIBS) -lcriterion

$(BUILD)/tests/lib/%.o: tests/lib/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/lib -MMD -MP -c $< -o $@

.SECONDARY: $(TLIB_OBJ) $(LAZY_OBJ:%.o=%.S)

test-bins: all $(TEST_BIN) $(HELPER_BIN)

images:
	./rootfs-tools/build-all.sh

check: test-bins images
	BUILD=$(BUILD) ./tests/run-tests.sh

# The main job (CPython's regression tests, tens of minutes) runs once, in
# `check`; the sanitizer pass skips it (AN_SKIP_LONG) to fit CI's 90 minutes.
check-asan:
	AN_SKIP_LONG=1 ASAN_OPTIONS=detect_leaks=1 $(MAKE) BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SANFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" check

check-cgroupv2: test-bins images
	BUILD=$(BUILD) ./tests/run-cgroupv2.sh

# Everything CI runs: tests, the same under ASan+UBSan, cgroup v2 VM tests, the engines, a
# short fuzz run and the benchmark's smoke mode.
check-all: check check-asan check-cgroupv2 check-engines fuzz bench-quick

# podman, Docker (a dockerd of its own) and containerd (ctr) run the same operations with
# runc and with agentnest-oci; each suite in a netns of its own (tests/engines/run-engines.sh).
check-engines: all images
	BUILD=$(BUILD) ./tests/engines/run-engines.sh

fuzz:
	./tests/fuzz/run-fuzz.sh

bench: all images
	./tests/bench/bench.sh

bench-quick: all images
	./tests/bench/bench.sh --quick

demo: deps
	$(MAKE) all images
	./scripts/demo.sh

install: all $(BUILD)/openapi.json
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR)/agentnest \
	  $(DESTDIR)$(DATADIR)/profiles/seccomp $(DESTDIR)$(MANDIR)/man1
	install -m 0755 $(BUILD)/agentnest $(BUILD)/agentnest-oci $(BUILD)/agentnest-init $(DESTDIR)$(BINDIR)/
	install -m 0644 $(BUILD)/libagentnest.a $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(BUILD)/libagentnest.so $(DESTDIR)$(LIBDIR)/libagentnest.so.0
	ln -sf libagentnest.so.0 $(DESTDIR)$(LIBDIR)/libagentnest.so
	install -m 0644 include/agentnest.h $(DESTDIR)$(INCDIR)/
	install -m 0644 include/agentnest/*.h $(DESTDIR)$(INCDIR)/agentnest/
	install -m 0644 $(BUILD)/agentnest.pc $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -m 0644 profiles/*.json $(DESTDIR)$(DATADIR)/profiles/
	install -m 0644 profiles/seccomp/*.json $(DESTDIR)$(DATADIR)/profiles/seccomp/
	install -m 0644 man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(BUILD)/openapi.json $(DESTDIR)$(DATADIR)/openapi.json

# The HTTP API's OpenAPI 3.1 document, generated from the operations table (src/api/).
$(BUILD)/openapi.json: $(BUILD)/agentnest
	$(BUILD)/agentnest serve --openapi > $@.tmp && mv $@.tmp $@

clean:
	rm -rf build build-asan

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
