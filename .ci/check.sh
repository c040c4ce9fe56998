#!/usr/bin/env bash
# .ci/check.sh (make check): the whole test suite, each test once, and every parser's fuzzer:
#   1. test build: the optimized unit_tests binary and tools (make -j2 test-build);
#   2. split: .ci/split_tests.py reads the binary's test list (with each test's file) and
#      .ci/sanitized-tests, and gives every test to exactly one pass;
#   3. optimized: the numeric, fixture, accuracy, memory, cluster and report suites (make test);
#   4. fuzz: every libFuzzer target, SECONDS each, two at a time (.ci/fuzz.sh);
#   5. sanitized: the parsers, store, launcher and fault suites under ASan+UBSan (.ci/sanitize.sh,
#      whose unit_tests is built from those files only).
# Prints each phase's seconds, then per pass the tests run, passed, failed and skipped, and last one
# closing line "check: N passed, N failed, N skipped". Exits non-zero when any phase failed, when a
# pass ran another number of tests than the split gave it, or (under CI=true) when a test skipped
# for a reason not on tests/skip_allowlist.txt (tests/test_main.cc fails the run for it).
#   CHECK_FUZZ_SECONDS=20 (default)   CHECK_SKIP_FUZZ=1 to leave the fuzzers out (a quick local check)
set -uo pipefail
cd "$(dirname "$0")/.."
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_if_base_do_not_resolve=1
OUT=build/check
mkdir -p "$OUT"
status=0
phase() { echo "check: $1 took $(($(date +%s) - $2)) s"; }
fail() { echo "check: $*" >&2; status=1; }

t=$(date +%s)
make -j2 test-build >"$OUT/test-build.log" 2>&1 || { tail -30 "$OUT/test-build.log"; echo "check: test build failed" >&2; exit 1; }
phase "test build" "$t"

build/tests/unit_tests --gtest_list_tests --gtest_output=json:"$OUT/list.json" >/dev/null ||
  { echo "check: cannot list the suite's tests" >&2; exit 1; }
python3 .ci/split_tests.py "$OUT/list.json" .ci/sanitized-tests "$OUT" || exit 1
read -r total want_opt want_san <"$OUT/counts"

# The closing line tests/test_main.cc prints: "N passed, N failed, N skipped".
counts_of() { grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$1" | tail -1; }
# read_pass LOG WANT NAME: sets P F S to the pass's counts and checks it ran WANT tests.
read_pass() {
  local line
  P=0 F=0 S=0
  line=$(counts_of "$1")
  if [ -z "$line" ]; then fail "$3 pass printed no closing line (log: $1)"; return; fi
  read -r P _ F _ S _ <<<"${line//,/}"
  [ $((P + F + S)) -eq "$2" ] || fail "$3 pass ran $((P + F + S)) tests, the split gave it $2"
}

t=$(date +%s)
make test GTEST_ARGS="--gtest_filter=$(cat "$OUT/optimized.filter")" >"$OUT/optimized.log" 2>&1 || fail "optimized pass failed"
grep -E '^\[  FAILED  \] [A-Za-z_0-9/]+\.[A-Za-z_0-9/]+$|^skip refused' "$OUT/optimized.log" | sort -u | sed 's/^/  /'
phase "optimized pass" "$t"
read_pass "$OUT/optimized.log" "$want_opt" optimized
op=$P of=$F os=$S

if [ "${CHECK_SKIP_FUZZ:-}" != 1 ]; then
  t=$(date +%s)
  bash .ci/fuzz.sh "${CHECK_FUZZ_SECONDS:-20}" || fail "a fuzzer crashed"
  phase fuzz "$t"
fi

t=$(date +%s)
SAN_TEST_FILES="$(cat "$OUT/sanitized.files")" GTEST_EXTRA="--gtest_filter=$(cat "$OUT/sanitized.filter")" \
  bash .ci/sanitize.sh || fail "sanitized pass failed"
phase "sanitized pass" "$t"
read_pass build-san/sanitize.log "$want_san" sanitized
sp=$P sf=$F ss=$S

echo "check: optimized build: $((op + of + os)) run, $op passed, $of failed, $os skipped"
echo "check: sanitized build: $((sp + sf + ss)) run, $sp passed, $sf failed, $ss skipped"
[ $((op + of + os + sp + sf + ss)) -eq "$total" ] || fail "$total tests in the suite, $((op + of + os + sp + sf + ss)) ran"
# Again at the end, where a CI log's tail shows them: each failed test, and its first failure lines.
failed_tests() { grep -hE '^\[  FAILED  \] [A-Za-z_0-9/]+\.[A-Za-z_0-9/]+( \(|$)' "$@" 2>/dev/null | awk '{print $4}' | sort -u; }
for name in $(failed_tests "$OUT/optimized.log" build-san/sanitize.log); do
  echo "check: FAILED $name"
  for log in "$OUT/optimized.log" build-san/sanitize.log; do
    [ -f "$log" ] && awk -v t="[ RUN      ] $name" '$0 == t {on = 1; n = 0; next}
      on && /^\[ +(OK|FAILED) +\]/ {exit} on && /: Failure$/ {k = 3} on && k > 0 && n < 12 {print "check:   " substr($0, 1, 300); k--; n++}' "$log"
  done
done
echo "check: $((op + sp)) passed, $((of + sf)) failed, $((os + ss)) skipped"
[ $((of + sf)) -eq 0 ] || status=1
exit $status
