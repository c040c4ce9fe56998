# store_load_bench.sh: `make bench`'s rendezvous store rows: W fake ranks (threads of
# build/tests/tool_store_load, which serve ./launch's store in-process on 127.0.0.1) connect,
# authenticate, publish a hello and read everyone's, by one gather each ('P') or by a get per peer
# ('G'); no training. The seconds to the last rank connected and to the last rank holding every
# hello, the requests and the bytes replied, per row; docs/comm.md fits its start-up model to them.
#
# Usage (from the repository root, after `make build/tests/tool_store_load`; run_bench.sh calls it):
#   bash bench/store_load_bench.sh OUTDIR
# Environment: BENCH_STORE_GATHER="64 256 1024 4096", BENCH_STORE_PER_KEY="64 256 1024" (per key
# costs W(W-1) requests: about 6 minutes at 4096, so its largest row is left to the model).
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

OUT=$1
TOOL=build/tests/tool_store_load
[[ -x $TOOL ]] || { echo "store_load_bench: $TOOL is missing: run 'make $TOOL' first" >&2; exit 1; }
mkdir -p "$OUT"
TABLE=$OUT/table.txt
{
  echo "rendezvous store under W fake ranks (tests/tool_store_load.cc); seconds from one start signal; peak RSS of the one process"
  printf '%-8s %-8s %10s %13s %10s %12s %9s %9s %s\n' mode ranks connect_s rendezvous_s requests requests/s reply_MB peak_MB status
} > "$TABLE"
row() {  # row MODE RANKS
  local log=$OUT/$1-$2.log rc line
  set +e
  /usr/bin/time -o "$log.time" -f "rss_kb=%M" timeout -k 10 900 "$TOOL" "$2" "$1" > "$log" 2>&1
  rc=$?
  set -e
  line=$(grep '^store_load:' "$log" || true)
  get() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<< "$line"; }
  local rss_mb=$(( $(sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p' "$log.time" | tail -1) / 1024 ))
  local status=ok
  [[ $rc == 0 && -n $line ]] || status="FAILED (exit $rc, $log)"
  printf '%-8s %-8s %10s %13s %10s %12s %9s %9s %s\n' "$1" "$2" "$(get connect_s)" "$(get rendezvous_s)" \
    "$(get requests)" "$(get requests_per_s)" "$(get reply_MB)" "$rss_mb" "$status" >> "$TABLE"
}
for w in ${BENCH_STORE_GATHER:-64 256 1024 4096}; do row gather "$w"; done
for w in ${BENCH_STORE_PER_KEY:-64 256 1024}; do row per-key "$w"; done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" >> "$TABLE"
cat "$TABLE"
