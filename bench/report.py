# report.py: turns one bench run's raw logs (bench/run_bench.sh) into the printed table and JSON (run with /usr/bin/python3).
#
#   /usr/bin/python3 bench/report.py RUN_DIR [--json FILE] [--text FILE]
# RUN_DIR holds machine.txt, train/*.log, kernels*.log and comm/*.log. Every log line is
# "<epoch seconds> <output line>", bracketed by "#t0 <s>", "#t1 <s>" and "#rc <exit status>".
# The table goes to stdout (and --text); RUN_DIR/report.json and --json get the same data with
# every repetition. See bench/README.md for what each column means.
import argparse
import glob
import json
import math
import os
import re
import statistics
import sys

TRAIN_SAMPLES = 60000
BATCH = 64

TAG = re.compile(r"^\[(?:\d+,)?(\d+)\]<(?:stdout|stderr)>:")
TRAIN_LINE = re.compile(r"Train Epoch: (\d+) \[(\d+)/(\d+) \((\d+)%\)\]\s+Loss: ([0-9.naninf]+)")
TEST_LINE = re.compile(r"Test set: Average loss: ([0-9.]+), Accuracy: ([0-9.]+)%")
KV = re.compile(r"(\w+)=(\"[^\"]*\"|\S+)")


def kv(text):
    out = {}
    for k, v in KV.findall(text):
        v = v.strip('"')
        try:
            out[k] = float(v) if re.fullmatch(r"-?[0-9.]+(e[-+]?\d+)?", v) else v
        except ValueError:
            out[k] = v
    return out


def read_log(path):
    """-> dict(t0, t1, rc, lines=[(ts, rank or None, text)])."""
    log = {"t0": None, "t1": None, "rc": None, "lines": [], "path": path, "cpu0": None, "cpu1": None}
    with open(path, errors="replace") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            if raw.startswith("#t0 "):
                log["t0"] = float(raw[4:])
            elif raw.startswith("#t1 "):
                log["t1"] = float(raw[4:])
            elif raw.startswith("#rc "):
                log["rc"] = int(raw[4:])
            elif raw.startswith("#quiet "):
                log["quiet"] = kv(raw[7:])
            elif raw.startswith("#cpu0 ") or raw.startswith("#cpu1 "):
                # "cpu user nice system idle iowait irq softirq steal ..." in USER_HZ ticks
                f = raw.split()[2:]
                ticks = [int(x) for x in f[:8]]
                busy = sum(ticks) - ticks[3] - ticks[4]
                log[raw[1:5]] = busy / float(os.sysconf("SC_CLK_TCK"))
            else:
                ts, _, text = raw.partition(" ")
                try:
                    ts = float(ts)
                except ValueError:
                    continue
                m = TAG.match(text)
                rank = int(m.group(1)) if m else None
                if m:
                    text = text[m.end():]
                log["lines"].append((ts, rank, text))
    return log


def others_cpu(log):
    """(CPU seconds, % of the machine) that processes other than the ranks used during a log's
    command: the /proc/stat busy delta minus the ranks' own user+sys (their BENCH_TIME lines)."""
    own = [kv(t) for _, _, t in log["lines"] if t.startswith("BENCH_TIME")]
    if log["cpu0"] is None or log["cpu1"] is None or not own:
        return None, None
    secs = max(0.0, log["cpu1"] - log["cpu0"] - sum(o.get("user_s", 0) + o.get("sys_s", 0) for o in own))
    whole = (log["t1"] - log["t0"]) if log["t0"] and log["t1"] else None
    return secs, (100.0 * secs / (whole * (os.cpu_count() or 1)) if whole else None)


