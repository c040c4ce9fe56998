# startup_bench.sh: `make bench`'s start-up rows: a real job of W ranks, all on this machine
# (oversubscribed past its cores), `./launch -np W --gloo|--mpi ./train --max-steps 1 --batch-size 8`:
# the seconds from ./launch's start to its exit (start-up, one training step, the test set skipped
# by --max-steps, shutdown) and whether every rank took its step. Gloo ranks each bind their own
# loopback address (comm/loopback_spread.h); Open MPI is pinned to lo.
#
# Usage (from the repository root, after `make`; run_bench.sh calls it):
#   bash bench/startup_bench.sh OUTDIR
# Environment: BENCH_STARTUP_GLOO="2 8 32 64 128 256", BENCH_STARTUP_MPI="2 8 32 64 128 256",
# BENCH_STARTUP_TIMEOUT=900 (seconds a row may take; --start-timeout is that too).
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

OUT=$1
[[ -x ./train && -x ./launch ]] || { echo "startup_bench: ./train and ./launch are missing: run 'make' first" >&2; exit 1; }
[[ -f data/MNIST/raw/train-images-idx3-ubyte ]] || { echo "startup_bench: data/MNIST is missing: run 'make data' first" >&2; exit 1; }
mkdir -p "$OUT"
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_if_base_do_not_resolve=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
LIMIT=${BENCH_STARTUP_TIMEOUT:-900}
TABLE=$OUT/table.txt
{
  echo "real start-up: ./launch -np W --BACKEND ./train --max-steps 1 --batch-size 8, every rank on this machine ($(nproc) cores)"
  printf '%-8s %-6s %9s %7s %s\n' backend ranks seconds steps status
} > "$TABLE"
row() {  # row BACKEND RANKS
  local log=$OUT/$1-$2.log rc start end steps status
  start=$(date +%s.%N)
  set +e
  timeout -k 10 "$LIMIT" ./launch -np "$2" "--$1" ./train --max-steps 1 --batch-size 8 --log-interval 1 \
    --start-timeout "$LIMIT" > "$log" 2>&1
  rc=$?
  set -e
  end=$(date +%s.%N)
  steps=$(grep -c '^\[[0-9]*\]<stdout>:Train Epoch: 1 \[' "$log" || true)
  status=ok
  [[ $rc == 0 && $steps == "$2" ]] || status="FAILED (exit $rc, $steps of $2 ranks stepped, $log)"
  printf '%-8s %-6s %9.2f %7s %s\n' "$1" "$2" "$(echo "$end - $start" | bc)" "$steps" "$status" >> "$TABLE"
}
for w in ${BENCH_STARTUP_GLOO-2 8 32 64 128 256}; do row gloo "$w"; done
for w in ${BENCH_STARTUP_MPI-2 8 32 64 128 256}; do row mpi "$w"; done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" >> "$TABLE"
cat "$TABLE"
