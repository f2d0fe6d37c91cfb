#!/usr/bin/env bash
# check-shaders.sh: compiles the GLSL kernels of internal/shaders again into a
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
sh internal/shaders/compile.sh "$tmp"

status=0
for f in "$tmp"/*.spv; do
  name=$(basename "$f")
  if ! cmp -s "$f" "internal/shaders/$name"; then
    echo "internal/shaders/$name differs from its source: run go generate ./internal/shaders" >&2
    status=1
  fi
done
for f in internal/shaders/*.spv; do
  name=$(basename "$f")
  if [ ! -e "$tmp/$name" ]; then
    echo "internal/shaders/$name has no source (.comp)" >&2
    status=1
  fi
done
if [ "$status" = 0 ]; then
  echo "shaders: $(ls "$tmp" | wc -l) kernels match their sources"
fi
exit $status