def median(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(xs) if xs else None


# ---------------------------------------------------------------- training

def parse_train(path, world):
    log = read_log(path)
    ranks = {r: {"first": None, "last": None, "timing": None, "time": None} for r in range(world)}
    accuracy = test_loss = None
    for ts, rank, text in log["lines"]:
        r = 0 if rank is None else rank
        if r not in ranks:
            continue
        info = ranks[r]
        m = TRAIN_LINE.search(text)
        if m:
            batch_idx = int(m.group(2)) // BATCH
            if info["first"] is None:
                info["first"] = (ts, batch_idx)
            info["last"] = (ts, batch_idx)
            continue
        m = TEST_LINE.search(text)
        if m:
            test_loss, accuracy = float(m.group(1)), float(m.group(2))
            continue
        if text.startswith("timing:"):
            t = kv(text)
            if rank is None and "rank" in t:  # untagged (single process): trust the line's own rank
                r = int(t["rank"])
                if r not in ranks:
                    continue
            ranks[r]["timing"] = t
        elif text.startswith("BENCH_TIME"):
            info["time"] = kv(text)

    per_rank_samples = math.ceil(TRAIN_SAMPLES / world)
    batches = math.ceil(per_rank_samples / BATCH)
    run = {"log": os.path.relpath(path), "rc": log["rc"], "ok": log["rc"] == 0,
           "whole_s": (log["t1"] - log["t0"]) if log["t0"] and log["t1"] else None,
           "accuracy": accuracy, "test_loss": test_loss, "ranks": []}
    for r in range(world):
        info = ranks[r]
        train_s, source = None, None
        if info["timing"] and "train_s" in info["timing"]:
            train_s, source = float(info["timing"]["train_s"]), "timing"
        elif info["first"] and info["last"] and info["last"][1] > info["first"][1]:
            # Extrapolate the logged steps (every 10th) to the whole epoch; excludes start-up.
            per_step = (info["last"][0] - info["first"][0]) / (info["last"][1] - info["first"][1])
            train_s, source = per_step * batches, "log-estimate"
        startup = None
        if info["first"] and log["t0"] and train_s:
            # Command start -> the first training step begins (the first log line follows it).
            startup = info["first"][0] - log["t0"] - train_s / batches * (info["first"][1] + 1)
        run["ranks"].append({
            "rank": r,
            "train_s": train_s, "train_s_source": source,
            "startup_s": startup,
            "own_startup_s": (info["timing"] or {}).get("startup_s"),
            "test_s": (info["timing"] or {}).get("test_s"),
            "threads": (info["timing"] or {}).get("threads"),  # the rank's compute threads
            "rss_mib": (info["time"]["rss_kb"] / 1024.0) if info["time"] and "rss_kb" in info["time"] else None,
            "cpu_s": (info["time"]["user_s"] + info["time"]["sys_s"]) if info["time"] and "user_s" in info["time"] else None,
        })
    # CPU seconds that other processes (not the ranks) used on the machine during this command;
    # includes the launcher, mpirun and the bench's own line stamping (small).
    run["other_cpu_s"], run["other_cpu_pct"] = others_cpu(log)
    run["quiet_wait"] = log.get("quiet")
    run["train_s"] = run["ranks"][0]["train_s"]
    run["train_s_source"] = run["ranks"][0]["train_s_source"]
    if run["ok"] and (run["train_s"] is None or accuracy is None):
        run["ok"] = False
        run["problem"] = "no training timing or no test line in the log"
    return run


LOG_NAME = re.compile(r"^(baresgd|pytorch)-(\w+)-w(\d+)-r(\d+)\.log$")
# The variant part of a log name's transport (before any _netns_d<MS>), per program.
VARIANT_LABEL = {"single": "single process", "single_1thread": "single process, 1 thread",
                 "single_coretype_unset": "single, OPENBLAS_CORETYPE unset",
                 "gloo": "gloo", "mpi": "mpi", "mpi_yield": "mpi, yield_when_idle=1",
                 "gloo_timeline": "gloo, --timeline",
                 "gloo_overlap": "gloo, --overlap on", "mpi_overlap": "mpi, --overlap on"}
TORCH_VARIANT_LABEL = {"gloo": "manual allreduce (gloo)", "ddp": "DDP (gloo)"}
TRANSPORT_LABEL = VARIANT_LABEL  # comm rows: gloo, mpi, mpi_yield
NETNS = re.compile(r"^(\w+?)_netns(?:_d(\d+))?$")  # gloo_netns_d1; gloo_netns (older runs): no delay


def split_transport(transport, world):
    """-> (variant, network label, link delay in ms or None) of a log name's transport part:
    'gloo_netns_d1' -> ('gloo', 'netns d=1 ms', 1), 'gloo_netns_d0' -> ('gloo', 'netns d=0', 0),
    'gloo' at W 2 -> ('gloo', 'loopback', None)."""
    m = NETNS.match(transport)
    if m:
        delay = int(m.group(2) or 0)
        return m.group(1), "netns d=0" if delay == 0 else "netns d={} ms".format(delay), delay
    return transport, ("none" if world == 1 else "loopback"), None


def variant_label(program, variant, network):
    label = (TORCH_VARIANT_LABEL.get(variant) if program == "pytorch" else None) or VARIANT_LABEL.get(variant, variant)
    return label + (", 1 rank per host" if network.startswith("netns") else "")


def machine_cores(machine):
    try:
        return max(1, int(machine.get("cores", "")))
    except ValueError:
        return os.cpu_count() or 1


def threads_per_rank(row, cores, machine):
    """Compute threads in each rank of a row, as each rank's timing line says (threads=N, both
    programs). Logs older than that field: PyTorch's rule (1 with --threads 1 else max(1, 2 // W)),
    baresgd's thread policy (src/thread_policy.cc: 1 with --threads 1, else OPENBLAS_NUM_THREADS
    when set, else cores / ranks on the rank's host, one per host in the netns rows)."""
    if row["variant"] == "single_1thread":
        return 1
    seen = [k.get("threads") for r in row["runs"] if r["ok"] for k in r["ranks"]]
    seen = [int(t) for t in seen if t]
    if seen:
        return max(seen)
    if row["program"] == "pytorch":
        return max(1, 2 // row["world"])
    env = machine.get("openblas_num_threads_env", "")
    if re.fullmatch(r"[1-9][0-9]*", env):
        return min(int(env), cores)
    per_host = 1 if row["network"].startswith("netns") else row["world"]
    return max(1, cores // per_host)


def add_parallel_efficiency(rows, machine):
    """par. eff. of every row: T(1 rank, 1 thread, same program, this run) / (cores_used x T(row)),
    cores_used = min(machine cores, W x threads per rank); 100% = the row's cores cost nothing beyond
    their share of the one-core epoch. The netns rows' two hosts share this machine's cores."""
    cores = machine_cores(machine)
    ref = {r["program"]: r for r in rows if r["variant"] == "single_1thread" and r.get("train_s")}
    for row in rows:
        row["cores_used"] = min(cores, row["world"] * threads_per_rank(row, cores, machine))
        one = ref.get(row["program"])
        if one and row.get("train_s"):
            row["parallel_efficiency_pct"] = 100.0 * one["train_s"] / (row["cores_used"] * row["train_s"])
            row["parallel_efficiency_reference_s"] = one["train_s"]


def add_torch_ratios(rows):
    """PyTorch / baresgd, per baresgd row, against PyTorch at the same W over the same network:
    its manual-allreduce (or single-process) row, else its DDP row (the netns rows have DDP only)."""
    peers = {}
    for r in rows:
        if r["program"] == "pytorch" and r["variant"] in ("single", "gloo", "ddp") and r.get("train_s"):
            key = (r["world"], r["network"])
            if key not in peers or peers[key]["variant"] == "ddp":
                peers[key] = r
    for row in rows:
        t = peers.get((row["world"], row["network"]))
        if row["program"] != "baresgd" or not t or not row.get("train_s"):
            continue
        row["ratio_torch_over_baresgd"] = {
            "torch_transport": t["transport"],
            "train_s": t["train_s"] / row["train_s"],
            "whole_s": t["whole_s"] / row["whole_s"] if row.get("whole_s") and t.get("whole_s") else None,
            "rss_mib_max": (max(x for x in t["rss_mib"] if x) / max(x for x in row["rss_mib"] if x))
            if all(row["rss_mib"]) and all(t["rss_mib"]) else None,
        }


def training_rows(run_dir, machine):
    groups = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "train", "*.log"))):
        m = LOG_NAME.match(os.path.basename(path))
        if not m:
            continue
        program, transport, world, rep = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        run = parse_train(path, world)
        run["rep"] = rep
        groups.setdefault((program, transport, world), []).append(run)

    rows = []
    for (program, transport, world), runs in groups.items():
        good = [r for r in runs if r["ok"]]
        variant, network, delay = split_transport(transport, world)
        row = {"program": program, "transport": transport, "variant": variant,
               "label": variant_label(program, variant, network), "network": network,
               "link_delay_ms": delay, "world": world, "reps": len(runs), "reps_ok": len(good), "runs": runs}
        if good:
            row["train_s"] = median([r["train_s"] for r in good])
            row["train_s_source"] = "/".join(sorted({r["train_s_source"] for r in good}))
            row["whole_s"] = median([r["whole_s"] for r in good])
            row["samples_per_s"] = TRAIN_SAMPLES / row["train_s"] if row["train_s"] else None
            row["accuracy"] = median([r["accuracy"] for r in good])
            row["other_cpu_pct"] = median([r.get("other_cpu_pct") for r in good])
            row["rss_mib"] = [median([r["ranks"][k]["rss_mib"] for r in good]) for k in range(world)]
            row["startup_s"] = [median([r["ranks"][k]["startup_s"] for r in good]) for k in range(world)]
            row["own_startup_s"] = [median([r["ranks"][k]["own_startup_s"] for r in good]) for k in range(world)]
        rows.append(row)

    add_torch_ratios(rows)
    # --timeline's recording cost: its epoch against the plain gloo epoch at the same W.
    plain = {r["world"]: r for r in rows if r["program"] == "baresgd" and r["transport"] == "gloo" and r.get("train_s")}
    for row in rows:
        p = plain.get(row["world"])
        if row["transport"] == "gloo_timeline" and p and row.get("train_s"):
            row["timeline_overhead_pct"] = 100.0 * (row["train_s"] / p["train_s"] - 1)
    add_parallel_efficiency(rows, machine)
    order = {"single": 0, "single_coretype_unset": 1, "single_1thread": 1, "gloo": 2, "gloo_overlap": 2.2,
             "gloo_timeline": 2.5, "mpi": 3, "mpi_overlap": 3.2, "mpi_yield": 4, "ddp": 5}
    rows.sort(key=lambda r: (r["world"], r["link_delay_ms"] is not None, r["link_delay_ms"] or 0,
                             r["program"] != "baresgd", order.get(r["variant"], 9)))
    return rows


