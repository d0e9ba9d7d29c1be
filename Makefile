# CableS: `make` builds, `make test` runs the tests, `make bench` the
# benchmarks (`make bench-splash` the SPLASH-2 programs, `make
# bench-openmp` the OpenMP ones), `make install
# PREFIX=DIR` installs for users.
PREFIX   ?= /usr/local
BUILD    ?= build
CC       ?= cc
CXX      ?= c++
OPT      ?= -O2 -g
DEPS_CFLAGS := $(shell pkg-config --cflags ucx ompi-c)
DEPS_LIBS   := $(shell pkg-config --libs ucx ompi-c) -lmemkind -lnuma -ldl -lpthread
CFLAGS   := -std=c11 -D_GNU_SOURCE $(OPT) -Wall -Wextra -fPIC \
            -Ilibcables/include $(DEPS_CFLAGS) $(EXTRA_CFLAGS)
CXXFLAGS := -std=c++17 $(OPT) -Wall -Ilibcables/include -Ilibcables/src $(EXTRA_CFLAGS)

LIB_SRCS := $(wildcard libcables/src/*.c pthread_shim/src/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/lib/libcables.so
# pthread_once's cleanup runs for a C++ exception too (threads.c)
$(BUILD)/pthread_shim/src/threads.o: CFLAGS += -fexceptions
LINK_OBJS := $(BUILD)/lib/cables/head.o $(BUILD)/lib/cables/tail.o $(BUILD)/lib/cables/atomics.o \
             $(BUILD)/lib/cables/cables_atomics.h $(BUILD)/lib/cables/flush_plugin.so \
             $(BUILD)/lib/cables/gomp.o $(BUILD)/lib/cables/openmp/libgomp.spec
RUN      := $(BUILD)/bin/cables-run
CC_DRIVER := $(BUILD)/bin/cables-cc
# how a program is linked against libcables (kept even if it names no symbol)
LINK_CABLES = -L$(BUILD)/lib -Wl,-rpath,$(abspath $(BUILD)/lib) \
              -Wl,--no-as-needed -lcables -Wl,--as-needed

PROGS     := $(patsubst tests/progs/%.c,$(BUILD)/progs/%,$(wildcard tests/progs/*.c))
BENCHES   := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/*.c))
# plain pthreads programs (apps/, tests/posix/, bench/pthreads/): compiled
# once with cc, then linked twice from the same object: natively against
# glibc, and relinked with cables-cc against libcables
PT_SRCS   := $(wildcard apps/*.c tests/posix/*.c bench/pthreads/*.c)
PT_CABLES := $(patsubst %.c,$(BUILD)/%,$(PT_SRCS))
PT_NATIVE := $(patsubst %.c,$(BUILD)/native/%,$(PT_SRCS))
# programs written for the SPLASH-2 M4 macros (.C): expanded with
# m4macros/c.m4.cables and built with cables-cc into build/<path>, and with
# c.m4.pthreads and cc into build/native/<path> (the native baseline)
M4_SRCS   := $(wildcard splash2/*.C m4macros/tests/*.C)
M4_CABLES := $(patsubst %.C,$(BUILD)/%,$(M4_SRCS))
M4_NATIVE := $(patsubst %.C,$(BUILD)/native/%,$(M4_SRCS))
# OpenMP programs: compiled with cables-cc -fopenmp into build/<path>, and
# with cc -fopenmp (GCC's libgomp) into build/native/<path>
OMP_SRCS   := $(wildcard tests/openmp/*.c apps/openmp/*.c bench/openmp/*.c)
OMP_CABLES := $(patsubst %.c,$(BUILD)/%,$(OMP_SRCS))
OMP_NATIVE := $(patsubst %.c,$(BUILD)/native/%,$(OMP_SRCS))
# pthreads programs compiled (not only linked) with cables-cc into
# build/<path>, and with cc into build/native/<path>
DRV_SRCS   := $(wildcard tests/cc/*.c)
DRV_CABLES := $(patsubst %.c,$(BUILD)/%,$(DRV_SRCS))
DRV_NATIVE := $(patsubst %.c,$(BUILD)/native/%,$(DRV_SRCS))
# (and C++20 ones, with libstdc++)
DRVXX_SRCS   := $(wildcard tests/cc/*.cc)
DRVXX_CABLES := $(patsubst %.cc,$(BUILD)/%,$(DRVXX_SRCS))
DRVXX_NATIVE := $(patsubst %.cc,$(BUILD)/native/%,$(DRVXX_SRCS))
# C++ pthreads programs: compiled once with c++, linked natively with c++
# and relinked with cables-cc (and libstdc++)
CXX_SRCS   := $(wildcard tests/cxx/*.cc)
CXX_CABLES := $(patsubst %.cc,$(BUILD)/%,$(CXX_SRCS))
CXX_NATIVE := $(patsubst %.cc,$(BUILD)/native/%,$(CXX_SRCS))
UNIT      := $(BUILD)/tests/unit_tests
MULTI     := $(BUILD)/tests/multinode_tests

all: $(LIB) $(LINK_OBJS) $(RUN) $(CC_DRIVER) $(PROGS) $(PT_CABLES) $(PT_NATIVE) \
     $(M4_CABLES) $(M4_NATIVE) $(OMP_CABLES) $(OMP_NATIVE) $(DRV_CABLES) $(DRV_NATIVE) \
     $(CXX_CABLES) $(CXX_NATIVE) $(DRVXX_CABLES) $(DRVXX_NATIVE)

$(BUILD)/%.o: %.c libcables/src/internal.h libcables/src/pure.h libcables/include/cables.h pthread_shim/src/shim.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# a sanitizer build's library, and programs cables-cc builds, link its runtime
SAN_FLAGS = $(filter -fsanitize%,$(OPT))

# the list of the library's sources, rewritten when it changes: a source
# removed relinks the library too (its objects would be newer still)
LIB_LIST := $(BUILD)/obj/libcables.sources
$(LIB_LIST): FORCE
	@mkdir -p $(dir $@)
	@echo '$(LIB_SRCS)' | cmp -s - $@ || echo '$(LIB_SRCS)' > $@
FORCE:

$(LIB): $(LIB_OBJS) libcables/libcables.map $(LIB_LIST)
	@mkdir -p $(dir $@)
	$(CC) -shared $(SAN_FLAGS) -o $@ $(LIB_OBJS) $(DEPS_LIBS) -Wl,--version-script=libcables/libcables.map

$(BUILD)/lib/cables/%.o: libcables/link/%.c
	@mkdir -p $(dir $@)
	$(CC) $(OPT) -fPIC -c $< -o $@

# the OpenMP runtime is linked into each program (its data is the program's)
$(BUILD)/lib/cables/gomp.o: openmp/gomp.c libcables/include/cables.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(OPT) -Wall -Wextra -fPIC -Ilibcables/include -c $< -o $@

$(BUILD)/lib/cables/cables_atomics.h: libcables/link/cables_atomics.h
	@mkdir -p $(dir $@)
	cp $< $@

# a GCC plugin cables-cc loads (built for this GCC, without the
# sanitizers: it runs inside the compiler)
GCC_PLUGIN_DIR := $(shell $(CC) -print-file-name=plugin)
$(BUILD)/lib/cables/flush_plugin.so: libcables/link/flush_plugin.cc
	@mkdir -p $(dir $@)
	@test -f $(GCC_PLUGIN_DIR)/include/gcc-plugin.h || { echo "GCC's plugin headers are missing ($(GCC_PLUGIN_DIR)/include): bash scripts/setup.sh installs them" >&2; exit 1; }
	$(CXX) -std=c++17 -O2 -fPIC -shared -fno-rtti -I$(GCC_PLUGIN_DIR)/include $< -o $@

$(BUILD)/lib/cables/openmp/%: openmp/%
	@mkdir -p $(dir $@)
	cp $< $@

$(RUN): tools/cables-run
	@mkdir -p $(dir $@)
	install -m 755 $< $@

$(CC_DRIVER): tools/cables-cc Makefile
	@mkdir -p $(dir $@)
	sed 's|^CABLES_EXTRA=.*|CABLES_EXTRA="$(SAN_FLAGS)"|' $< > $@
	chmod 755 $@

$(BUILD)/progs/%: tests/progs/%.c $(wildcard tests/progs/*.h) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(OPT) -Wall -Ilibcables/include $< -o $@ $(LINK_CABLES)

$(BUILD)/obj/%.o: %.c $(wildcard apps/*.h tests/posix/*.h) tests/progs/rss.h bench/bench_util.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(OPT) -Wall -Wextra -pthread -c $< -o $@

$(BUILD)/native/%: $(BUILD)/obj/%.o
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -pthread $< -o $@ -lm

$(PT_CABLES): $(BUILD)/%: $(BUILD)/obj/%.o $(CC_DRIVER) $(LIB) $(LINK_OBJS)
	@mkdir -p $(dir $@)
	$(CC_DRIVER) -pthread $< -o $@ -lm

.SECONDARY: $(patsubst %.c,$(BUILD)/obj/%.o,$(PT_SRCS))

$(BUILD)/m4/cables/%.c: %.C m4macros/c.m4.cables
	@mkdir -p $(dir $@)
	m4 m4macros/c.m4.cables $< > $@

$(BUILD)/m4/native/%.c: %.C m4macros/c.m4.pthreads
	@mkdir -p $(dir $@)
	m4 m4macros/c.m4.pthreads $< > $@

# the splash2 programs include splash2/args.h (their option parser)
$(M4_CABLES): $(BUILD)/%: $(BUILD)/m4/cables/%.c $(CC_DRIVER) $(LIB) $(LINK_OBJS) splash2/args.h
	@mkdir -p $(dir $@)
	$(CC_DRIVER) -std=gnu11 $(OPT) -Wall -Isplash2 -pthread $< -o $@ -lm

$(M4_NATIVE): $(BUILD)/native/%: $(BUILD)/m4/native/%.c splash2/args.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(OPT) -Wall -Isplash2 -pthread $< -o $@ -lm

$(BUILD)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 $(OPT) -Wall -Wextra -pthread -c $< -o $@

$(CXX_NATIVE): $(BUILD)/native/%: $(BUILD)/obj/%.o
	@mkdir -p $(dir $@)
	$(CXX) $(SAN_FLAGS) -pthread $< -o $@

$(CXX_CABLES): $(BUILD)/%: $(BUILD)/obj/%.o $(CC_DRIVER) $(LIB) $(LINK_OBJS)
	@mkdir -p $(dir $@)
	$(CC_DRIVER) -pthread $< -o $@ -lstdc++ -lm

.SECONDARY: $(patsubst %.cc,$(BUILD)/obj/%.o,$(CXX_SRCS))

$(DRV_CABLES): $(BUILD)/%: %.c $(CC_DRIVER) $(LIB) $(LINK_OBJS) tests/posix/check.h
	@mkdir -p $(dir $@)
	$(CC_DRIVER) -std=gnu11 $(OPT) -Wall -Wextra -pthread $< -o $@

$(DRV_NATIVE): $(BUILD)/native/%: %.c tests/posix/check.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(OPT) $(SAN_FLAGS) -Wall -Wextra -pthread $< -o $@

$(DRVXX_CABLES): $(BUILD)/%: %.cc $(CC_DRIVER) $(LIB) $(LINK_OBJS)
	@mkdir -p $(dir $@)
	$(CC_DRIVER) -std=c++20 $(OPT) -Wall -Wextra -pthread $< -o $@ -lstdc++

$(DRVXX_NATIVE): $(BUILD)/native/%: %.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 $(OPT) $(SAN_FLAGS) -Wall -Wextra -pthread $< -o $@

$(OMP_CABLES): $(BUILD)/%: %.c $(CC_DRIVER) $(LIB) $(LINK_OBJS) tests/posix/check.h
	@mkdir -p $(dir $@)
	$(CC_DRIVER) -std=gnu11 $(OPT) -Wall -Wextra -fopenmp $< -o $@ -lm

$(OMP_NATIVE): $(BUILD)/native/%: %.c tests/posix/check.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(OPT) $(SAN_FLAGS) -Wall -Wextra -fopenmp $< -o $@ -lm

.SECONDARY: $(patsubst %.C,$(BUILD)/m4/cables/%.c,$(M4_SRCS)) $(patsubst %.C,$(BUILD)/m4/native/%.c,$(M4_SRCS))

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(OPT) -Wall -Ilibcables/include $(DEPS_CFLAGS) $< -o $@ $(LINK_CABLES) $(DEPS_LIBS)

# unit tests link the runtime's objects directly (pure parts: diff, page, config, ranges)
UNIT_OBJS := $(BUILD)/libcables/src/diff.o $(BUILD)/libcables/src/page.o $(BUILD)/libcables/src/config.o \
             $(BUILD)/libcables/src/ranges.o
$(UNIT): $(wildcard tests/unit/*.cc) $(UNIT_OBJS) libcables/src/pure.h
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(filter %.cc,$^) $(UNIT_OBJS) -o $@ -lgtest -lgtest_main -lpthread

$(MULTI): $(wildcard tests/multinode/*.cc) $(wildcard tests/multinode/*.h)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(filter %.cc,$^) -o $@ -lgtest -lgtest_main -lpthread

test: all $(UNIT) $(MULTI)
	$(UNIT)
	CABLES_BUILD=$(abspath $(BUILD)) $(MULTI)

# What the default run leaves out for time: the Grid tests at 4 nodes over
# tcp, the tests/posix programs over tcp, HomeMoveRace's writer over tcp
WIDE := Grid/*4nodes_tcp:TwoNodes/Posix.*_tcp:Grid/HomeMoveRace.DestinationKeepsReadingItsOwnWrites/2nodes_tcp
test-wide: all $(MULTI)
	CABLES_TEST_WIDE=1 CABLES_BUILD=$(abspath $(BUILD)) $(MULTI) --gtest_filter='$(WIDE)'

# The same tests with AddressSanitizer and UndefinedBehaviorSanitizer, in
# their own build directory; any report fails the run.
SAN_OPT := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SAN_ENV := CABLES_SANITIZE=1 ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-sanitize:
	$(MAKE) BUILD=build-san OPT="$(SAN_OPT)" all build-san/tests/unit_tests build-san/tests/multinode_tests
	$(SAN_ENV) build-san/tests/unit_tests
	$(SAN_ENV) CABLES_BUILD=$(abspath build-san) build-san/tests/multinode_tests

bench: all $(BENCHES)
	CABLES_BUILD=$(abspath $(BUILD)) bench/run.sh

# SPLASH-2 programs natively and on libcables at 1 and 2 nodes (bench/splash.sh)
bench-splash: all
	CABLES_BUILD=$(abspath $(BUILD)) bench/splash.sh

# OpenMP: construct costs and a stencil, natively and at 1 and 2 nodes (bench/openmp.sh)
bench-openmp: all
	CABLES_BUILD=$(abspath $(BUILD)) bench/openmp.sh

install: $(LIB) $(LINK_OBJS) $(RUN) $(CC_DRIVER)
	install -d $(PREFIX)/bin $(PREFIX)/lib $(PREFIX)/include
	install -m 755 $(LIB) $(PREFIX)/lib/libcables.so
	install -m 644 libcables/include/cables.h $(PREFIX)/include/cables.h
	install -d $(PREFIX)/lib/cables/openmp
	install -m 644 $(BUILD)/lib/cables/head.o $(BUILD)/lib/cables/tail.o $(BUILD)/lib/cables/atomics.o \
	    $(BUILD)/lib/cables/gomp.o libcables/link/cables_atomics.h $(PREFIX)/lib/cables/
	install -m 755 $(BUILD)/lib/cables/flush_plugin.so $(PREFIX)/lib/cables/
	install -m 644 openmp/libgomp.spec $(PREFIX)/lib/cables/openmp/
	install -d $(PREFIX)/share/cables
	install -m 644 m4macros/c.m4.cables m4macros/c.m4.pthreads $(PREFIX)/share/cables/
	sed 's|^CABLES_LIBDIR=.*|CABLES_LIBDIR=$(abspath $(PREFIX))/lib|' tools/cables-run > $(PREFIX)/bin/cables-run
	sed 's|^CABLES_PREFIX=.*|CABLES_PREFIX=$(abspath $(PREFIX))|' tools/cables-cc > $(PREFIX)/bin/cables-cc
	chmod 755 $(PREFIX)/bin/cables-run $(PREFIX)/bin/cables-cc

clean:
	rm -rf $(BUILD) build-san

.PHONY: all test test-wide test-sanitize bench bench-splash bench-openmp install clean FORCE
