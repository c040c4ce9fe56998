#!/usr/bin/env python3
"""split_tests.py LIST_JSON SANITIZED_TESTS OUTDIR: splits the suite's tests between the optimized
and the sanitized pass of `make check`, each test once.

LIST_JSON is `unit_tests --gtest_list_tests --gtest_output=json:LIST_JSON` of the optimized binary
(every test with the file it is defined in); SANITIZED_TESTS is .ci/sanitized-tests. Writes to
OUTDIR: optimized.filter and sanitized.filter (gtest filters naming every test of each pass),
sanitized.files (the test files the sanitized binary is built from) and counts (total optimized
sanitized). Exits 1, naming the entry, when a listed file or test does not exist."""
import json
import sys


def main(list_json, sanitized_tests, outdir):
    tests = []  # (name, file)
    for suite in json.load(open(list_json))["testsuites"]:
        for t in suite["testsuite"]:
            name = suite["name"] + "." + t["name"]
            if "DISABLED_" in name:
                continue
            tests.append((name, t["file"]))
    files, optimized = [], {}
    for n, line in enumerate(open(sanitized_tests), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("optimized "):
            parts = line.split(None, 2)
            if len(parts) < 3:
                sys.exit(f"{sanitized_tests}:{n}: 'optimized Suite.Test' needs a reason after the name")
            optimized[parts[1]] = n
        else:
            files.append((line, n))
    known_files = {f for _, f in tests}
    for f, n in files:
        if not any(k.endswith(f) for k in known_files):
            sys.exit(f"{sanitized_tests}:{n}: {f} defines no test in the suite")
    names = {name for name, _ in tests}
    for name, n in optimized.items():
        if name not in names:
            sys.exit(f"{sanitized_tests}:{n}: no test named {name}")
    san_files = [f for f, _ in files]
    sanitized = [name for name, f in tests if any(f.endswith(s) for s in san_files) and name not in optimized]
    chosen = set(sanitized)
    opt = [name for name, _ in tests if name not in chosen]
    open(f"{outdir}/optimized.filter", "w").write(":".join(opt) + "\n")
    open(f"{outdir}/sanitized.filter", "w").write(":".join(sanitized) + "\n")
    open(f"{outdir}/sanitized.files", "w").write(" ".join(san_files) + "\n")
    open(f"{outdir}/counts", "w").write(f"{len(tests)} {len(opt)} {len(sanitized)}\n")
    print(f"split: {len(tests)} tests: {len(opt)} optimized, {len(sanitized)} sanitized "
          f"({len(san_files)} files of .ci/sanitized-tests, {len(optimized)} of their tests kept optimized)")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: split_tests.py LIST_JSON SANITIZED_TESTS OUTDIR")
    main(*sys.argv[1:])
