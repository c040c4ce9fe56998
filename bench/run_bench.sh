# run_bench.sh: `make bench` driver: baresgd vs PyTorch (manual allreduce and DDP) training on loopback and
# over the namespace hosts' link, kernel GFLOP/s, allreduce comm; raw logs + table/JSON via report.py.
#
# Usage (from the repository root, after `make` and `make data`):
#   bash bench/run_bench.sh            full run, BENCH_REPS (default 3) repetitions, ~6-15 min
#   BENCH_QUICK=1 bash bench/run_bench.sh   smoke run: 1 repetition, fewer sizes, ~3 min
#   BENCH_BUILD_ONLY=1 bash bench/run_bench.sh   only build the two bench programs (exit 1 if one
#                                           does not compile; the suite runs this, tests/test_bench_build.cc)
# Environment: BENCH_REPS=N, BENCH_QUICK=1, BENCH_WORLDS="1 2 4", BENCH_OUT=dir (default
# bench/results/run-<date>), BENCH_SKIP="torch kernels comm train netns report store startup" (any subset),
# BENCH_NETNS_DELAYS="0 1" (the namespace link's added delay in whole ms, one set of netns rows each).
# Writes BENCH_OUT/{machine.txt,train/*.log,kernels*.log,comm/*.log}, then bench/report.py prints the
# table and writes BENCH_OUT/report.json and bench/results/latest.json (+ latest.txt).
# Nothing leaves 127.0.0.0/8: Open MPI is pinned to lo (tcp BTL), Gloo/torch.distributed bind lo; the
# 2-rank netns rows run inside the namespaces of tests/netns_hosts.sh (private addresses, no route out;
# Open MPI, Gloo and torch.distributed there bind the tap bsgd0).
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

PY=/usr/bin/python3
QUICK=${BENCH_QUICK:-0}
BUILD_ONLY=${BENCH_BUILD_ONLY:-0}
if [[ $QUICK == 1 ]]; then REPS=${BENCH_REPS:-1}; else REPS=${BENCH_REPS:-3}; fi
WORLDS=${BENCH_WORLDS:-"1 2 4"}
SKIP=" ${BENCH_SKIP:-} "
NETNS_DELAYS=${BENCH_NETNS_DELAYS:-"0 1"}
OUT=${BENCH_OUT:-bench/results/run-$(date +%Y%m%d-%H%M%S)}
TIME_FMT="BENCH_TIME rss_kb=%M wall_s=%e user_s=%U sys_s=%S"
STEP_TIMEOUT=900  # seconds; a hung run is killed and reported, the bench goes on

# Loopback only (docs/testing.md), for mpirun and its daemons, Gloo and torch.distributed.
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_if_base_do_not_resolve=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export MASTER_ADDR=127.0.0.1 GLOO_SOCKET_IFNAME=lo
export BARESGD_TIMING=1  # ./train prints `timing: rank=R startup_s= train_s= test_s=` on stderr

die() { echo "bench: error: $*" >&2; exit 1; }
skip() { [[ $SKIP == *" $1 "* ]]; }
note() { echo "bench: $*" >&2; }

[[ -x ./train && -x ./launch ]] || die "./train and ./launch are missing: run 'make' first"
[[ -f build/libbaresgd.a ]] || die "build/libbaresgd.a is missing: run 'make' first"
if [[ $BUILD_ONLY == 1 ]]; then SKIP=" "; fi
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [[ $BUILD_ONLY == 1 || $SKIP == *" train "* || -f data/MNIST/raw/$f ]] || die "data/MNIST/raw/$f is missing: run 'make data' first"
done
for d in $NETNS_DELAYS; do
  [[ $d =~ ^[0-9]+$ ]] || die "BENCH_NETNS_DELAYS: '$d' is not a whole number of milliseconds"
done
[[ $BUILD_ONLY == 1 ]] || skip torch || "$PY" -c 'import torch, torchvision' 2>/dev/null ||
  die "$PY cannot import torch and torchvision (apt-get install python3-torch python3-torchvision)"

