#!/usr/bin/env bash
# .ci/sanitize.sh: the whole GoogleTest suite under AddressSanitizer + LeakSanitizer +
# UndefinedBehaviorSanitizer (make SANITIZE=1 -> build-san/, -fsanitize=address,undefined,
# UB fatal), minus the long accuracy runs, so it fits in about 15 minutes on 2 cores.
#
#   .ci/sanitize.sh            build and run; exit 0 only if every test passed and no sanitized
#                              process (test binary, ./train, ./launch and its agents, tools,
#                              local, ssh and mpirun ranks) reported anything
#   GTEST_EXTRA=--gtest_filter=Faults.* .ci/sanitize.sh     a subset instead
#
# Excluded (each trains to an accuracy target, minutes even unsanitized):
#   TrainEndToEnd.TenEpochsReach98, TwoHosts.GlooFourRanksOnTwoHostsTrainOneEpoch,
#   TwoHosts.MpiFourRanksOnTwoHostsTrainOneEpoch, NetnsHosts.GlooFourRanksOverTheLinkEqualALoopbackRun,
#   NetnsHosts.MpiFourRanksOverTheLinkEqualALoopbackRun (the same epoch over the namespace hosts' link),
#   and three that train several full epochs to compare whole runs, whose sanitized code paths
#   shorter siblings in the pass cover: LaunchElasticGrow.ATrainerGrowsToTwoRanksSeeingEverySampleOnce
#   (4 epochs; the growth's launcher side is LaunchElasticGrow's other tests, a resume at another
#   world size LaunchElastic's), LaunchRestartsRemote.TwoKillNinesOverTwoHostsInAThreeEpochRunEndBitIdentical
#   (LaunchRestartsRemote.KillNineOfARemoteRankRestartsAndResumesBitIdentical stays) and
#   SlurmLaunchSteps.ReadmeSbatchScriptTrainsThroughJobSteps (the other SlurmLaunchSteps tests run
#   job steps): 134 s of the sanitized suite's 1145 s in the CI of 2026-12-05.
# and one that measures the optimized build's float arithmetic, not memory safety:
#   TorchReplay.FirstEpochPrintedLinesEqualTorchs counts how many of the first epoch's printed
#   losses equal torch's digit for digit; -O1 without vectorization sums in another order, so the
#   drift starts earlier (10 of 95 equal lines at W = 1 sanitized, 16 optimized). The same test's
#   siblings (20 steps within float rounding, the test pass bit-equal) stay in.
# and two that run no sanitized code: BenchPrograms.CompileAgainstTheLibrary compiles bench/*.cc
#   against the optimized build/libbaresgd.a (which a sanitize-only run has not built), and
#   InstallMinimalImage.* builds and installs the optimized binaries into a debootstrap root (a
#   sanitized binary needs libasan, which the minimal image lacks): about 3 minutes of the pass.
# and the memory-bound tests, MemoryBounds.*: they run ./train under an RLIMIT_AS of 320 MiB to
#   2 GiB, where AddressSanitizer cannot reserve its shadow memory (terabytes of address space), so
#   a sanitized ./train would not start; what they prove is the optimized binary's peak RSS.
#
# Sanitizer options are compiled into every sanitized binary (build-san/san_defaults.o, linked
# through LDFLAGS, which the Makefile appends to), not only exported: ranks started over ssh
# (the test hosts) or by mpirun on a "remote" host do not inherit this shell's environment.
#   - every report goes to build-san/sanitizer-logs/{asan,ubsan}.<pid> (log_path), so reports of
#     ranks whose stderr no test reads are caught too; the script prints them all at the end;
#   - leak checking is on (detect_leaks=1; LeakSanitizer works here, as root in this container);
#   - leaks inside third-party libraries are suppressed, and only those: Open MPI (and what it
#     pulls in) leaks what MPI_Init allocates, much of it in MCA components it dlclose()s before
#     exit; Debian's libgloo leaks getaddrinfo()'s list when tcp::CreateDevice cannot bind; and
#     the sanitizer runtime itself: a thread that starts while a process exits leaks glibc's
#     pthread_getattr_np cpuset inside ASan's GetThreadStackTopAndBottom (GCC 12 / glibc 2.36). A
#     leak is suppressed only if its allocation stack passes through one of those libraries;
#     fast_unwind_on_malloc=0 (the DWARF unwinder) makes stacks continue through those
#     frame-pointer-less libraries to a frame that names them (the default stops at
#     "<unknown module>").
# Logs: build-san/make.log, build-san/sanitize.log (the suite's output).
set -uo pipefail
cd "$(dirname "$0")/.."
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_if_base_do_not_resolve=1

