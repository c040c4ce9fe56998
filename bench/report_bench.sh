# report_bench.sh: `make bench`'s ./report rows: the report of a synthetic W-rank ring run of
# 2,800 to 100,000 recorded steps (bench/report_input.cc writes the --metrics and --timeline files
# through the trainer's own writers), each built once under /usr/bin/time: seconds (wall, user,
# sys) and peak RSS, with the trace's size and events. No row fails on time; the table says.
#
# Usage (from the repository root, after `make`; run_bench.sh calls it):
#   bash bench/report_bench.sh REPORT_INPUT OUTDIR
# Environment: BENCH_REPORT_STEPS="2800 11000 28000 100000", BENCH_REPORT_RANKS="2 4" (the
# 100,000-step row runs at the first rank count only: at 4 ranks its trace is 2.9 GB, over
# ./report's 1 GiB input limit),
# BENCH_REPORT_KEEP=1 keeps the generated inputs.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

GEN=$1
OUT=$2
STEPS=${BENCH_REPORT_STEPS:-"2800 11000 28000 100000"}
RANKS=${BENCH_REPORT_RANKS:-"2 4"}
FIRST_RANKS=${RANKS%% *}
[[ -x ./report ]] || { echo "report_bench: ./report is missing: run 'make' first" >&2; exit 1; }
[[ -x $GEN ]] || { echo "report_bench: $GEN is missing" >&2; exit 1; }
mkdir -p "$OUT"
TABLE=$OUT/table.txt
{
  echo "./report of a synthetic ring run (bench/report_input.cc); wall/user/sys seconds and peak RSS by /usr/bin/time"
  printf '%-6s %8s %10s %11s %8s %8s %8s %10s %s\n' ranks steps trace_MB events wall_s user_s sys_s peak_MB status
} > "$TABLE"
for w in $RANKS; do
  for s in $STEPS; do
    if (( s > 50000 )) && [[ $w != "$FIRST_RANKS" ]]; then continue; fi
    m=$OUT/w$w-s$s.jsonl t=$OUT/w$w-s$s.trace.json log=$OUT/w$w-s$s.log
    "$GEN" --ranks "$w" --steps "$s" --metrics "$m" --timeline "$t"
    mb=$(( $(stat -c %s "$t") / 1000000 ))
    events=$(grep -c '^{' "$t" || true)
    set +e
    /usr/bin/time -o "$log.time" -f "wall_s=%e user_s=%U sys_s=%S rss_kb=%M" \
      timeout -k 10 900 ./report "$m" "$t" -o "$OUT/w$w-s$s.html" > "$log" 2>&1
    rc=$?
    set -e
    time_line=$(tail -1 "$log.time")
    get() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<< "$time_line"; }
    rss_mb=$(( $(get rss_kb) / 1024 ))
    status=ok
    [[ $rc == 0 ]] || status="FAILED (exit $rc, $log)"
    printf '%-6s %8s %10s %11s %8s %8s %8s %10s %s\n' "$w" "$s" "$mb" "$events" "$(get wall_s)" "$(get user_s)" \
      "$(get sys_s)" "$rss_mb" "$status" >> "$TABLE"
    [[ ${BENCH_REPORT_KEEP:-0} == 1 ]] || rm -f "$m" "$t" "$OUT/w$w-s$s.html"
  done
done
{
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (other processes slow the seconds down; user+sys is the report's own CPU time)"
} >> "$TABLE"
cat "$TABLE"
