#!/bin/bash
# starters.sh: `make bench-starters`: the same 2-rank job (`./train --epochs 1 --threads 1`) started by
# every starter baresgd supports, side by side and interleaved, on this one machine (issue 25's
# closing table). Starters: ./launch local, ./launch over ssh (the sshd test hosts hpc01 and hpc03 of
# tests/test_hosts.sh), ./launch --mpi, srun (Gloo, MUNGE store), srun --mpi=pmix, sbatch --wait with
# srun inside, salloc + ./launch, plain mpirun, torchrun static (--master_addr/--master_port),
# torchrun --standalone, torchrun c10d with --nnodes 2 (two torchruns, one worker each).
#
# Usage (from the repository root, after `make` and `make data`; as root, as the Slurm tests run):
#   make bench-starters                         BENCH_STARTER_ROUNDS (default 3) rounds
#   BENCH_STARTER_ROUNDS=1 bash bench/starters.sh
# Environment: BENCH_STARTER_ROUNDS=N (each round runs every starter once, in the order above),
# BENCH_STARTER_TIMEOUT=S (one run's limit, default 300 s; a run over it is killed and fails),
# BENCH_STARTERS="launch-local srun-gloo ..." (a subset, by the names of the first column),
# BENCH_OUT=DIR (default bench/results/starters-<date>), BENCH_STARTER_TRAIN_ARGS="..." (more ./train
# flags for every starter, e.g. --max-steps 20 for a quick look; the tests use it).
#
# It starts what it needs itself, under a temporary directory: the sshd test hosts
# (tests/test_hosts.sh) and a one-machine Slurm cluster (tests/slurm_cluster.sh: munged, slurmctld,
# slurmd); on exit (trap) it stops them through their pid files and stops any torchrun of its own
# still running through its pid file. Nothing leaves 127.0.0.0/8: Open MPI is pinned to lo (tcp
# BTL), Gloo and the stores bind lo (--network-interface lo, GLOO_SOCKET_IFNAME=lo).
#
# Prints one markdown table: starter | result | epoch train_s median (min-max) over the rounds (the
# slower rank's train_s of BARESGD_TIMING=1's `timing:` lines) | the whole command's wall seconds,
# median | the accuracy of the final `Test set:` line. A starter that fails does not stop the
# bench: its row says "failed (exit N: first error line)" (of its last failed round). Under the
# table: whether every ok run printed the same final `Test set:` line (the runs are bit-identical,
# so they must), and the exact command of each row. Raw output of every run: BENCH_OUT/<round>/<starter>/.
# Exit status: 0 when the table was printed, whatever the starters did; 2 for a bad BENCH_* value;
# 1 when the bench could not start (no ./train, no MNIST, a component that did not start).
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
SRC=$(pwd)

ROUNDS=${BENCH_STARTER_ROUNDS:-3}
RUN_TIMEOUT=${BENCH_STARTER_TIMEOUT:-300}
ALL_STARTERS="launch-local launch-ssh launch-mpi srun-gloo srun-pmix sbatch salloc-launch mpirun"
ALL_STARTERS+=" torchrun-static torchrun-standalone torchrun-c10d"
read -r -a STARTERS <<< "${BENCH_STARTERS:-$ALL_STARTERS}"
OUT=${BENCH_OUT:-bench/results/starters-$(date +%Y%m%d-%H%M%S)}

die() { echo "bench-starters: error: $*" >&2; exit 1; }
usage() { echo "bench-starters: error: $*" >&2; exit 2; }
note() { echo "bench-starters: $*" >&2; }

