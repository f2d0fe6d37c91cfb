#!/bin/sh
# compile.sh [outdir]: compiles every kernel (*.comp) of this directory to
# SPIR-V for Vulkan 1.2 (<name>.spv in outdir, default this directory).
# The output depends only on the sources and on glslangValidator's version
# (its version is stamped in each module's header), so CI pins the version.
set -eu
cd "$(dirname "$0")"
out=${1:-.}
mkdir -p "$out"
for src in *.comp; do
	glslangValidator --quiet -V --target-env vulkan1.2 -o "$out/${src%.comp}.spv" "$src"
done