# ---------------------------------------------------------------- kernels and comm

def kernel_rows(run_dir):
    out = {}
    for name in ("kernels", "kernels_coretype_unset"):
        path = os.path.join(run_dir, name + ".log")
        if not os.path.exists(path):
            continue
        log = read_log(path)
        blas, rows = None, []
        for _, _, text in log["lines"]:
            if text.startswith("blas:"):
                blas = kv(text[5:])
            elif text.startswith("kernel:"):
                rows.append(kv(text[7:]))
        peak = next((r["gflops"] for r in rows if str(r.get("name", "")).startswith("sgemm")), None)
        for r in rows:
            r["pct_of_sgemm"] = 100.0 * r["gflops"] / peak if peak else None
        secs, pct = others_cpu(log)
        out[name] = {"blas": blas, "rows": rows, "rc": log["rc"], "sgemm_gflops": peak,
                     "other_cpu_s": secs, "other_cpu_pct": pct}
    return out


def comm_rows(run_dir):
    rows, failures, load = [], [], {}
    for path in sorted(glob.glob(os.path.join(run_dir, "comm", "*.log"))):
        log = read_log(path)
        variant = os.path.basename(path)[:-4].rsplit("-w", 1)[0]  # gloo, mpi, mpi_yield
        load[os.path.basename(path)[:-4]] = others_cpu(log)[1]
        if log["rc"] != 0:
            failures.append({"log": os.path.relpath(path), "rc": log["rc"],
                             "tail": [t for _, _, t in log["lines"][-5:]]})
        for _, _, text in log["lines"]:
            if text.startswith("comm:"):
                row = kv(text[5:])
                row["backend"] = TRANSPORT_LABEL.get(variant, variant)
                rows.append(row)
    # Pair the comm-layer and raw rows.
    paired = {}
    for r in rows:
        key = (int(r["world"]), r["backend"], int(r["bytes"]))
        paired.setdefault(key, {"world": key[0], "backend": key[1], "bytes": key[2],
                                "floats": int(r["floats"])})[r["layer"]] = {
            "lat_us": r["lat_us"], "best_us": r.get("best_us"), "algbw_GBps": r["algbw_GBps"], "busbw_GBps": r["busbw_GBps"],
            "iters": int(r["iters"])}
    out = []
    for key in sorted(paired):
        p = paired[key]
        if "comm" in p and "raw" in p and p["raw"]["lat_us"] > 0:
            p["layer_over_raw"] = p["comm"]["lat_us"] / p["raw"]["lat_us"]
        out.append(p)
    return out, failures, load