[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || usage "BENCH_STARTER_ROUNDS: '$ROUNDS' is not a whole number >= 1"
[[ $RUN_TIMEOUT =~ ^[1-9][0-9]*$ ]] || usage "BENCH_STARTER_TIMEOUT: '$RUN_TIMEOUT' is not a whole number of seconds"
for s in "${STARTERS[@]}"; do
  [[ " $ALL_STARTERS " == *" $s "* ]] || usage "BENCH_STARTERS: unknown starter '$s' (known: $ALL_STARTERS)"
done
[[ -x ./train && -x ./launch ]] || die "./train and ./launch are missing: run 'make' first"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [[ -f data/MNIST/raw/$f || -f data/MNIST/raw/$f.gz ]] || die "data/MNIST/raw/$f is missing: run 'make data' first"
done

# Loopback only, for mpirun and its daemons, Gloo and the stores; Open MPI as root as the tests run it.
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_if_base_do_not_resolve=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 GLOO_SOCKET_IFNAME=lo
export BARESGD_TIMING=1  # ./train prints `timing: rank=R startup_s= train_s= test_s= ...` on stderr

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# The components' directory: short (munged's socket path must fit a sockaddr_un), removed on exit.
COMP=$(mktemp -d /tmp/bsgd-starters.XXXXXX)
HOSTS=$COMP/hosts
SLURM=$COMP/slurm
PIDS=$COMP/pids  # the pid of every torchrun this script starts in the background, one a line

# Stops what this script started: its background torchruns (by pid file), the Slurm cluster and
# the sshd hosts (their scripts stop them by their own pid files), then removes COMP.
cleanup() {
  local pid
  if [[ -s $PIDS ]]; then  # only a pid that still names a torchrun (it may have ended long ago)
    while read -r pid; do
      if tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline" | grep -q torchrun; then kill -TERM "$pid" 2>/dev/null || true; fi
    done < "$PIDS"
  fi
  if [[ -d $SLURM ]]; then bash tests/slurm_cluster.sh stop "$SLURM" >&2 || true; fi
  if [[ -d $HOSTS ]]; then bash tests/test_hosts.sh stop "$HOSTS" >&2 || true; fi
  rm -rf "$COMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

needs() { [[ " ${STARTERS[*]} " == *" $1 "* ]]; }  # starter -> 0 when this run includes it

if needs launch-ssh; then
  note "starting the sshd test hosts hpc01 and hpc03 in $HOSTS"
  bash tests/test_hosts.sh start "$HOSTS" >&2 || die "tests/test_hosts.sh start $HOSTS failed"
fi
if needs srun-gloo || needs srun-pmix || needs sbatch || needs salloc-launch; then
  note "starting the one-machine Slurm cluster in $SLURM"
  bash tests/slurm_cluster.sh start "$SLURM" >/dev/null || die "tests/slurm_cluster.sh start $SLURM failed"
fi

# A free TCP port on 127.0.0.1 (for torchrun's store and rendezvous).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

TRAIN="$SRC/train --data-dir $SRC/data --epochs 1 --threads 1${BENCH_STARTER_TRAIN_ARGS:+ $BENCH_STARTER_TRAIN_ARGS}"
GLOO_TRAIN="$TRAIN --network-interface lo"
SLURM_ENV="set -a; . $SLURM/env; set +a;"

# The shell command of starter $1 in round directory $2 (its stdout and stderr go to $2/out, $2/err;
# the two-node torchrun also writes node 1's to $2/out1, $2/err1).
starter_command() {
  local s=$1 d=$2 port
  case $s in
    launch-local) echo "./launch -np 2 --gloo --network-interface lo $TRAIN" ;;
    launch-ssh) echo "./launch -np 2 --gloo -H hpc01:1,hpc03:1 -F $HOSTS/ssh_config --network-interface lo $TRAIN" ;;
    launch-mpi) echo "./launch -np 2 --mpi $TRAIN" ;;
    srun-gloo) echo "$SLURM_ENV srun -n 2 $GLOO_TRAIN" ;;
    srun-pmix) echo "$SLURM_ENV srun --mpi=pmix -n 2 $TRAIN" ;;
    sbatch) echo "$SLURM_ENV sbatch --wait -n 2 -o $d/job.out -e $d/job.err --wrap 'srun -n 2 $GLOO_TRAIN'" ;;
    salloc-launch) echo "$SLURM_ENV salloc -n 2 ./launch --gloo --network-interface lo $TRAIN" ;;
    mpirun) echo "mpirun -np 2 $TRAIN" ;;
    torchrun-static)
      port=$(free_port)
      echo "torchrun --no_python -r 1 -t 1 --log_dir $d/logs --nproc_per_node 2 --master_addr 127.0.0.1" \
        "--master_port $port $GLOO_TRAIN" ;;
    torchrun-standalone)
      echo "torchrun --no_python -r 1 -t 1 --log_dir $d/logs --standalone --nproc_per_node 2 $GLOO_TRAIN" ;;
    torchrun-c10d)
      port=$(free_port)
      local node="torchrun --no_python -r 1 -t 1 --nnodes 2 --nproc_per_node 1 --rdzv_backend c10d"
      node+=" --rdzv_endpoint 127.0.0.1:$port --rdzv_id bench-$$-$(basename "$(dirname "$d")")"
      # Node 1 in the background (its pid in PIDS for the trap), node 0 in the foreground; the
      # command's status is node 0's, or node 1's when node 0 succeeded.
      echo "$node --log_dir $d/logs1 --node_rank 1 $GLOO_TRAIN > $d/out1 2> $d/err1 & n1=\$!; echo \$n1 >> $PIDS;" \
        "$node --log_dir $d/logs0 --node_rank 0 $GLOO_TRAIN; rc=\$?; wait \$n1; rc1=\$?; [ \$rc = 0 ] && rc=\$rc1; exit \$rc" ;;
  esac
}