mkdir -p "$OUT/train" "$OUT/comm" "$OUT/tmp"
OUT=$(cd "$OUT" && pwd)
TP=$OUT/tmp/time  # the ranks' /usr/bin/time files: $TP.<rank>
note "raw logs in $OUT"

# ---- build the two bench programs against the project's library (same libraries as the Makefile) ----
HAVE_GLOO=0; HAVE_MPI=0
ar t build/libbaresgd.a | grep -qx backend_gloo.o && HAVE_GLOO=1
ar t build/libbaresgd.a | grep -qx backend_mpi.o && HAVE_MPI=1
BCXX=(g++ -O3 -march=x86-64-v3 -std=c++17 -Wall -Wextra -Wno-unused-parameter -pthread -I.)
BLIBS=(-lopenblas -lz -pthread)
if [[ $HAVE_GLOO == 1 ]]; then BCXX+=(-DBARESGD_HAVE_GLOO=1); BLIBS+=(-lgloo); fi
# The srun rendezvous's MUNGE handshake (comm/store_munge.cc) when the library was built with it.
if nm -u build/libbaresgd.a 2>/dev/null | grep -w munge_ctx_create >/dev/null; then BCXX+=(-DBARESGD_HAVE_MUNGE=1); BLIBS+=(-lmunge); fi
if [[ $HAVE_MPI == 1 ]]; then
  # shellcheck disable=SC2207
  BCXX+=(-DBARESGD_HAVE_MPI=1 -DOMPI_SKIP_MPICXX=1 $(mpicxx --showme:compile)); BLIBS+=($(mpicxx --showme:link))
fi
stale=$(find kernels src comm -name '*.h' -newer build/libbaresgd.a 2>/dev/null | head -3 | tr '\n' ' ')
[[ -z $stale ]] || die "build/libbaresgd.a is older than $stale(others are editing?): run 'make' first (make bench does)"
mkdir -p build/bench
build_bench() {  # build_bench NAME: bench/NAME.cc -> build/bench/NAME; a failure skips that section only
  if "${BCXX[@]}" "bench/$1.cc" build/libbaresgd.a -o "build/bench/$1" "${BLIBS[@]}" > "$OUT/build-$1.log" 2>&1; then
    return 0
  fi
  note "cannot build bench/$1.cc; its section is skipped. Compiler output ($OUT/build-$1.log):"
  tail -20 "$OUT/build-$1.log" >&2
  return 1
}
build_bench kernel_bench || SKIP+=" kernels "
build_bench comm_bench || SKIP+=" comm "
build_bench report_input || SKIP+=" report "
if [[ $BUILD_ONLY == 1 ]]; then
  [[ $SKIP == " " ]] || die "a bench program does not compile (logs in $OUT)"
  note "built build/bench/kernel_bench, build/bench/comm_bench and build/bench/report_input"
  exit 0
fi

# ---- machine header ----
core_of() { OPENBLAS_VERBOSE=2 "$@" ./train --help 2>&1 >/dev/null | sed -n 's/^Core: //p' | head -1; }
{
  echo "date=$(date -Is)"
  echo "cores=$(nproc)"
  echo "cpu_model=$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
  echo "openblas_package=$(dpkg-query -W -f='${Version}' libopenblas0-pthread 2>/dev/null || echo unknown)"
  echo "openblas_core=$(core_of env)"
  if [[ -n ${OPENBLAS_CORETYPE+x} ]]; then
    echo "openblas_coretype_env=$OPENBLAS_CORETYPE"
    echo "openblas_core_unset=$(core_of env -u OPENBLAS_CORETYPE)"
  else
    echo "openblas_coretype_env=(unset)"
  fi
  echo "openblas_num_threads_env=${OPENBLAS_NUM_THREADS:-(unset)}"
  echo "torch=$("$PY" -c 'import torch, torchvision; print(torch.__version__, "torchvision", torchvision.__version__)' 2>/dev/null || echo 'not importable')"
  echo "gxx=$(g++ -dumpfullversion)"
  echo "open_mpi=$(mpirun --version 2>/dev/null | sed -n '1s/.*) //p')"
  echo "gloo_package=$(dpkg-query -W -f='${Version}' libgloo0 2>/dev/null || echo unknown)"
  echo "kernel=$(uname -r)"
  echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "reps=$REPS"
  echo "quick=$QUICK"
  echo "worlds=$WORLDS"
  echo "have_gloo=$HAVE_GLOO"
  echo "have_mpi=$HAVE_MPI"
} > "$OUT/machine.txt"
cat "$OUT/machine.txt" >&2

