#!/usr/bin/env bash
# check-shaders.sh: compiles the GLSL kernels of internal/shaders and
# collections/internal/shaders again into a
# temporary directory and fails if any committed .spv differs (or is
# missing, or has no source). Needs glslangValidator; the SPIR-V header
# records its version, so CI must use the version the .spv files were
# made with (Debian 12 glslang-tools 12.0.0: "Glslang Version: 11:12.0.0").
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v glslangValidator >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq glslang-tools >/dev/null
fi
glslangValidator --version | head -1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Two directories of kernels: vmem's (internal/shaders) and the
# containers' (collections/internal/shaders, with internal/shaders' headers).
status=0
total=0
for dir in internal/shaders collections/internal/shaders; do
  out="$tmp/$dir"
  sh "$dir/compile.sh" "$out"
  for f in "$out"/*.spv; do
    name=$(basename "$f")
    if ! cmp -s "$f" "$dir/$name"; then
      echo "$dir/$name differs from its source: run go generate ./$dir" >&2
      status=1
    fi
    total=$((total + 1))
  done
  for f in "$dir"/*.spv; do
    name=$(basename "$f")
    if [ ! -e "$out/$name" ]; then
      echo "$dir/$name has no source (.comp)" >&2
      status=1
    fi
  done
done
if [ "$status" = 0 ]; then
  echo "shaders: $total kernels match their sources"
fi
exit $status
