#!/usr/bin/env bash
# runtime_packages: prints, one a line and sorted, the Debian packages the given programs need at
# run time on this machine: the owner (dpkg -S) of each library they link directly (readelf -d
# NEEDED, resolved by ldd) and of each program baresgd starts (ssh for -H hosts, mpirun for --mpi).
# /bin/sh and env come from Essential packages every Debian has and are not listed; srun comes
# with the site's Slurm. .ci/install-deps's runtime set must be exactly this list
# (InstallDeps.RuntimeSetIsWhatTheProgramsLinkAndStart).
# Usage: tests/runtime_packages.sh BINARY... ; exit 1 naming the library or program no package owns.
set -euo pipefail
[ $# -gt 0 ] || { echo "runtime_packages: no binaries given" >&2; exit 1; }
export PATH="$PATH:/usr/sbin:/sbin"

# The package owning a file: dpkg -S on the path ldd gives, on its real path, and on both with
# and without the /usr prefix (Debian 12 merges /lib into /usr/lib, dpkg knows one spelling).
owner() {
  local p=$1 real c
  real=$(realpath "$p")
  for c in "$real" "$p" "${real#/usr}" "/usr$p" "${p#/usr}"; do
    dpkg-query -S "$c" 2>/dev/null | grep -v '^diversion by' | head -1 | cut -d: -f1 && return 0
  done
  return 1
}

{
  for bin in "$@"; do
    for lib in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      path=$(ldd "$bin" | awk -v l="$lib" '$1 == l && $3 ~ /^\// {print $3; exit}')
      [ -n "$path" ] || { echo "runtime_packages: $bin: ldd does not resolve $lib" >&2; exit 1; }
      o=$(owner "$path") && [ -n "$o" ] || { echo "runtime_packages: no package owns $path ($lib of $bin)" >&2; exit 1; }
      echo "$o"
    done
  done
  for prog in ssh mpirun; do
    path=$(command -v "$prog") || { echo "runtime_packages: $prog is not on PATH" >&2; exit 1; }
    o=$(owner "$path") && [ -n "$o" ] || { echo "runtime_packages: no package owns $path ($prog)" >&2; exit 1; }
    echo "$o"
  done
} | sed 's/:amd64$//' | sort -u