# ---- waiting for a quiet machine (it is shared): before each measurement, up to QUIET_MAX seconds
# (and QUIET_TOTAL over the whole bench) until other processes use under QUIET_BUSY% of one core ----
QUIET_MAX=${BENCH_QUIET_MAX:-$([[ $QUICK == 1 ]] && echo 10 || echo 30)}
QUIET_TOTAL=${BENCH_QUIET_TOTAL:-$([[ $QUICK == 1 ]] && echo 40 || echo 120)}
QUIET_BUSY=${BENCH_QUIET_BUSY:-30}
QUIET_SPENT=0
QUIET_NOTE=""
busy_pct_half_second() {  # busy CPU over 0.5 s, in % of one core
  local a b ta ba tb bb
  read -r -a a < /proc/stat; sleep 0.5; read -r -a b < /proc/stat
  ta=$((a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7] + a[8])); ba=$((ta - a[4] - a[5]))
  tb=$((b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + b[7] + b[8])); bb=$((tb - b[4] - b[5]))
  echo $(( (bb - ba) * 100 * $(nproc) / (tb - ta > 0 ? tb - ta : 1) ))
}
wait_quiet() {
  local waited=0 busy
  while :; do
    busy=$(busy_pct_half_second)
    (( busy <= QUIET_BUSY || waited >= 2 * QUIET_MAX || QUIET_SPENT >= 2 * QUIET_TOTAL )) && break
    waited=$((waited + 1)); QUIET_SPENT=$((QUIET_SPENT + 1))  # in half seconds
  done
  QUIET_NOTE="#quiet waited_s=$((waited / 2)) busy_pct_of_one_core=$busy"
  (( busy <= QUIET_BUSY )) || note "machine still busy (${busy}% of one core used by others) after waiting $((waited / 2)) s; measuring anyway"
}

# ---- logging helpers: every output line gets the wall clock (EPOCHREALTIME) it arrived at ----
stamp() {  # stamp PREFIX: copy stdin to stdout, each line as "<epoch seconds> PREFIX<line>"
  local line
  while IFS= read -r line || [[ -n $line ]]; do printf '%s %s%s\n' "$EPOCHREALTIME" "$1" "$line"; done
}

# Per-rank wrapper (./train, kernel_bench, comm_bench): sh -c "$RANK_WRAP" PREFIX CMD ARGS... runs CMD with BARESGD_TIMING=1
# (./launch does not pass the caller's BARESGD_* variables on) under /usr/bin/time, which writes
# PREFIX.<rank> (a file: through mpirun --tag-output, GNU time's unbuffered stderr would arrive as
# one tagged line per character).
RANK_WRAP='f=$0; exec env BARESGD_TIMING=1 /usr/bin/time -o "$f.${BARESGD_RANK:-${OMPI_COMM_WORLD_RANK:-0}}" -f "'"$TIME_FMT"'" "$@"'

# The machine's aggregate CPU counters (/proc/stat "cpu" line, USER_HZ ticks): report.py subtracts
# the ranks' own CPU time to show how much other processes ran during a measurement.
cpu_ticks() { head -1 /proc/stat; }

