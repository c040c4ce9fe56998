#!/usr/bin/env bash
# minimal_root: prints the path of a cached `debootstrap --variant=minbase bookworm` root that holds
# only the given runtime packages (and what they depend on), building it first when the cache has
# none. The cache is /var/tmp/baresgd-minroot-<hash of suite, packages and mirror>/; a root is
# moved there only once complete, so an interrupted build leaves no half root behind.
# Usage: tests/minimal_root.sh PKG... ; exit 3 (with the reason on stderr) when debootstrap is
# missing or cannot reach the package mirror, 1 on any other failure.
set -euo pipefail
[ $# -gt 0 ] || { echo "minimal_root: no packages given" >&2; exit 1; }
# BARESGD_DEBOOTSTRAP: the debootstrap to run (default: debootstrap on PATH or /usr/sbin).
export PATH="$PATH:/usr/sbin:/sbin"
DEBOOTSTRAP=${BARESGD_DEBOOTSTRAP:-debootstrap}
command -v "$DEBOOTSTRAP" >/dev/null 2>&1 ||
  { echo "minimal_root: $DEBOOTSTRAP is not installed (apt-get install debootstrap)" >&2; exit 3; }

# The mirror the machine's own apt uses (deb822 .sources first, then the one-line format).
mirror=""
for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list.d/*.sources; do
  [ -r "$f" ] || continue
  mirror=$(awk '/^URIs:/{for(i=2;i<=NF;i++) if ($i !~ /security/) {print $i; exit}}' "$f")
  [ -n "$mirror" ] && break
done
if [ -z "$mirror" ] && [ -r /etc/apt/sources.list ]; then
  mirror=$(awk '$1=="deb" && $0 !~ /security/ {for(i=2;i<=NF;i++) if ($i ~ /^[a-z]+:/) {print $i; exit}}' /etc/apt/sources.list)
fi
[ -n "$mirror" ] || { echo "minimal_root: no Debian mirror in /etc/apt/sources.list{,.d/*.sources}" >&2; exit 3; }

pkgs=$(printf '%s\n' "$@" | sort -u | paste -sd, -)
key=$(printf 'bookworm minbase %s %s' "$pkgs" "$mirror" | sha256sum | cut -c1-16)
root=/var/tmp/baresgd-minroot-$key
if [ -f "$root/.baresgd-complete" ]; then echo "$root"; exit 0; fi

work=$(mktemp -d /var/tmp/baresgd-minroot-build.XXXXXX)
log=$work.log
trap 'rm -rf "$work"' EXIT
if ! "$DEBOOTSTRAP" --variant=minbase --include="$pkgs" bookworm "$work" "$mirror" >"$log" 2>&1; then
  if grep -qiE "Failed getting release file|Couldn't download|Could not resolve|Temporary failure|Connection refused|Network is unreachable|Unable to fetch" "$log"; then
    echo "minimal_root: debootstrap cannot reach the package mirror $mirror: $(grep -iE 'Failed|download|resolve|unreachable' "$log" | head -1)" >&2
    exit 3
  fi
  echo "minimal_root: debootstrap failed (log: $log): $(tail -1 "$log")" >&2
  exit 1
fi
rm -f "$log"
apt_lists="$work/var/lib/apt/lists"
[ -d "$apt_lists" ] && find "$apt_lists" -maxdepth 1 -type f ! -name lock -delete
rm -rf "$work/var/cache/apt/archives/"*.deb
printf '%s\n' "$pkgs" >"$work/.baresgd-complete"
rm -rf "$root"
mv "$work" "$root"
trap - EXIT
echo "$root"