ROOT=$PWD
LOGDIR=$ROOT/build-san/sanitizer-logs
LOG=$ROOT/build-san/sanitize.log
EXCLUDE='TrainEndToEnd.TenEpochsReach98:TwoHosts.GlooFourRanksOnTwoHostsTrainOneEpoch:TwoHosts.MpiFourRanksOnTwoHostsTrainOneEpoch:NetnsHosts.GlooFourRanksOverTheLinkEqualALoopbackRun:NetnsHosts.MpiFourRanksOverTheLinkEqualALoopbackRun:TorchReplay.FirstEpochPrintedLinesEqualTorchs:BenchPrograms.CompileAgainstTheLibrary:InstallMinimalImage.*:MemoryBounds.*:LaunchElasticGrow.ATrainerGrowsToTwoRanksSeeingEverySampleOnce:LaunchRestartsRemote.TwoKillNinesOverTwoHostsInAThreeEpochRunEndBitIdentical:SlurmLaunchSteps.ReadmeSbatchScriptTrainsThroughJobSteps'
FILTER=${GTEST_EXTRA:---gtest_filter=-$EXCLUDE}
mkdir -p build-san

ASAN_DEFAULTS="detect_leaks=1:fast_unwind_on_malloc=0:halt_on_error=1:abort_on_error=0:strict_string_checks=1:check_initialization_order=1:log_path=$LOGDIR/asan"
UBSAN_DEFAULTS="print_stacktrace=1:halt_on_error=1:log_path=$LOGDIR/ubsan"
cat >build-san/san_defaults.cc <<EOF
// Generated by .ci/sanitize.sh: sanitizer defaults for every sanitized baresgd binary.
extern "C" const char* __asan_default_options() { return "$ASAN_DEFAULTS"; }
extern "C" const char* __ubsan_default_options() { return "$UBSAN_DEFAULTS"; }
extern "C" const char* __lsan_default_options() { return "print_suppressions=0"; }
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libmpi.so\n"
         "leak:libopen-pal.so\n"
         "leak:libopen-rte.so\n"
         "leak:libevent\n"
         "leak:libhwloc\n"
         "leak:libpmix\n"
         "leak:gloo::transport::tcp::CreateDeviceAttr\n"
         "leak:__sanitizer::GetThreadStackTopAndBottom\n";
}
EOF
DEFAULTS_O=$ROOT/build-san/san_defaults.o
g++ -O1 -c build-san/san_defaults.cc -o "$DEFAULTS_O" || exit 1
export LDFLAGS="$DEFAULTS_O"

t0=$(date +%s)
echo "sanitize.sh: building (make -j2 SANITIZE=1, defaults from $DEFAULTS_O) ..."
tools=$(ls tests/tool_*.cc 2>/dev/null | sed 's|^tests/\(.*\)\.cc$|build-san/tests/\1|')
# Relink so the defaults object is in every binary (make does not track LDFLAGS).
# shellcheck disable=SC2086
rm -f build-san/train build-san/launch build-san/tests/unit_tests $tools
# shellcheck disable=SC2086
if ! make -j2 SANITIZE=1 all build-san/tests/unit_tests $tools >build-san/make.log 2>&1; then
  tail -40 build-san/make.log
  echo "sanitize.sh: build failed (build-san/make.log)" >&2
  exit 1
fi
for b in build-san/train build-san/launch build-san/tests/unit_tests; do
  grep -q __lsan_default_suppressions <(nm "$b") || { echo "sanitize.sh: $b lacks the defaults" >&2; exit 1; }
done
t1=$(date +%s)
echo "sanitize.sh: built in $((t1 - t0)) s; running the suite ($FILTER) ..."

rm -rf "$LOGDIR" && mkdir -p "$LOGDIR"
# The suite's own deadlines bound every child; this bounds the whole run.
timeout 3600 make -j2 SANITIZE=1 test GTEST_ARGS="$FILTER" >"$LOG" 2>&1
rc=$?
t2=$(date +%s)

echo "sanitize.sh: suite finished in $((t2 - t1)) s with status $rc (log: $LOG)"
grep -E '^\[  (PASSED|FAILED) +\] [0-9]+ tests?|^\[==========\] [0-9]+ tests? from .* ran' "$LOG" | sed 's/^/  /'
grep -E '^\[  FAILED  \] [A-Za-z_0-9]+\.[A-Za-z_0-9]+$' "$LOG" | sort -u | sed 's/^/  /'

reports=$(find "$LOGDIR" -type f -size +0 | sort)
if [ -n "$reports" ]; then
  echo "sanitize.sh: $(echo "$reports" | wc -l) sanitizer report(s):"
  for f in $reports; do
    echo "---- $f"
    # The headline and the first frames in our code.
    grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f" | sed 's/^==[0-9]*==//'
    grep -E '#[0-9]+ .* (src|comm|kernels|launcher|tests)/[a-z_]+\.(cc|h|inc)' "$f" | head -6
    grep -m1 '^SUMMARY' "$f"
  done
else
  echo "sanitize.sh: no sanitizer reports"
fi

if [ "$rc" -ne 0 ] || [ -n "$reports" ]; then exit 1; fi
echo "sanitize.sh: clean"