# finish_log LOG T0 RC TIMEPREFIX CPU0: bracket LOG.part* with #t0/#t1/#rc and the CPU counters,
# append the ranks' time files.
finish_log() {
  local log=$1 t0=$2 rc=$3 tp=$4 cpu0=$5 t1 f r line
  t1=$EPOCHREALTIME
  {
    echo "#t0 $t0"
    echo "$QUIET_NOTE"
    echo "#cpu0 $cpu0"
    echo "#cpu1 $(cpu_ticks)"
    cat "$log".part*
    if [[ -n $tp ]]; then
      for f in "$tp".*; do
        [[ -f $f ]] || continue
        r=${f##*.}
        while IFS= read -r line; do echo "$t1 [$r]<stderr>:$line"; done < "$f"
        rm -f "$f"
      done
    fi
    echo "#t1 $t1"
    echo "#rc $rc"
  } > "$log"
  rm -f "$log".part*
}

# run_logged LOG TIMEPREFIX CMD...: one command (the whole job); TIMEPREFIX names the time files
# its ranks write through RANK_WRAP ("" for none).
run_logged() {
  local log=$1 tp=$2 t0 rc cpu0
  shift 2
  wait_quiet
  cpu0=$(cpu_ticks)
  t0=$EPOCHREALTIME
  set +e
  timeout -k 10 "$STEP_TIMEOUT" "$@" 2>&1 | stamp "" > "$log.part"
  rc=${PIPESTATUS[0]}
  set -e
  finish_log "$log" "$t0" "$rc" "$tp" "$cpu0"
  [[ $rc == 0 ]] || note "FAILED (exit $rc): $* -- see $log"
}

# run_torch LOG W [ARGS...]: W torch_mnist.py ranks started here (FileStore rendezvous), each under
# /usr/bin/time; lines tagged [r]; ARGS go to every rank.
run_torch() { torch_ranks local "$@"; }
# run_torch_netns LOG 2 [ARGS...]: the same, rank 0 in nsA and rank 1 in nsB of the namespace hosts
# (tests/netns_hosts.sh exec / exec-b), rendezvous at rank 0's tcp://10.213.0.1:PORT over the link,
# gloo bound to the tap (GLOO_SOCKET_IFNAME=bsgd0).
TORCH_PORT=29400
run_torch_netns() { torch_ranks netns "$@"; }

# torch_ranks local|netns LOG W [ARGS...]: the body of run_torch and run_torch_netns.
torch_ranks() {
  local place=$1 log=$2 w=$3 t0 r rc=0 dir cpu0
  shift 3
  local pids=() rendezvous=() where=()
  if [[ $place == netns ]]; then
    [[ $w == 2 && -n $NETNS ]] || die "run_torch_netns: 2 ranks on the namespace hosts only (W $w, hosts '${NETNS:-none}')"
  fi
  dir=$(mktemp -d "$OUT/tmp/torch.XXXXXX")
  if [[ $place == netns ]]; then
    TORCH_PORT=$((TORCH_PORT + 1))  # a fresh port per run: no wait for the last run's TIME_WAIT
    rendezvous=(--init-method "tcp://10.213.0.1:$TORCH_PORT")
  else
    rendezvous=(--init-file "$dir/store")
  fi
  wait_quiet
  cpu0=$(cpu_ticks)
  t0=$EPOCHREALTIME
  set +e
  for ((r = 0; r < w; r++)); do
    where=()  # netns: the prefix that puts rank 0 on nsA, rank 1 on nsB
    [[ $place == local ]] || where=(bash tests/netns_hosts.sh "$([[ $r == 0 ]] && echo exec || echo exec-b)" \
      "$NETNS" env GLOO_SOCKET_IFNAME=bsgd0)
    ( BENCH_T0=$t0 timeout -k 10 "$STEP_TIMEOUT" /usr/bin/time -o "$dir/time.$r" -f "$TIME_FMT" \
        "${where[@]}" "$PY" bench/torch_mnist.py --rank "$r" --world "$w" "${rendezvous[@]}" --epochs 1 "$@" 2>&1 \
        | stamp "[$r]<stdout>:" > "$log.part$r"
      exit "${PIPESTATUS[0]}" ) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  set -e
  finish_log "$log" "$t0" "$rc" "$dir/time" "$cpu0"
  rm -rf "$dir"
  [[ $rc == 0 ]] || note "FAILED (exit $rc): torch_mnist.py world $w $* ($place) -- see $log"
}

# measure run_logged|run_torch LOG ARGS...: one measurement; when other processes took more than
# NOISY_PCT% of the machine during it (report.py --noise), keep that log as LOG.noisy<k> and measure
# again: at most RETRIES_EACH times per measurement, RETRIES_LEFT in all, only while the bench is
# younger than BUDGET_S seconds, and not when the attempt took over RETRY_MAX_S seconds (a noisy
# 2-thread PyTorch epoch can take minutes). If every attempt was noisy, the least noisy one is LOG.
NOISY_PCT=${BENCH_NOISY_PCT:-10}
RETRY_MAX_S=${BENCH_RETRY_MAX_S:-40}
RETRIES_EACH=${BENCH_RETRIES_EACH:-2}
RETRIES_LEFT=${BENCH_RETRIES:-$([[ $QUICK == 1 ]] && echo 3 || echo 8)}
BUDGET_S=${BENCH_BUDGET_S:-$([[ $QUICK == 1 ]] && echo 150 || echo 600)}
measure() {
  local how=$1 log=$2 k=0 pct best_pct best_k=0 started
  shift 2
  while :; do
    started=$SECONDS
    "$how" "$log" "$@"
    pct=$("$PY" bench/report.py --noise "$log" 2>/dev/null || echo -1)
    (( k == 0 || pct < best_pct )) && { best_pct=$pct; best_k=$((k + 1)); }
    (( pct > NOISY_PCT && k < RETRIES_EACH && RETRIES_LEFT > 0 && SECONDS < BUDGET_S &&
       SECONDS - started <= RETRY_MAX_S )) || break
    k=$((k + 1)); RETRIES_LEFT=$((RETRIES_LEFT - 1))
    mv "$log" "$log.noisy$k"
    note "others used ${pct}% of the machine during $(basename "$log"): measuring again ($RETRIES_LEFT retries left)"
  done
  # Attempt i (1-based) is LOG.noisy<i> for i <= k, LOG itself for i = k+1.
  if (( best_k <= k )); then
    mv "$log" "$log.noisy$((k + 1))" && mv "$log.noisy$best_k" "$log"
    pct=$best_pct
  fi
  (( pct <= NOISY_PCT )) || note "others used ${pct}% of the machine during $(basename "$log"); keeping the least noisy attempt"
}

# ---- the namespace test hosts (tests/netns_hosts.sh) for the 2-rank rows over an emulated link ----
NETNS=""     # the hosts' DIR while they are up
NETNS_DIR=$OUT/tmp/netns
IN_NETNS=()  # "${IN_NETNS[@]}" CMD...: CMD in nsA's namespace (where ./launch runs for -H nsA:1,nsB:1) with DIR/env

# netns_up MS: the hosts made afresh with the link delayed MS ms each way (netns_hosts.sh down, then
# up [--delay MS]); 1 and one note when they cannot be made (not root, no tool_tap_link): those rows are left out.
netns_up() {
  local delay=()
  [[ $1 == 0 ]] || delay=(--delay "$1")
  netns_down
  trap netns_down EXIT
  if ! bash tests/netns_hosts.sh up "$NETNS_DIR" "${delay[@]}" > "$OUT/netns-up-d$1.log" 2>&1; then
    note "no namespace hosts (link delay $1 ms), so no rows over that link: $(tail -1 "$OUT/netns-up-d$1.log")"
    return 1
  fi
  NETNS=$NETNS_DIR
  # shellcheck disable=SC2207  # DIR/env is one NAME=VALUE per line, no spaces
  IN_NETNS=(bash tests/netns_hosts.sh exec "$NETNS" env $(cat "$NETNS/env"))
}

# netns_down: the hosts gone (their processes stopped by pid file, the namespaces deleted); idempotent.
netns_down() {
  NETNS=""
  IN_NETNS=()
  [[ -d $NETNS_DIR ]] || return 0
  bash tests/netns_hosts.sh down "$NETNS_DIR" >/dev/null 2>&1 || note "tests/netns_hosts.sh down $NETNS_DIR failed"
  rm -rf "$NETNS_DIR"
}

# netns_rows MS REP: baresgd gloo, baresgd mpi and PyTorch DDP, 2 ranks, one per namespace host.
netns_rows() {
  local d=$1 rep=$2 tag="netns_d$1"
  if [[ $HAVE_GLOO == 1 ]]; then
    note "rep $rep/$REPS: baresgd 2 ranks, gloo, one per namespace host, link delay $d ms"
    measure run_logged "$OUT/train/baresgd-gloo_$tag-w2-r$rep.log" "$TP" "${IN_NETNS[@]}" \
      ./launch -np 2 --gloo -H nsA:1,nsB:1 sh -c "$RANK_WRAP" "$TP" ./train --epochs 1
  fi
  if [[ $HAVE_MPI == 1 ]]; then
    note "rep $rep/$REPS: baresgd 2 ranks, mpi, one per namespace host, link delay $d ms"
    measure run_logged "$OUT/train/baresgd-mpi_$tag-w2-r$rep.log" "$TP" "${IN_NETNS[@]}" \
      ./launch -np 2 --mpi -H nsA:1,nsB:1 sh -c "$RANK_WRAP" "$TP" ./train --epochs 1
  fi
  if ! skip torch; then
    note "rep $rep/$REPS: pytorch DDP 2 ranks, one per namespace host, link delay $d ms"
    measure run_torch_netns "$OUT/train/pytorch-ddp_$tag-w2-r$rep.log" 2 --ddp
  fi
}

# ---- 1. training rows: one epoch of real MNIST, seed hyper-parameters ----
if ! skip train; then
  for ((rep = 1; rep <= REPS; rep++)); do
    for w in $WORLDS; do
      if [[ $w == 1 ]]; then
        note "rep $rep/$REPS: baresgd 1 rank"
        measure run_logged "$OUT/train/baresgd-single-w1-r$rep.log" "$TP" sh -c "$RANK_WRAP" "$TP" ./train --epochs 1
        # The parallel efficiency's reference: one rank on one core (report.py's "par. eff.").
        note "rep $rep/$REPS: baresgd 1 rank, 1 thread"
        measure run_logged "$OUT/train/baresgd-single_1thread-w1-r$rep.log" "$TP" sh -c "$RANK_WRAP" "$TP" \
          ./train --epochs 1 --threads 1
        if [[ $rep == 1 && -n ${OPENBLAS_CORETYPE+x} ]]; then
          note "rep $rep/$REPS: baresgd 1 rank with OPENBLAS_CORETYPE unset (was '$OPENBLAS_CORETYPE')"
          measure run_logged "$OUT/train/baresgd-single_coretype_unset-w1-r$rep.log" "$TP" \
            env -u OPENBLAS_CORETYPE sh -c "$RANK_WRAP" "$TP" ./train --epochs 1
        fi
      else
        if [[ $HAVE_GLOO == 1 ]]; then
          note "rep $rep/$REPS: baresgd $w ranks, gloo"
          measure run_logged "$OUT/train/baresgd-gloo-w$w-r$rep.log" "$TP" \
            ./launch -np "$w" --gloo sh -c "$RANK_WRAP" "$TP" ./train --epochs 1
          # The same epoch with the averaging overlapped with backward: what --overlap on buys.
          note "rep $rep/$REPS: baresgd $w ranks, gloo, --overlap on"
          measure run_logged "$OUT/train/baresgd-gloo_overlap-w$w-r$rep.log" "$TP" \
            ./launch -np "$w" --gloo sh -c "$RANK_WRAP" "$TP" ./train --epochs 1 --overlap on
          if [[ $w == 2 ]]; then
            # The timeline's recording cost: the same epoch with --timeline (every step recorded).
            note "rep $rep/$REPS: baresgd $w ranks, gloo, --timeline"
            measure run_logged "$OUT/train/baresgd-gloo_timeline-w$w-r$rep.log" "$TP" \
              ./launch -np "$w" --gloo sh -c "$RANK_WRAP" "$TP" ./train --epochs 1 --timeline "$OUT/tmp/timeline.json"
          fi
        fi
        if [[ $HAVE_MPI == 1 ]]; then
          note "rep $rep/$REPS: baresgd $w ranks, mpi"
          measure run_logged "$OUT/train/baresgd-mpi-w$w-r$rep.log" "$TP" \
            ./launch -np "$w" --mpi sh -c "$RANK_WRAP" "$TP" ./train --epochs 1
          note "rep $rep/$REPS: baresgd $w ranks, mpi, --overlap on"
          measure run_logged "$OUT/train/baresgd-mpi_overlap-w$w-r$rep.log" "$TP" \
            ./launch -np "$w" --mpi sh -c "$RANK_WRAP" "$TP" ./train --epochs 1 --overlap on
          if [[ $rep == 1 && $w -gt $(nproc) && -z ${OMPI_MCA_mpi_yield_when_idle+x} ]]; then
            # Diagnostic: more ranks than cores, but mpirun is told there are W slots, so Open MPI
            # busy-polls; this one run shows what yielding when idle changes.
            note "rep $rep/$REPS: baresgd $w ranks, mpi, OMPI_MCA_mpi_yield_when_idle=1 (diagnostic)"
            measure run_logged "$OUT/train/baresgd-mpi_yield-w$w-r$rep.log" "$TP" env OMPI_MCA_mpi_yield_when_idle=1 \
              ./launch -np "$w" --mpi sh -c "$RANK_WRAP" "$TP" ./train --epochs 1
          fi
        fi
      fi
      if ! skip torch; then
        if [[ $w == 1 ]]; then
          note "rep $rep/$REPS: pytorch 1 rank"
          measure run_torch "$OUT/train/pytorch-single-w1-r$rep.log" 1
          # PyTorch's parallel efficiency reference (the Horovod example itself calls torch.set_num_threads(1)).
          note "rep $rep/$REPS: pytorch 1 rank, 1 thread"
          measure run_torch "$OUT/train/pytorch-single_1thread-w1-r$rep.log" 1 --threads 1
        else
          note "rep $rep/$REPS: pytorch $w ranks, manual fused allreduce"
          measure run_torch "$OUT/train/pytorch-gloo-w$w-r$rep.log" "$w"
          note "rep $rep/$REPS: pytorch $w ranks, DDP"
          measure run_torch "$OUT/train/pytorch-ddp-w$w-r$rep.log" "$w" --ddp
        fi
      fi
    done
  done
fi

# ---- 1b. training rows over the namespace hosts' link: 2 ranks, one per host, for each link delay ----
if ! skip train && ! skip netns && [[ " $WORLDS " == *" 2 "* ]]; then
  for d in $NETNS_DELAYS; do
    netns_up "$d" || continue
    for ((rep = 1; rep <= REPS; rep++)); do netns_rows "$d" "$rep"; done
  done
  netns_down
  trap - EXIT
fi

# ---- 2. kernel rows: one thread, batch 64, against a 2048^3 sgemm in the same run ----
if ! skip kernels; then
  KMIN=0.3; [[ $QUICK == 1 ]] && KMIN=0.1
  note "kernels (1 thread)"
  measure run_logged "$OUT/kernels.log" "$TP" sh -c "$RANK_WRAP" "$TP" build/bench/kernel_bench --batch 64 --min-time "$KMIN" --gemm-size 2048 --threads 1
  if [[ -n ${OPENBLAS_CORETYPE+x} ]]; then
    note "kernels with OPENBLAS_CORETYPE unset"
    measure run_logged "$OUT/kernels_coretype_unset.log" "$TP" env -u OPENBLAS_CORETYPE sh -c "$RANK_WRAP" "$TP" \
      build/bench/kernel_bench --batch 64 --min-time "$KMIN" --gemm-size 2048 --threads 1
  fi
fi

# ---- 3. comm rows: allreduce through the comm layer and the raw library call ----
if ! skip comm; then
  if [[ $QUICK == 1 ]]; then
    SIZES=1024,87360,1048576,16777216; CMIN=0.1
  else
    SIZES=1024,4096,16384,65536,87360,262144,1048576,4194304,16777216,67108864; CMIN=0.25
  fi
  for w in $WORLDS; do
    [[ $w -ge 2 ]] || continue
    if [[ $HAVE_GLOO == 1 ]]; then
      note "comm: gloo, $w ranks"
      rdv=$(mktemp -d "$OUT/tmp/rdv.XXXXXX")
      measure run_logged "$OUT/comm/gloo-w$w.log" "$TP" ./launch -np "$w" --gloo sh -c "$RANK_WRAP" "$TP" \
        build/bench/comm_bench --rendezvous-dir "$rdv" --sizes "$SIZES" --min-time "$CMIN"
      rm -rf "$rdv"
    fi
    if [[ $HAVE_MPI == 1 ]]; then
      note "comm: mpi, $w ranks"
      measure run_logged "$OUT/comm/mpi-w$w.log" "$TP" ./launch -np "$w" --mpi sh -c "$RANK_WRAP" "$TP" \
        build/bench/comm_bench --sizes "$SIZES" --min-time "$CMIN"
      if [[ $w -gt $(nproc) && -z ${OMPI_MCA_mpi_yield_when_idle+x} ]]; then
        note "comm: mpi, $w ranks, OMPI_MCA_mpi_yield_when_idle=1 (diagnostic)"
        measure run_logged "$OUT/comm/mpi_yield-w$w.log" "$TP" env OMPI_MCA_mpi_yield_when_idle=1 \
          ./launch -np "$w" --mpi sh -c "$RANK_WRAP" "$TP" build/bench/comm_bench --sizes "$SIZES" --min-time "$CMIN"
      fi
    fi
  done
fi

# ---- 3b. every --allreduce algorithm at the gradient's size (87,360 bytes), 2 and 4 ranks ----
if ! skip comm; then
  mkdir -p "$OUT/comm_algorithms"
  for w in 2 4; do
    if [[ $HAVE_GLOO == 1 ]]; then
      note "comm algorithms: gloo, $w ranks"
      measure run_logged "$OUT/comm_algorithms/gloo-w$w.log" "$TP" ./launch -np "$w" --gloo sh -c "$RANK_WRAP" "$TP" \
        build/bench/comm_bench --algorithms all --min-time "$CMIN"
    fi
    if [[ $HAVE_MPI == 1 ]]; then
      note "comm algorithms: mpi, $w ranks"
      measure run_logged "$OUT/comm_algorithms/mpi-w$w.log" "$TP" ./launch -np "$w" --mpi sh -c "$RANK_WRAP" "$TP" \
        build/bench/comm_bench --algorithms all --min-time "$CMIN"
    fi
  done
fi

echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/machine.txt"
rmdir "$OUT/tmp" 2>/dev/null || true

# ---- 3c. ./report of a 2,800- to 100,000-step timeline (bench/report_bench.sh) ----
if ! skip report; then
  note "./report rows (bench/report_bench.sh)"
  wait_quiet
  bash bench/report_bench.sh build/bench/report_input "$OUT/report" > /dev/null || note "FAILED: bench/report_bench.sh"
fi

# ---- 3d. the rendezvous store under 64 to 4,096 fake ranks (bench/store_load_bench.sh) ----
if ! skip store; then
  note "rendezvous store rows (bench/store_load_bench.sh)"
  wait_quiet
  bash bench/store_load_bench.sh "$OUT/store" > /dev/null || note "FAILED: bench/store_load_bench.sh"
fi

# ---- 3e. a real start-up of 2 to 256 ranks on this machine, Gloo and MPI (bench/startup_bench.sh) ----
if ! skip startup; then
  note "start-up rows (bench/startup_bench.sh)"
  wait_quiet
  bash bench/startup_bench.sh "$OUT/startup" > /dev/null || note "FAILED: bench/startup_bench.sh"
fi

# ---- 4. the table and JSON ----
"$PY" bench/report.py "$OUT" --json bench/results/latest.json --text bench/results/latest.txt
for extra in report store startup; do
  if [[ -f $OUT/$extra/table.txt ]]; then
    echo
    cat "$OUT/$extra/table.txt"
    { echo; cat "$OUT/$extra/table.txt"; } >> bench/results/latest.txt
  fi
done