def comm_algorithm_rows(run_dir):
    """Every --allreduce algorithm at the gradient's size (bench/comm_bench.cc --algorithms)."""
    rows, failures = [], []
    for path in sorted(glob.glob(os.path.join(run_dir, "comm_algorithms", "*.log"))):
        log = read_log(path)
        if log["rc"] != 0:
            failures.append({"log": os.path.relpath(path), "rc": log["rc"],
                             "tail": [t for _, _, t in log["lines"][-5:]]})
        for _, _, text in log["lines"]:
            if text.startswith("comm_algorithm:"):
                rows.append(kv(text[len("comm_algorithm:"):]))
    return rows, failures


# ---------------------------------------------------------------- printing

def fmt(x, spec="{:.2f}", none="-"):
    return none if x is None else spec.format(x)


def table(headers, rows, align=None):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(headers)]
    align = align or ["<"] + [">"] * (len(headers) - 1)
    line = lambda cells: "  ".join("{:{}{}}".format(str(c), a, w) for c, a, w in zip(cells, align, widths))
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def human_bytes(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            v = n / div
            return ("{:.0f} " if v == int(v) else "{:.1f} ").format(v) + unit
    return "{} B".format(n)


def render(report):
    m = report["machine"]
    out = []
    out.append("baresgd benchmark  {}  ({} repetition(s), median{})".format(
        m.get("date", "?"), m.get("reps", "?"), ", BENCH_QUICK" if m.get("quick") == "1" else ""))
    out.append("machine: {} cores, {}; kernel {}".format(m.get("cores"), m.get("cpu_model"), m.get("kernel")))
    kb = report["kernels"].get("kernels", {}).get("blas") or {}
    out.append("OpenBLAS: {} (package {}); core in use: {}; OPENBLAS_CORETYPE in the environment: {}{}".format(
        kb.get("config", "?"), m.get("openblas_package"), m.get("openblas_core"), m.get("openblas_coretype_env"),
        "; core with it unset: " + m["openblas_core_unset"] if "openblas_core_unset" in m else ""))
    out.append("software: torch {}; g++ {}; Open MPI {}; gloo {}".format(
        m.get("torch"), m.get("gxx"), m.get("open_mpi"), m.get("gloo_package")))
    out.append("load average at start {} / at end {} (other work on the machine inflates every number)".format(
        m.get("loadavg_start"), m.get("loadavg_end")))

    # Training.
    out.append("")
    out.append("Training: 1 epoch of MNIST, batch 64/rank, lr 0.01 x W, momentum 0.5, then test. "
               "W ranks on this machine.")
    hdr = ["program", "transport", "network", "W", "s/epoch", "whole s", "samples/s", "test acc %",
           "peak RSS MiB/rank", "startup s/rank", "torch/ours epoch", "torch/ours whole", "torch/ours RSS",
           "cores", "par. eff.", "others CPU", "ok reps"]
    rows = []
    for r in report["training"]:
        ratio = r.get("ratio_torch_over_baresgd") or {}
        est = "~" if "log-estimate" in (r.get("train_s_source") or "") else ""
        rows.append([
            r["program"], r.get("label", r["transport"]), r.get("network", "-"), r["world"],
            est + fmt(r.get("train_s")), fmt(r.get("whole_s")), fmt(r.get("samples_per_s"), "{:.0f}"),
            fmt(r.get("accuracy")),
            "/".join(fmt(x, "{:.0f}") for x in r.get("rss_mib", [])) or "-",
            "/".join(fmt(x, "{:.2f}") for x in r.get("startup_s", [])) or "-",
            fmt(ratio.get("train_s"), "{:.2f}x"), fmt(ratio.get("whole_s"), "{:.2f}x"),
            fmt(ratio.get("rss_mib_max"), "{:.1f}x"), r.get("cores_used", "-"),
            fmt(r.get("parallel_efficiency_pct"), "{:.0f}%"), fmt(r.get("other_cpu_pct"), "{:.0f}%"),
            "{}/{}".format(r["reps_ok"], r["reps"])])
    out.append(table(hdr, rows, ["<", "<", "<"] + [">"] * (len(hdr) - 3)))
    out.append("par. eff. = s/epoch of the same program's `single process, 1 thread` row in this run / "
               "(cores x this row's s/epoch); cores = the cores the row runs on, min({} cores, W x threads "
               "per rank); each netns host runs on one of this machine's cores. 100% = the row's cores cost "
               "nothing beyond their share of the one-core epoch.".format(machine_cores(m)))
    out.append("network: none = one process; loopback = W ranks over 127.0.0.1; netns d=0 / d=D ms = one rank on each "
               "namespace host of tests/netns_hosts.sh, joined by tests/tool_tap_link's link delayed 0 / D ms each way. "
               "torch/ours: against PyTorch at the same W and network (its manual allreduce row, DDP over netns).")
    for r in report["training"]:
        if r.get("timeline_overhead_pct") is not None:
            out.append("--timeline recording cost, W={}: {:+.1f}% of the epoch (budget: 5%)".format(
                r["world"], r["timeline_overhead_pct"]))
    if any("log-estimate" in (r.get("train_s_source") or "") for r in report["training"]):
        out.append("~ s/epoch estimated from the timestamps of the log lines (no timing: line in the output)")

    # Kernels.
    for name, label in (("kernels", ""), ("kernels_coretype_unset", " (OPENBLAS_CORETYPE unset)")):
        k = report["kernels"].get(name)
        if not k:
            continue
        out.append("")
        out.append("Kernels{}: one thread, batch 64, median time per call; OpenBLAS core {}; "
                   "others' CPU during it {}".format(label, (k.get("blas") or {}).get("core", "?"),
                                                     fmt(k.get("other_cpu_pct"), "{:.0f}%")))
        rows = []
        for r in k["rows"]:
            rows.append([r["name"], r["pass"], fmt(r["flops"] / 1e6, "{:.2f}"), fmt(r["sec"] * 1e6, "{:.1f}"),
                         fmt(r["gflops"], "{:.1f}"), fmt(r.get("pct_of_sgemm"), "{:.0f}%")])
        out.append(table(["kernel", "pass", "MFLOP", "us/call", "GFLOP/s", "of sgemm"], rows,
                         ["<", "<", ">", ">", ">", ">"]))

    # Comm.
    if report["comm"]:
        out.append("")
        out.append("Allreduce (float sum, in place), ranks on this machine over loopback TCP; "
                   "comm = comm/communicator.h allreduce_sum, raw = gloo::allreduce / MPI_Allreduce")
        out.append("others' CPU during each run: " + ", ".join(
            "{} {}".format(k, fmt(v, "{:.0f}%")) for k, v in sorted(report["comm_other_cpu_pct"].items())))
        rows = []
        for p in report["comm"]:
            c, r = p.get("comm", {}), p.get("raw", {})
            size = human_bytes(p["bytes"]) + (" (grads)" if p["floats"] == 21840 else "")
            rows.append([p["backend"], p["world"], size,
                         fmt(c.get("lat_us"), "{:.1f}"), fmt(r.get("lat_us"), "{:.1f}"),
                         fmt(p.get("layer_over_raw"), "{:.2f}"),
                         fmt(c.get("best_us"), "{:.1f}"), fmt(r.get("best_us"), "{:.1f}"),
                         fmt(c.get("algbw_GBps"), "{:.3f}"), fmt(r.get("algbw_GBps"), "{:.3f}"),
                         fmt(c.get("busbw_GBps"), "{:.3f}")])
        out.append(table(["backend", "W", "size", "comm us", "raw us", "comm/raw", "comm best", "raw best",
                          "comm GB/s", "raw GB/s", "comm busbw"], rows, ["<", ">"] + [">"] * 9))

    if report.get("comm_algorithms"):
        out.append("")
        out.append("Allreduce algorithms (./train --allreduce ALG) on the gradient's 21,840 floats, "
                   "comm/allreduce.h allreduce_sum")
        rows = [[r["backend"], int(r["world"]), r["algorithm"], fmt(r.get("lat_us"), "{:.1f}"),
                 fmt(r.get("best_us"), "{:.1f}")] for r in report["comm_algorithms"]]
        out.append(table(["backend", "W", "algorithm", "us", "best us"], rows, ["<", ">", "<", ">", ">"]))

    if report["problems"]:
        out.append("")
        out.append("Problems and notes:")
        for p in report["problems"]:
            out.append("  " + p)
    return "\n".join(out)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--noise":
        # For run_bench.sh: others' CPU (% of the machine) during one logged command; -1 unknown.
        pct = others_cpu(read_log(sys.argv[2]))[1]
        print(-1 if pct is None else int(round(pct)))
        return 0
    ap = argparse.ArgumentParser(description="bench table + JSON from one run directory")
    ap.add_argument("run_dir")
    ap.add_argument("--json", help="also write the JSON here (e.g. bench/results/latest.json)")
    ap.add_argument("--text", help="also write the table here")
    a = ap.parse_args()

    machine = {}
    mpath = os.path.join(a.run_dir, "machine.txt")
    if os.path.exists(mpath):
        with open(mpath) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("=")
                if k:
                    machine[k] = v

    report = {"run_dir": os.path.relpath(a.run_dir), "machine": machine,
              "training": training_rows(a.run_dir, machine), "kernels": kernel_rows(a.run_dir)}
    report["comm"], comm_failures, report["comm_other_cpu_pct"] = comm_rows(a.run_dir)
    report["comm_algorithms"], algorithm_failures = comm_algorithm_rows(a.run_dir)
    comm_failures += algorithm_failures
    problems = []
    for row in report["training"]:
        for run in row["runs"]:
            if not run["ok"]:
                problems.append("{} failed (exit {}){}".format(run["log"], run["rc"],
                                                                ": " + run["problem"] if "problem" in run else ""))
    for f in comm_failures:
        problems.append("{} failed (exit {}): {}".format(f["log"], f["rc"], " | ".join(f["tail"])))
    for name in ("kernel_bench", "comm_bench"):
        if os.path.exists(os.path.join(a.run_dir, "build-{}.log".format(name))) and \
                os.path.getsize(os.path.join(a.run_dir, "build-{}.log".format(name))) and \
                not glob.glob(os.path.join(a.run_dir, "kernels.log" if name == "kernel_bench" else "comm/*.log")):
            problems.append("bench/{}.cc did not build (see build-{}.log); its section is missing".format(name, name))
    for name, k in report["kernels"].items():
        if k["rc"] != 0:
            problems.append("{}.log failed (exit {})".format(name, k["rc"]))
    noisy = sorted(os.path.relpath(p) for p in glob.glob(os.path.join(a.run_dir, "**", "*.noisy*"), recursive=True))
    report["remeasured_noisy_logs"] = noisy
    if noisy:
        problems.append("{} measurement(s) repeated because other processes used the CPU meanwhile "
                        "(kept as *.noisy*): {}".format(len(noisy), ", ".join(os.path.basename(n) for n in noisy)))
    report["problems"] = problems

    text = render(report)
    print(text)
    for path in (os.path.join(a.run_dir, "report.json"), a.json):
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "w") as f:
                json.dump(report, f, indent=1, sort_keys=False)
                f.write("\n")
    if a.text:
        with open(a.text, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