# Runs starter $1 in round $2: writes $d/cmd, out, err, rc and wall (seconds).
run_starter() {
  local s=$1 round=$2 d cmd t0 t1 rc
  d=$OUT/$round/$s
  mkdir -p "$d"
  cmd=$(starter_command "$s" "$d")
  echo "$cmd" > "$d/cmd"
  t0=$(date +%s.%N)
  rc=0
  timeout -k 10 "$RUN_TIMEOUT" bash -c "$cmd" < /dev/null > "$d/out" 2> "$d/err" || rc=$?
  t1=$(date +%s.%N)
  if [[ $s == sbatch ]]; then  # the job's own output is in the files sbatch -o/-e named
    cat "$d/job.out" >> "$d/out" 2>/dev/null || true
    cat "$d/job.err" >> "$d/err" 2>/dev/null || true
  fi
  if [[ $s == torchrun-c10d ]]; then
    cat "$d/out1" >> "$d/out" 2>/dev/null || true
    cat "$d/err1" >> "$d/err" 2>/dev/null || true
  fi
  echo "$rc" > "$d/rc"
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }' > "$d/wall"
  note "round $round $s: exit $rc, $(cat "$d/wall") s"
}

note "raw output in $OUT; $ROUNDS round(s) of: ${STARTERS[*]}"
for round in $(seq "$ROUNDS"); do
  for s in "${STARTERS[@]}"; do run_starter "$s" "$round"; done
done

# ---- the table -------------------------------------------------------------------------------
python3 - "$OUT" "$ROUNDS" "$RUN_TIMEOUT" "${STARTERS[@]}" <<'PY'
import os, re, statistics, sys

out, rounds, limit, starters = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
TIMING = re.compile(r"timing: rank=(\d+) .*?train_s=([0-9.]+)")
TEST = re.compile(r"Test set: Average loss: [0-9.]+, Accuracy: ([0-9.]+)%")

def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""

# The line that says why: first an "error:" line (baresgd's own, Slurm's, Open MPI's), then any line
# naming a failure (not torchrun's warning that a second agent could not bind the rendezvous port,
# which is how c10d rendezvous works), else the first line.
def first_error(err):
    lines = [l.strip() for l in err.splitlines() if l.strip()]
    pick = next((l for l in lines if re.search(r"error:", l, re.I)), None)
    pick = pick or next((l for l in lines if re.search(r"error|fail|refused|not reachable|cannot", l, re.I)
                         and "Address already in use" not in l), None)
    pick = pick or (lines[0] if lines else "no output on stderr")
    return pick[:240] + ("..." if len(pick) > 240 else "")

def one_run(d):
    rc = int(read(d + "/rc").strip() or "-1")
    so, se = read(d + "/out"), read(d + "/err")
    tests = [m for m in (TEST.search(l) for l in so.splitlines()) if m]
    train = {}
    for m in TIMING.finditer(se):
        train[int(m.group(1))] = float(m.group(2))
    run = {"rc": rc, "wall": float(read(d + "/wall") or "nan"), "cmd": read(d + "/cmd").strip(),
           "train": max(train.values()) if len(train) == 2 else None,
           "line": tests[-1].group(0) if tests else None, "acc": tests[-1].group(1) if tests else None}
    if rc == 124 or rc == 137:
        run["why"] = f"exit {rc}: timed out after {limit} s; {first_error(se)}"
    elif rc != 0:
        run["why"] = f"exit {rc}: {first_error(se)}"
    elif run["line"] is None:
        run["why"] = "exit 0: no 'Test set:' line on stdout"
    elif run["train"] is None:
        run["why"] = f"exit 0: {len(train)} 'timing:' lines on stderr, not 2"
    else:
        run["why"] = None
    return run

def span(values, digits):
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.{digits}f}"
    return f"{med:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"

print(f"| starter | result | epoch train_s median (min-max), {rounds} round(s) | whole command wall s, median | final accuracy |")
print("|---|---|---|---|---|")
lines, commands = {}, {}
for s in starters:
    runs = [one_run(f"{out}/{r}/{s}") for r in range(1, rounds + 1)]
    ok = [r for r in runs if r["why"] is None]
    bad = [r for r in runs if r["why"] is not None]
    commands[s] = runs[-1]["cmd"]
    if not bad:
        result = "ok"
    else:
        why = bad[-1]["why"].replace("|", "\\|")
        result = (f"ok {len(ok)}/{rounds}, " if ok else "") + f"failed ({why})"
    for r in ok:
        lines.setdefault(r["line"], []).append(s)
    accs = sorted({r["acc"] for r in ok})
    print(f"| {s} | {result} | {span([r['train'] for r in ok], 3)} | {span([r['wall'] for r in ok], 1)} "
          f"| {', '.join(a + '%' for a in accs) if accs else '-'} |")
print()
n_ok = sum(len(v) for v in lines.values())
if not lines:
    print("No starter ran to the end: no final 'Test set:' line to compare.")
elif len(lines) == 1:
    line = next(iter(lines))
    print(f"Every ok run ({n_ok} runs of {len(set(lines[line]))} starters) printed the same final line: `{line}`")
else:
    print(f"The ok runs printed {len(lines)} different final lines (bit-identical runs print one):")
    for line, who in lines.items():
        print(f"- `{line}`: {', '.join(sorted(set(who)))}")
print()
print("Commands (from the repository root; train_s and wall are not claims on a shared machine):")
for s in starters:
    print(f"- {s}: `{commands[s]}`")
PY
