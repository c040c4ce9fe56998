#!/usr/bin/env bash
# .ci/fuzz.sh [SECONDS]: builds every libFuzzer target (make -j2 fuzz -> build-fuzz/fuzz_*, each
# library object compiled once) and runs each for SECONDS (default 30), two at a time (one per
# core: libFuzzer is single-threaded), printing one summary line per target, in name order:
#   fuzz_<name>: ok|CRASH  execs=N  exec/s=N  cov=N  ft=N  corpus=N  crashes=N  [artifact]
# Exits non-zero when any target crashed (a sanitizer report, a broken invariant, an uncaught
# exception, a leak, an out-of-memory or a timeout); the reproducer is kept in
# build-fuzz/artifacts/<name>/ and the full log in build-fuzz/logs/<name>.log.
#
# Corpora grow in build-fuzz/corpus/<name>/ across runs; tests/fuzz/seeds/<name>/ (if present)
# is read as seeds and tests/fuzz/fuzz_<name>.dict (if present) is the dictionary. Environment:
#   FUZZ_TARGETS="idx hosts"   run only these (names without the fuzz_ prefix)
#   BARESGD_FUZZ_SKIP_KNOWN=1  let targets steer around bugs already reported (see each target's
#                              header comment), so the rest of the parser is still fuzzed
#   FUZZ_ARGS="..."            extra libFuzzer flags
#   FUZZ_JOBS=N                targets run at once (default 2)
# Reproduce a crash: build-fuzz/fuzz_<name> build-fuzz/artifacts/<name>/crash-...
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-30}
case "$SECONDS_EACH" in '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;; esac

make -s -j2 fuzz || { echo "fuzz.sh: make fuzz failed" >&2; exit 1; }

targets=${FUZZ_TARGETS:-$(ls tests/fuzz/fuzz_*.cc | sed 's|tests/fuzz/fuzz_||; s|\.cc$||')}
JOBS=${FUZZ_JOBS:-2}

# Runs target $1 for SECONDS_EACH and writes its summary line(s) to build-fuzz/logs/$1.summary;
# exits 1 when it crashed.
fuzz_one() {
  local t=$1 bin=build-fuzz/fuzz_$1 corpus=build-fuzz/corpus/$1 art=build-fuzz/artifacts/$1
  local log=build-fuzz/logs/$1.log summary=build-fuzz/logs/$1.summary
  local seeds=() dict=() before after crashes execs rate cov ft ncorpus rc newest why
  mkdir -p "$corpus" "$art" build-fuzz/logs
  rm -f "$summary"
  [ -d "tests/fuzz/seeds/$t" ] && seeds=("tests/fuzz/seeds/$t")
  [ -f "tests/fuzz/fuzz_$t.dict" ] && dict=("-dict=tests/fuzz/fuzz_$t.dict")
  before=$(ls "$art" | wc -l)
  # -timeout: one input may take at most 25 s; -rss_limit_mb/-malloc_limit_mb: 2 GB (the
  # default) makes a runaway allocation a reported crash instead of swapping the machine.
  # shellcheck disable=SC2086
  "$bin" -max_total_time="$SECONDS_EACH" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$art/" "${dict[@]}" ${FUZZ_ARGS:-} "$corpus" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  after=$(ls "$art" | wc -l)
  crashes=$((after - before))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | awk '{print $2}')
  ncorpus=$(ls "$corpus" | wc -l)
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    newest=$(ls -t "$art" | head -1)
    why=$(grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|fuzz invariant violated|terminate called|threw:' "$log" | sed 's/^==[0-9]*==//')
    {
      printf 'fuzz_%s: CRASH  execs=%s  exec/s=%s  cov=%s  ft=%s  corpus=%s  crashes=%s  artifact=%s\n' \
        "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$ncorpus" "$((crashes > 0 ? crashes : 1))" "$art/$newest"
      printf '    %s\n' "${why:-see $log}"
    } >"$summary"
    return 1
  fi
  printf 'fuzz_%s: ok  execs=%s  exec/s=%s  cov=%s  ft=%s  corpus=%s  crashes=0\n' \
    "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$ncorpus" >"$summary"
}

failed=0
running=0
for t in $targets; do
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
for t in $targets; do cat "build-fuzz/logs/$t.summary"; done
# Targets that write temp files keep them in /dev/shm/bsgd-fuzz-*-<pid>; remove them.
rm -rf /dev/shm/bsgd-fuzz-* 2>/dev/null
exit $failed
